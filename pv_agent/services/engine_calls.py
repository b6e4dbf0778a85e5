"""The engine as the Odoo layer uses it: the names the models need, two calls (answer a
question, build the index), and engine failures worded for the UI.

Models import the engine only from here (tests/test_layout.py checks it). ``answer`` and
``build_index`` import the engine's pipeline when called, not when Odoo loads the addon, so a
patched ``engine.answer.ask.ask`` in a test is the one that runs.
"""
from __future__ import annotations

from ..engine.answer.reuse import storable as reusable_answer
from ..engine.drift import CHANGED, REMOVED, UNCHANGED, Fingerprint, check_fingerprints
from ..engine.kb.loader import ID_PATTERN, STAND_PATTERN, load_knowledge_base, parse_entry_text
from ..engine.llm_clients import LLM_APIS, make_client, url_is_local
from ..engine.ollama import OllamaError
from ..engine.kb.registry import INDEX_FILE, REGISTRY_FILE, write_registry
from ..engine.kb.safe_files import UnsafePath, check_writable as check_kb_writable, read_text as read_kb_text
from ..engine.kb.safe_files import write_text as write_kb_text
from ..engine.types import SOURCE_FAMILIES, Entry
from ..engine.kb.writer import changed_sections, entry_file_path, entry_to_markdown, side_by_side

__all__ = [
    "CHANGED", "REMOVED", "UNCHANGED", "Fingerprint", "check_fingerprints",
    "ID_PATTERN", "STAND_PATTERN", "load_knowledge_base", "parse_entry_text",
    "LLM_APIS", "make_client", "url_is_local", "OllamaError", "INDEX_FILE", "REGISTRY_FILE", "write_registry",
    "UnsafePath", "check_kb_writable", "read_kb_text", "write_kb_text", "SOURCE_FAMILIES", "Entry",
    "changed_sections", "entry_file_path", "entry_to_markdown", "side_by_side",
    "answer", "find_sources", "is_cancelled", "build_index", "failure_text", "stage_text", "reusable_answer",
]

# The sources shown while the question waits are found in the clerk's request: a busy embedding
# server must not hold it up — after this long the query is searched lexically (BM25) alone.
SOURCES_EMBED_TIMEOUT = 1.0


def answer(question: str, index, settings, deadline: float | None = None, reuse=None, on_progress=None,
           should_stop=None) -> dict:
    """The engine's answer object (as a dict) for ``question``, read from ``index``; ``reuse``: a
    store of verified answers (engine answer/reuse.py) to take an identical prompt's answer from.

    ``on_progress(stage, info)`` / ``should_stop()``: see engine/answer/progress.py; a stop
    raises ``Cancelled`` (``is_cancelled`` tells it apart)."""
    from ..engine.answer.ask import ask

    return ask(question, index, settings, client=make_client(settings), deadline=deadline, reuse=reuse,
               on_progress=on_progress, should_stop=should_stop).as_dict()


def find_sources(question: str, index, settings) -> list[dict]:
    """The entries ``question`` will be answered from ({id, title, stand, line, score}), without
    a language model; [] when it will not be answered from any (off topic, nothing relevant)."""
    import dataclasses

    from ..engine.answer.sources import find_sources as engine_find_sources

    quick = dataclasses.replace(settings, embed_timeout=min(settings.embed_timeout, SOURCES_EMBED_TIMEOUT))
    return engine_find_sources(question, index, quick, client=make_client(quick))


class _NoModel:
    """A model client for the asking request: embeddings (capped like the sources' search), but
    no chat — ``ask`` stops at its first draft (``Cancelled``) rather than hold up the request."""

    def __init__(self, client):
        self._client = client

    def __getattr__(self, name):
        return getattr(self._client, name)

    def chat(self, *args, **kwargs):
        from ..engine.answer.progress import Cancelled

        raise Cancelled("im Anfrage-Request wird kein Sprachmodell gefragt")


def stored_answer(question: str, index, settings, reuse) -> dict | None:
    """The verified answer stored (``reuse``) for ``question``'s exact prompt, as ``answer``
    would return it, or None: ``ask`` runs up to its first draft and never asks the model (retrieval,
    the context, the prompt key and the look-up take milliseconds), so the asking request can hand
    out a repeated question's answer at once."""
    import dataclasses

    from ..engine.answer.ask import ask
    from ..engine.answer.progress import Cancelled

    quick = dataclasses.replace(settings, embed_timeout=min(settings.embed_timeout, SOURCES_EMBED_TIMEOUT))
    try:
        data = ask(question, index, quick, client=_NoModel(make_client(quick)), reuse=reuse).as_dict()
    except Cancelled:
        return None  # not stored: the answering job asks the model
    return data if data.get("reused") else None


def is_cancelled(exc: BaseException) -> bool:
    """True for the engine's "stopped on request" (``should_stop()`` was true)."""
    from ..engine.answer.progress import Cancelled

    return isinstance(exc, Cancelled)


def build_index(entries, target, settings, *, kb_path: str, full: bool, progress):
    """Build the index at ``target`` from ``entries``; returns the engine's report.

    Settings → Embeddings: Ollama, the built-in model (loaded in this worker, after the fork),
    or none; the shipped seed in ``kb_path`` spares embedding the sample's sections."""
    from ..engine.index.embedders import choose_embedder
    from ..engine.index.embedding_seed import load_seed
    from ..engine.index.indexer import build_index as engine_build_index

    embedder, why = choose_embedder(settings, make_client(settings))
    seed = load_seed(kb_path, embedder.cache_key) if embedder is not None else None
    return engine_build_index(entries, target, settings, embedder=embedder, full=full, progress=progress,
                              seed=seed, notice=why)


def failure_text(env, exc: BaseException) -> str:
    """A failure from the engine for the UI: its reason in the user's language (the engine speaks
    German, Odoo translates), then the engine's detail."""
    from ..engine.answer.deadline import DeadlineExceeded
    from ..engine.index.indexer import EmbeddingDimensionMismatch
    from ..engine.ollama import OllamaError, OllamaModelMissing, OllamaTimeout, OllamaUnavailable

    _ = env._
    reasons = (  # most specific first
        (DeadlineExceeded, _("Time limit for the question reached")),
        (EmbeddingDimensionMismatch, _("The embedding dimension does not match the index")),
        (OllamaTimeout, _("The language model does not answer in time")),
        (OllamaModelMissing, _("Model not present on the Ollama server")),
        (OllamaUnavailable, _("Language model not reachable")),
        (OllamaError, _("Language model error")),
    )
    detail = str(exc) or type(exc).__name__
    for kind, reason in reasons:
        if isinstance(exc, kind):
            return f"{reason}: {detail}"
    return detail


def stage_text(env, stage: str | None):
    """A reindex stage of the engine ("vorbereiten", "einbetten", "speichern") in the user's language."""
    if not stage:
        return stage
    _ = env._
    return {"vorbereiten": _("preparing"), "einbetten": _("embedding"), "speichern": _("saving")}.get(stage, stage)
