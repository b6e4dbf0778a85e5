"""Client for OpenAI-compatible servers: ``/v1/chat/completions``, ``/v1/embeddings``, ``/v1/models``.

vLLM, llama.cpp's ``llama-server``, LM Studio, LocalAI and TGI speak this API. API facts (the
OpenAI API reference as these servers implement it): a streamed completion is Server-Sent Events,
``data: {json}`` lines with ``choices[0].delta.content`` and a final ``finish_reason``, then
``data: [DONE]``; an error in the middle of a stream comes as a ``data:`` line with ``error``;
error bodies are ``{"error": {"message": …}}`` (OpenAI, llama-server, LocalAI), ``{"message": …}``
(vLLM) or ``{"error": "…"}`` (TGI); an unknown model is HTTP 404 (vLLM, OpenAI; llama-server serves
its one model under any name); a server still loading its model answers 503. The context size is
the server's (``--max-model-len``, ``-c``): it cannot be set per request, unlike Ollama's
``num_ctx``. Embeddings are L2-normalised here, as Ollama's are: not every server does it.

Every failure is one of ``OllamaError``'s subclasses with the same German reasons as
``OllamaClient``, so ``ask`` behaves the same whichever server answers.
"""
from __future__ import annotations

import json
import math
import re
import time

import requests

from .errors import ChatResult, OllamaError, OllamaModelMissing, OllamaTimeout, OllamaUnavailable
from .base import ModelClient

# A reasoning model served without a reasoning parser puts its thinking into the content.
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.S)


class OpenAIClient(ModelClient):
    api = "openai"

    def __init__(self, settings, session: requests.Session | None = None):
        super().__init__(settings, session)
        # Accept the server URL with or without its /v1 (vLLM's docs give ``…:8000/v1``).
        if self.base_url.endswith("/v1"):
            self.base_url = self.base_url[: -len("/v1")]
        self.headers = {"Authorization": f"Bearer {settings.llm_api_key}"} if settings.llm_api_key else {}

    # -- embeddings -------------------------------------------------------------------
    def embed(self, texts: list[str], model: str | None = None) -> list[list[float]]:
        """Embed texts in batches of ``embed_batch_size``; one request per batch."""
        model = model or self.settings.embed_model
        try:
            return self._embed(texts, model)
        except OllamaError as exc:
            exc.reason = exc.embed_reason  # "Embedding-Modell …", not "Sprachmodell …"
            raise

    def _embed(self, texts: list[str], model: str) -> list[list[float]]:
        vectors: list[list[float]] = []
        size = max(1, self.settings.embed_batch_size)
        for start in range(0, len(texts), size):
            batch = texts[start : start + size]
            data = self._post_json("/v1/embeddings", {"model": model, "input": batch},
                                   timeout=self.settings.embed_timeout, model=model)
            rows = data.get("data")
            if not isinstance(rows, list) or len(rows) != len(batch):
                raise OllamaError(
                    f"/v1/embeddings lieferte {len(rows) if isinstance(rows, list) else 'keine'} "
                    f"Vektoren für {len(batch)} Texte"
                )
            try:  # "index" gives the order; a server may send them in any
                ordered = sorted(rows, key=lambda row: row.get("index", 0))
                vectors.extend(_unit([float(x) for x in row["embedding"]]) for row in ordered)
            except (KeyError, TypeError, ValueError, AttributeError):
                raise OllamaError("/v1/embeddings: Vektor fehlt oder ist keine Zahlenliste") from None
        return vectors

    # -- chat -------------------------------------------------------------------------
    def chat(
        self,
        messages: list[dict],
        *,
        model: str | None = None,
        num_predict: int | None = None,
        format: dict | str | None = None,
        stream: bool = True,
    ) -> ChatResult:
        """One chat completion; ``num_predict`` is sent as ``max_tokens``."""
        model = model or self.settings.chat_model
        payload = {
            "model": model,
            "messages": messages,
            "stream": stream,
            "temperature": self.settings.temperature,
            "max_tokens": num_predict or self.settings.num_predict,
        }
        if self.settings.seed >= 0:
            payload["seed"] = self.settings.seed
        if isinstance(format, dict):
            payload["response_format"] = {"type": "json_schema", "json_schema": {"name": "antwort", "schema": format}}
        elif format == "json":
            payload["response_format"] = {"type": "json_object"}
        if not stream:
            data = self._post_json("/v1/chat/completions", payload, timeout=self.settings.chat_timeout, model=model)
            choice = _first_choice(data)
            return _result((choice.get("message") or {}).get("content") or "", choice.get("finish_reason"), data, model)
        return self._chat_stream(payload, model)

    def _chat_stream(self, payload: dict, model: str) -> ChatResult:
        self._check_url()
        started = time.monotonic()
        timeout = self.settings.chat_timeout
        try:
            with self.session.post(
                self.base_url + "/v1/chat/completions",
                json=payload,
                headers=self.headers,
                stream=True,
                timeout=(self.settings.connect_timeout, timeout),
            ) as resp:
                self._raise_for_status(resp, model)
                parts: list[str] = []
                finish = None
                served = ""
                for line in resp.iter_lines():
                    if time.monotonic() - started > timeout:
                        raise OllamaTimeout(f"keine vollständige Antwort nach {timeout:.0f} s")
                    if not line or line.startswith(b":"):  # keep-alive comments
                        continue
                    if not line.startswith(b"data:"):
                        continue  # "event:", "id:", "retry:" fields carry nothing we need
                    body = line[len(b"data:"):].strip()
                    if body == b"[DONE]":
                        if finish is None:
                            break
                        return _result("".join(parts), finish, {"model": served}, model)
                    try:
                        data = json.loads(body)
                    except ValueError:
                        raise OllamaError("Ungültige Antwortzeile vom Modell-Server (kein JSON)") from None
                    if not isinstance(data, dict):
                        raise OllamaError("Ungültige Antwortzeile vom Modell-Server (kein JSON-Objekt)")
                    if "error" in data:
                        raise OllamaError(f"Der Modell-Server meldet mitten in der Antwort: {_error_text(data)}")
                    served = data.get("model") or served
                    for choice in data.get("choices") or []:
                        parts.append((choice.get("delta") or {}).get("content") or "")
                        finish = choice.get("finish_reason") or finish
                if finish is not None:  # a server that ends the stream without [DONE]
                    return _result("".join(parts), finish, {"model": served}, model)
        except requests.exceptions.Timeout as exc:
            raise OllamaTimeout(f"keine Antwort nach {timeout:.0f} s") from exc
        except requests.exceptions.RequestException as exc:  # refused, cut, or a URL requests cannot use
            raise OllamaUnavailable(f"Verbindung zu {self.base_url} fehlgeschlagen oder abgebrochen") from exc
        raise OllamaError("Antwort des Sprachmodells brach ab, bevor sie fertig war")

    # -- models -----------------------------------------------------------------------
    def list_models(self) -> list[str]:
        """Ids of the models the server offers (``/v1/models``)."""
        self._check_url()
        try:
            resp = self.session.get(self.base_url + "/v1/models", headers=self.headers,
                                    timeout=(self.settings.connect_timeout, 10))
        except requests.exceptions.RequestException as exc:
            raise OllamaUnavailable(f"{self.base_url} nicht erreichbar") from exc
        self._raise_for_status(resp, "")
        try:
            rows = resp.json().get("data") or []
            return sorted(row["id"] for row in rows if row.get("id"))
        except (ValueError, AttributeError, TypeError, KeyError):
            raise OllamaError("/v1/models lieferte keine Modellliste") from None

    # -- plumbing ---------------------------------------------------------------------
    def _post_json(self, path: str, payload: dict, *, timeout: float, model: str) -> dict:
        self._check_url()
        try:
            resp = self.session.post(self.base_url + path, json=payload, headers=self.headers,
                                     timeout=(self.settings.connect_timeout, timeout))
        except requests.exceptions.Timeout as exc:
            raise OllamaTimeout(f"{path}: keine Antwort nach {timeout:.0f} s") from exc
        except requests.exceptions.RequestException as exc:
            raise OllamaUnavailable(f"{self.base_url} nicht erreichbar") from exc
        self._raise_for_status(resp, model)
        try:
            data = resp.json()
        except ValueError:
            raise OllamaError(f"{path}: Antwort ist kein JSON") from None
        if not isinstance(data, dict):
            raise OllamaError(f"{path}: Antwort ist kein JSON-Objekt")
        if "error" in data:
            raise OllamaError(f"{path}: {_error_text(data)}")
        return data

    @staticmethod
    def _raise_for_status(resp: requests.Response, model: str) -> None:
        if resp.status_code == 200:
            return
        try:
            detail = _error_text(resp.json())
        except ValueError:
            detail = resp.text[:200]
        status = resp.status_code
        if status == 404:
            raise OllamaModelMissing(f"Modell '{model}' nicht gefunden ({detail or 'HTTP 404'})")
        if status in (401, 403):
            raise OllamaError(f"Der Modell-Server verweigert den Zugriff (HTTP {status}): API-Schlüssel prüfen")
        if status == 503:  # loading its model, or overloaded
            raise OllamaUnavailable(f"Der Modell-Server ist noch nicht bereit (HTTP 503): {detail}")
        raise OllamaError(f"Der Modell-Server antwortete mit HTTP {status}: {detail}")


def _error_text(body) -> str:
    """The message of any of the error shapes these servers send."""
    if not isinstance(body, dict):
        return str(body)[:200]
    error = body.get("error", body)
    if isinstance(error, dict):
        return str(error.get("message") or error.get("detail") or error)[:300]
    return str(error or body.get("message") or body.get("detail") or "")[:300]


def _first_choice(data: dict) -> dict:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise OllamaError("/v1/chat/completions: Antwort ohne 'choices'")
    return choices[0]


def _result(content: str, finish_reason, data: dict, model: str) -> ChatResult:
    return ChatResult(
        content=_THINK.sub("", content),
        done_reason=finish_reason or "stop",
        model=data.get("model") or model,
    )


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector
