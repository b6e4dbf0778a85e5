"""What every model client has: settings, a base URL checked once, a requests session, and
three calls — ``chat``, ``embed``, ``list_models`` — that raise ``OllamaError`` subclasses."""
from __future__ import annotations

import requests

LLM_APIS = ("ollama", "openai")


def llm_api_problem(value: str) -> str:
    """"" for a known API kind, else one German line naming the valid ones."""
    if (value or "ollama").strip().lower() in LLM_APIS:
        return ""
    return f"PV_AGENT_LLM_API={value!r}: erlaubt sind {', '.join(LLM_APIS)}"


class ModelClient:
    api = ""  # "ollama" | "openai"

    def __init__(self, settings, session: requests.Session | None = None):
        self.settings = settings
        self.base_url = settings.ollama_url.strip().rstrip("/")
        self.session = session or requests.Session()
        self.url_problem = settings.ollama_url_problem  # an unusable URL: unreachable, no request made

    def _check_url(self) -> None:
        if self.url_problem:
            from ..ollama import OllamaUnavailable

            raise OllamaUnavailable(self.url_problem)

    def chat(self, messages: list[dict], *, model: str | None = None, num_predict: int | None = None,
             format: dict | str | None = None, stream: bool = True):
        """One chat completion (a ``ChatResult``)."""
        raise NotImplementedError

    def embed(self, texts: list[str], model: str | None = None) -> list[list[float]]:
        """One L2-normalised vector per text."""
        raise NotImplementedError

    def list_models(self) -> list[str]:
        """Names of the models the server offers."""
        raise NotImplementedError
