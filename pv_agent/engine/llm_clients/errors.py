"""What a model call returns, and how it fails: the same for every server kind.

The names keep the ``Ollama`` prefix they had before there was a second kind of server (most of
the engine and the addon catch them by it); ``reason`` is the German line a clerk reads.
"""
from __future__ import annotations

from dataclasses import dataclass


class OllamaError(RuntimeError):
    """The language-model server did not give a usable answer."""

    reason = "Sprachmodell-Fehler"
    embed_reason = "Embedding-Modell-Fehler"  # the same failure while embedding (OllamaClient.embed)


class OllamaUnavailable(OllamaError):
    reason = "Sprachmodell nicht erreichbar"
    embed_reason = "Embedding-Modell nicht erreichbar"


class OllamaModelMissing(OllamaError):
    reason = "Modell auf dem Ollama-Server nicht vorhanden"
    embed_reason = "Embedding-Modell auf dem Ollama-Server nicht vorhanden"


class OllamaTimeout(OllamaUnavailable):
    reason = "Sprachmodell antwortet nicht rechtzeitig"
    embed_reason = "Embedding-Modell antwortet nicht rechtzeitig"


@dataclass
class ChatResult:
    content: str
    done_reason: str  # "stop" | "length" | …
    model: str = ""
