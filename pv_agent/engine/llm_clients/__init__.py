"""The language-model servers the engine talks to, behind one interface (``ModelClient``):
Ollama's own API (``ollama.OllamaClient``, also importable from ``pv_agent.engine.ollama``) or the
OpenAI-compatible ``/v1`` API of vLLM, llama.cpp's ``llama-server``, LM Studio, LocalAI or TGI
(``openai.OpenAIClient``).

``make_client(settings)`` picks one by ``settings.llm_api`` (``PV_AGENT_LLM_API``). Both raise
the same ``OllamaError`` subclasses with the same German reasons, so ``ask`` and the clerk see
one behaviour whichever server answers.
"""
from __future__ import annotations

from .base import LLM_APIS, ModelClient, llm_api_problem, url_is_local

__all__ = ["LLM_APIS", "ModelClient", "llm_api_problem", "make_client", "url_is_local"]


def make_client(settings, session=None) -> ModelClient:
    """The client for ``settings.llm_api``; ValueError (German) for an unknown kind."""
    problem = llm_api_problem(settings.llm_api)
    if problem:
        raise ValueError(problem)
    if (settings.llm_api or "ollama").strip().lower() == "openai":
        from .openai import OpenAIClient

        return OpenAIClient(settings, session=session)
    from .ollama import OllamaClient

    return OllamaClient(settings, session=session)
