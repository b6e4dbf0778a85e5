"""One answer from Ollama ``/api/chat``: thinking off, ``num_ctx`` always set (by the client),
and one retry at twice ``num_predict`` when the model stopped for length (design.md §4)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..config import Settings
from ..ollama import ChatResult, OllamaClient


@dataclass
class Generation:
    content: str
    done_reason: str
    model: str
    llm_ms: float
    calls: int  # chat requests sent (2 when retried for length)
    truncated: bool  # still cut for length after the retry


def generate(
    client: OllamaClient,
    messages: list[dict],
    settings: Settings,
) -> Generation:
    """Send ``messages``; if the reply is cut for length, send them once more with twice the budget.

    Ollama errors (``OllamaError`` and subclasses) propagate: the caller decides what the clerk sees.
    """
    started = time.monotonic()
    result: ChatResult = client.chat(messages, num_predict=settings.num_predict)
    calls = 1
    if result.done_reason == "length":
        result = client.chat(messages, num_predict=2 * settings.num_predict)
        calls = 2
    return Generation(
        content=result.content,
        done_reason=result.done_reason,
        model=result.model or settings.chat_model,
        llm_ms=(time.monotonic() - started) * 1000,
        calls=calls,
        truncated=result.done_reason == "length",
    )
