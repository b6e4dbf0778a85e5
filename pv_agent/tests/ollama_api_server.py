"""A local HTTP server that speaks Ollama's real API, for tests only.

It implements the request and response shapes of ``/api/embed``, ``/api/chat`` (streamed
NDJSON and non-streamed) and ``/api/tags`` from ollama/ollama ``docs/api.md``. Embeddings
are deterministic hashed character-trigram vectors (so similar German words land near
each other); chat replies are scripted by the test. Every request is recorded, so a test
can assert what the product sent — e.g. that a regeneration carries a sharper instruction.
It never pretends to be a model: a test that does not script a reply gets HTTP 500.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
import unicodedata
from collections import deque
from dataclasses import dataclass
from typing import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


@dataclass
class Reply:
    """One scripted ``/api/chat`` reply."""

    content: str = ""
    status: int = 200
    done_reason: str = "stop"
    error_line: str | None = None  # sent as an {"error": …} line after part of the content
    cut: bool = False  # close the stream before the final ``done`` line
    delay: float = 0.0  # seconds before the first byte
    garbage: bool = False  # send a non-JSON line
    error: str = ""  # body {"error": …} for non-200 statuses


def embed_text(text: str, dim: int) -> list[float]:
    """Deterministic unit vector: signed hashed character trigrams of the folded words."""
    vec = np.zeros(dim, dtype=np.float64)
    norm = unicodedata.normalize("NFKD", text.lower().replace("ß", "ss"))
    norm = "".join(c for c in norm if not unicodedata.combining(c))
    for word in "".join(c if c.isalnum() else " " for c in norm).split():
        padded = f"#{word}#"
        for i in range(max(1, len(padded) - 2)):
            digest = hashlib.blake2b(padded[i : i + 3].encode(), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vec[h % dim] += 1.0 if (h >> 40) & 1 else -1.0
    n = np.linalg.norm(vec)
    if n == 0:
        vec[0] = 1.0
        n = 1.0
    return (vec / n).astype(np.float32).tolist()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A client that hangs up (timeout tests, a cut stream) is expected here, not an error."""
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class OllamaAPIServer:
    """``with OllamaAPIServer() as srv: srv.url …``"""

    def __init__(self, models=("bge-m3:latest", "qwen3.8:27b"), dim: int = 256):
        self.models = list(models)
        self.dim = dim
        self.replies: deque[Reply] = deque()
        self.default_reply: Reply | None = None  # answers every chat once the scripted queue is empty
        # a reply chosen from the request (e.g. by the question in its last message); None: the queue
        self.reply_for: Callable[[dict], Reply | None] | None = None
        self.requests: list[dict] = []
        self.embed_status = 200  # set to 500 to break /api/embed
        self.embed_delay = 0.0
        self.embed_dim_override: int | None = None
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # -- lifecycle --------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "OllamaAPIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- scripting --------------------------------------------------------------------
    def script(self, *replies: Reply | str) -> None:
        for r in replies:
            self.replies.append(Reply(content=r) if isinstance(r, str) else r)

    def requests_to(self, path: str) -> list[dict]:
        return [r["json"] for r in self.requests if r["path"] == path]

    def has_model(self, name: str) -> bool:
        return name in self.models or f"{name}:latest" in self.models

    # -- HTTP -------------------------------------------------------------------------
    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def _send_json(self, status: int, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):
                if self.path == "/api/tags":
                    models = [{"name": m, "model": m, "size": 0, "digest": "0" * 12} for m in server.models]
                    return self._send_json(200, {"models": models})
                if self.path in ("/", "/api/version"):
                    return self._send_json(200, {"version": "0.0.0-test"})
                self._send_json(404, {"error": "not found"})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._send_json(400, {"error": "invalid JSON"})
                with server._lock:
                    server.requests.append({"path": self.path, "json": body})
                if self.path == "/api/embed":
                    return self._embed(body)
                if self.path == "/api/chat":
                    return self._chat(body)
                self._send_json(404, {"error": "not found"})

            def _embed(self, body: dict):
                model = body.get("model", "")
                if not server.has_model(model):
                    return self._send_json(404, {"error": f"model '{model}' not found"})
                if server.embed_delay:
                    time.sleep(server.embed_delay)
                if server.embed_status != 200:
                    return self._send_json(server.embed_status, {"error": "embedding failed"})
                inputs = body.get("input", "")
                inputs = [inputs] if isinstance(inputs, str) else list(inputs)
                dim = server.embed_dim_override or server.dim
                self._send_json(
                    200,
                    {
                        "model": model,
                        "embeddings": [embed_text(t, dim) for t in inputs],
                        "total_duration": 1000,
                        "load_duration": 100,
                        "prompt_eval_count": sum(len(t.split()) for t in inputs),
                    },
                )

            def _chat(self, body: dict):
                model = body.get("model", "")
                if not server.has_model(model):
                    return self._send_json(404, {"error": f"model '{model}' not found"})
                reply = server.reply_for(body) if server.reply_for else None
                with server._lock:
                    if reply is None:
                        reply = server.replies.popleft() if server.replies else server.default_reply
                if reply is None:
                    return self._send_json(500, {"error": "test server: no reply scripted"})
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    return self._send_json(reply.status, {"error": reply.error or "internal error"})
                final = {
                    "model": model,
                    "created_at": "2026-11-30T00:00:00Z",
                    "done": True,
                    "done_reason": reply.done_reason,
                    "total_duration": 5_000_000,
                    "load_duration": 1_000_000,
                    "prompt_eval_count": 100,
                    "prompt_eval_duration": 1_000_000,
                    "eval_count": max(1, len(reply.content.split())),
                    "eval_duration": 2_000_000,
                }
                if not body.get("stream", True):
                    final["message"] = {"role": "assistant", "content": reply.content}
                    return self._send_json(200, final)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                words = reply.content.split(" ")
                pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
                half = len(pieces) // 2
                try:
                    for i, piece in enumerate(pieces):
                        if reply.error_line is not None and i == half:
                            self._chunk(json.dumps({"error": reply.error_line}) + "\n")
                            return self._end()
                        if reply.garbage and i == half:
                            self._chunk("<html>502 Bad Gateway</html>\n")
                            return self._end()
                        msg = {"model": model, "created_at": "2026-11-30T00:00:00Z",
                               "message": {"role": "assistant", "content": piece}, "done": False}
                        self._chunk(json.dumps(msg) + "\n")
                    if reply.cut:
                        self.close_connection = True
                        return  # no terminating chunk: the stream is cut
                    final["message"] = {"role": "assistant", "content": ""}
                    self._chunk(json.dumps(final) + "\n")
                    self._end()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _chunk(self, text: str) -> None:
                raw = text.encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()

            def _end(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler
