"""Client for the two Ollama endpoints the engine needs: ``/api/embed`` and ``/api/chat``.

API facts (ollama/ollama docs/api.md, design.md §10): embeddings come back L2-normalised;
``options.num_ctx`` is always sent because its default differs by version; a streamed chat is
NDJSON whose last line has ``done: true`` and ``done_reason``; an error in the middle of a
stream arrives as an ``{"error": …}`` line with HTTP 200; an unknown model is HTTP 404.
Every failure becomes an ``OllamaError`` subclass (errors.py) with a German message a
clerk can read.
"""
from __future__ import annotations

import json
import time

import requests

from ..config import Settings
from .base import ModelClient
from .errors import ChatResult, OllamaError, OllamaModelMissing, OllamaTimeout, OllamaUnavailable


class OllamaClient(ModelClient):
    """Ollama's own API (``/api/chat``, ``/api/embed``, ``/api/tags``)."""

    api = "ollama"

    def __init__(self, settings: Settings, session: requests.Session | None = None):
        super().__init__(settings, session)

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
            data = self._post_json(
                "/api/embed",
                {"model": model, "input": batch, "truncate": True},
                timeout=self.settings.embed_timeout,
                model=model,
            )
            got = data.get("embeddings")
            if not isinstance(got, list) or len(got) != len(batch):
                raise OllamaError(
                    f"/api/embed lieferte {len(got) if isinstance(got, list) else 'keine'} "
                    f"Vektoren für {len(batch)} Texte"
                )
            vectors.extend(got)
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
        """One chat completion with thinking off and ``num_ctx`` always set."""
        model = model or self.settings.chat_model
        payload = {
            "model": model,
            "messages": messages,
            "stream": stream,
            "think": False,
            "options": {
                "temperature": self.settings.temperature,
                "num_ctx": self.settings.num_ctx,
                "num_predict": num_predict or self.settings.num_predict,
            },
        }
        if self.settings.seed >= 0:  # a fixed seed: the same question gets the same draft
            payload["options"]["seed"] = self.settings.seed
        if format is not None:
            payload["format"] = format
        if not stream:
            data = self._post_json("/api/chat", payload, timeout=self.settings.chat_timeout, model=model)
            return _chat_result(data, data.get("message", {}).get("content", ""))
        return self._chat_stream(payload, model)

    def _chat_stream(self, payload: dict, model: str) -> ChatResult:
        self._check_url()
        started = time.monotonic()
        try:
            with self.session.post(
                self.base_url + "/api/chat",
                json=payload,
                stream=True,
                timeout=(self.settings.connect_timeout, self.settings.chat_timeout),
            ) as resp:
                self._raise_for_status(resp, model)
                parts: list[str] = []
                for line in resp.iter_lines():
                    if time.monotonic() - started > self.settings.chat_timeout:
                        raise OllamaTimeout(f"keine vollständige Antwort nach {self.settings.chat_timeout:.0f} s")
                    if not line:
                        continue
                    try:
                        data = json.loads(line)
                    except ValueError:
                        raise OllamaError("Ungültige Antwortzeile vom Ollama-Server (kein JSON)") from None
                    if "error" in data:
                        raise OllamaError(f"Ollama meldet mitten in der Antwort: {data['error']}")
                    parts.append(data.get("message", {}).get("content", ""))
                    if data.get("done"):
                        return _chat_result(data, "".join(parts))
        except requests.exceptions.Timeout as exc:
            raise OllamaTimeout(f"keine Antwort nach {self.settings.chat_timeout:.0f} s") from exc
        except requests.exceptions.RequestException as exc:  # refused, cut, or a URL requests cannot use
            raise OllamaUnavailable(f"Verbindung zu {self.base_url} fehlgeschlagen oder abgebrochen") from exc
        raise OllamaError("Antwort des Sprachmodells brach ab, bevor sie fertig war")

    # -- models -----------------------------------------------------------------------
    def list_models(self) -> list[str]:
        """Names of the models the server has (``/api/tags``)."""
        self._check_url()
        try:
            resp = self.session.get(self.base_url + "/api/tags", timeout=(self.settings.connect_timeout, 10))
        except requests.exceptions.RequestException as exc:
            raise OllamaUnavailable(f"{self.base_url} nicht erreichbar") from exc
        self._raise_for_status(resp, "")
        try:
            return sorted(m.get("name") or m.get("model") for m in resp.json().get("models", []))
        except ValueError:
            raise OllamaError("/api/tags lieferte kein JSON") from None

    # -- plumbing ---------------------------------------------------------------------
    def _post_json(self, path: str, payload: dict, *, timeout: float, model: str) -> dict:
        self._check_url()
        try:
            resp = self.session.post(
                self.base_url + path, json=payload, timeout=(self.settings.connect_timeout, timeout)
            )
        except requests.exceptions.Timeout as exc:
            raise OllamaTimeout(f"{path}: keine Antwort nach {timeout:.0f} s") from exc
        except requests.exceptions.RequestException as exc:
            raise OllamaUnavailable(f"{self.base_url} nicht erreichbar") from exc
        self._raise_for_status(resp, model)
        try:
            data = resp.json()
        except ValueError:
            raise OllamaError(f"{path}: Antwort ist kein JSON") from None
        if "error" in data:
            raise OllamaError(f"{path}: {data['error']}")
        return data

    @staticmethod
    def _raise_for_status(resp: requests.Response, model: str) -> None:
        if resp.status_code == 200:
            return
        try:
            detail = resp.json().get("error", "")
        except ValueError:
            detail = resp.text[:200]
        if resp.status_code == 404:
            raise OllamaModelMissing(f"Modell '{model}' nicht gefunden ({detail or 'HTTP 404'})")
        raise OllamaError(f"Ollama antwortete mit HTTP {resp.status_code}: {detail}")


def _chat_result(data: dict, content: str) -> ChatResult:
    return ChatResult(
        content=content,
        done_reason=data.get("done_reason") or "stop",
        model=data.get("model", ""),
    )
