"""The model-client names most of the engine and the addon import from here: ``OllamaClient``
and the failures every client raises. The clients live in ``llm_clients/`` (Ollama's API and the
OpenAI-compatible one); ``llm_clients.make_client(settings)`` picks the configured one.
"""
from __future__ import annotations

from .llm_clients.errors import ChatResult, OllamaError, OllamaModelMissing, OllamaTimeout, OllamaUnavailable
from .llm_clients.ollama import OllamaClient

__all__ = ["ChatResult", "OllamaClient", "OllamaError", "OllamaModelMissing", "OllamaTimeout", "OllamaUnavailable"]
