"""A local HTTP server that speaks the OpenAI-compatible ``/v1`` API, for tests only.

The request and response shapes of ``/v1/chat/completions`` (Server-Sent Events when streamed,
one JSON object when not), ``/v1/embeddings`` and ``/v1/models`` as vLLM and llama.cpp's
``llama-server`` serve them. Replies are scripted with the Ollama test server's ``Reply`` (the
same fields mean the same failures); embeddings are its hashed trigram vectors, sent scaled (not
unit length) and in reverse order with their ``index``, as a server may. Every request is
recorded with its headers. It never pretends to be a model: an unscripted chat gets HTTP 500.
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Callable

from .ollama_api_server import Reply, _QuietServer, embed_text

__all__ = ["OpenAIAPIServer", "Reply"]


class OpenAIAPIServer:
    """``with OpenAIAPIServer() as srv: srv.url …``"""

    def __init__(self, models=("bge-m3", "qwen3.8:27b"), dim: int = 256, api_key: str = "",
                 any_model: bool = False):
        self.models = list(models)
        self.dim = dim
        self.api_key = api_key  # "": no key needed; else requests without "Bearer <key>" get 401
        self.any_model = any_model  # llama-server: its one model answers to any name
        self.loading = False  # answer 503 "Loading model", as llama-server does while loading
        self.replies: deque[Reply] = deque()
        self.default_reply: Reply | None = None
        self.reply_for: Callable[[dict], Reply | None] | None = None
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "OpenAIAPIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def script(self, *replies: Reply | str) -> None:
        for r in replies:
            self.replies.append(Reply(content=r) if isinstance(r, str) else r)

    def requests_to(self, path: str) -> list[dict]:
        return [r["json"] for r in self.requests if r["path"] == path]

    def has_model(self, name: str) -> bool:
        return self.any_model or name in self.models

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send_json(self, status: int, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
                self._send_json(status, {"error": {"message": message, "type": kind, "code": status}})

            def _refused(self) -> bool:
                if server.loading:
                    self._error(503, "Loading model", "unavailable_error")
                    return True
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._error(401, "Invalid API Key", "authentication_error")
                    return True
                return False

            def do_GET(self):
                with server._lock:
                    server.requests.append({"path": self.path, "json": None, "headers": dict(self.headers)})
                if self._refused():
                    return
                if self.path == "/v1/models":
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in server.models]
                    return self._send_json(200, {"object": "list", "data": data})
                if self.path == "/health":
                    return self._send_json(200, {"status": "ok"})
                self._error(404, "not found")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._error(400, "invalid JSON")
                with server._lock:
                    server.requests.append({"path": self.path, "json": body, "headers": dict(self.headers)})
                if self._refused():
                    return
                if self.path == "/v1/embeddings":
                    return self._embed(body)
                if self.path == "/v1/chat/completions":
                    return self._chat(body)
                self._error(404, "not found")

            def _embed(self, body: dict):
                model = body.get("model", "")
                if not server.has_model(model):
                    return self._error(404, f"The model `{model}` does not exist.", "NotFoundError")
                inputs = body.get("input", "")
                inputs = [inputs] if isinstance(inputs, str) else list(inputs)
                rows = [{"object": "embedding", "index": i, "embedding": [3.0 * x for x in embed_text(t, server.dim)]}
                        for i, t in enumerate(inputs)]
                self._send_json(200, {"object": "list", "model": model, "data": rows[::-1],
                                      "usage": {"prompt_tokens": 1, "total_tokens": 1}})

            def _chat(self, body: dict):
                model = body.get("model", "")
                if not server.has_model(model):
                    return self._error(404, f"The model `{model}` does not exist.", "NotFoundError")
                reply = server.reply_for(body) if server.reply_for else None
                with server._lock:
                    if reply is None:
                        reply = server.replies.popleft() if server.replies else server.default_reply
                if reply is None:
                    return self._error(500, "test server: no reply scripted", "server_error")
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    return self._error(reply.status, reply.error or "internal error", "server_error")
                base = {"id": "chatcmpl-test", "created": 0, "model": model}
                if not body.get("stream"):
                    return self._send_json(200, {
                        **base, "object": "chat.completion",
                        "choices": [{"index": 0, "finish_reason": reply.done_reason,
                                     "message": {"role": "assistant", "content": reply.content}}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                    })
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                words = reply.content.split(" ")
                pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                half = len(pieces) // 2
                chunk = {**base, "object": "chat.completion.chunk"}
                try:
                    self._event({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]})
                    for i, piece in enumerate(pieces):
                        if reply.error_line is not None and i == half:
                            self._event({"error": {"message": reply.error_line, "type": "server_error"}})
                            return self._end()
                        if reply.garbage and i == half:
                            self._chunk("data: <html>502 Bad Gateway</html>\n\n")
                            return self._end()
                        self._event({**chunk, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                    if reply.cut:
                        self.close_connection = True
                        return
                    self._event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.done_reason}]})
                    self._chunk("data: [DONE]\n\n")
                    self._end()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _event(self, data: dict) -> None:
                self._chunk(f"data: {json.dumps(data)}\n\n")

            def _chunk(self, text: str) -> None:
                raw = text.encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()

            def _end(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler
