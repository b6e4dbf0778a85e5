"""A deadline for one question: every model call of ``ask()`` must end before it.

Odoo kills a cron worker after ``limit_time_real`` seconds; a question whose model calls add up
to more (a survey makes up to 14 calls) would be left "running". ``bounded()`` wraps the client
so that each call gets at most the time left, and no call starts once it is used up: the call
raises ``DeadlineExceeded`` (an ``OllamaTimeout``), which ``ask()`` turns into ``sources_only``
with the reason.
"""
from __future__ import annotations

import dataclasses
import time

from ..ollama import OllamaTimeout


class DeadlineExceeded(OllamaTimeout):
    reason = "Zeitlimit für die Frage erreicht"


class _BoundedClient:
    def __init__(self, client, deadline: float):
        self._client = client
        self._deadline = deadline

    def __getattr__(self, name):
        return getattr(self._client, name)

    def _left(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 1.0:  # less than a second cannot finish a model call
            raise DeadlineExceeded("keine Zeit mehr für einen weiteren Aufruf des Sprachmodells")
        return left

    def _call(self, method: str, *args, **kwargs):
        left = self._left()
        settings = getattr(self._client, "settings", None)
        if not dataclasses.is_dataclass(settings):
            return getattr(self._client, method)(*args, **kwargs)
        self._client.settings = dataclasses.replace(
            settings, chat_timeout=min(settings.chat_timeout, left), embed_timeout=min(settings.embed_timeout, left))
        try:
            return getattr(self._client, method)(*args, **kwargs)
        except OllamaTimeout as exc:
            if time.monotonic() >= self._deadline - 1.0:
                raise DeadlineExceeded(str(exc)) from exc
            raise
        finally:
            self._client.settings = settings

    def chat(self, *args, **kwargs):
        return self._call("chat", *args, **kwargs)

    def embed(self, *args, **kwargs):
        return self._call("embed", *args, **kwargs)


def bounded(client, deadline: float | None):
    """``client`` with every call bounded by ``deadline`` (a ``time.monotonic()`` value); as is if None."""
    return client if deadline is None else _BoundedClient(client, deadline)
