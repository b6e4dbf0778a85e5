"""What ``ask()`` tells its caller while it runs, and how the caller stops it.

``on_progress(stage, info)`` is called at each step the clerk may want to see:
``sources`` ({"sources": [...]}) once retrieval and the relevance gate are through,
``writing`` ({"attempt": 1|2}) before a draft is asked for, ``checking`` ({}) before a draft is
verified, ``rewriting`` ({"reason": …}) before the one regeneration. ``should_stop()`` is asked
before every model call (chat and embedding): true → ``Cancelled``, and no further call starts.
"""
from __future__ import annotations

STAGES = ("sources", "writing", "checking", "rewriting")


class Cancelled(Exception):
    """The caller asked ``ask()`` to stop (``should_stop()`` was true before a model call)."""

    reason = "Frage abgebrochen"


class Progress:
    """The caller's two callbacks, either of which may be None."""

    def __init__(self, on_progress=None, should_stop=None):
        self._on_progress = on_progress
        self._should_stop = should_stop

    def report(self, stage: str, **info) -> None:
        if stage not in STAGES:
            raise ValueError(f"unknown progress stage {stage!r}")
        if self._on_progress is not None:
            self._on_progress(stage, info)

    def check(self) -> None:
        """Raise ``Cancelled`` if the caller wants the question stopped."""
        if self._should_stop is not None and self._should_stop():
            raise Cancelled("vor dem nächsten Aufruf des Sprachmodells abgebrochen")


class _StoppableClient:
    """A model client that asks ``progress.check()`` before every call."""

    def __init__(self, client, progress: Progress):
        self._client = client
        self._progress = progress

    def __getattr__(self, name):
        return getattr(self._client, name)

    def chat(self, *args, **kwargs):
        self._progress.check()
        return self._client.chat(*args, **kwargs)

    def embed(self, *args, **kwargs):
        self._progress.check()
        return self._client.embed(*args, **kwargs)


def stoppable(client, progress: Progress):
    return _StoppableClient(client, progress)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def rewrite_reason(check, *, truncated: bool = False) -> str:
    """Why the first draft goes back to the model, for the clerk: "zweiter Versuch: 1 Zahl nicht belegt"."""
    parts = []
    if check.unsupported_figures:
        parts.append(_count(len(check.unsupported_figures), "Zahl", "Zahlen") + " nicht belegt")
    if check.unknown_citations:
        parts.append(_count(len(check.unknown_citations), "unbekannte Quelle", "unbekannte Quellen") + " zitiert")
    if check.missing_citations:
        parts.append("keine Quellenangabe")
    if getattr(check, "claims_mostly_unsupported", False):
        parts.append("Aussagen nicht belegt")
    if any(g.failing for g in check.conflicts):
        parts.append("Widerspruch der Quellen nicht ausgewiesen")
    if check.leaked_prompt:
        parts.append("Anweisungen wiedergegeben")
    if truncated:
        parts.append("Antwort abgeschnitten")
    return "zweiter Versuch: " + (", ".join(parts) or "Prüfung nicht bestanden")
