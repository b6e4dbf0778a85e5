"""What every model client has: settings, a base URL checked once, a requests session, and
three calls — ``chat``, ``embed``, ``list_models`` — that raise ``OllamaError`` subclasses."""
from __future__ import annotations

import requests

from ..config import LLM_APIS, llm_api_problem  # noqa: F401  (the kinds, and the check of a setting)
from .errors import OllamaUnavailable


class ModelClient:
    api = ""  # "ollama" | "openai"

    def __init__(self, settings, session: requests.Session | None = None):
        self.settings = settings
        self.base_url = settings.ollama_url.strip().rstrip("/")
        self.session = session or requests.Session()
        self.url_problem = settings.ollama_url_problem  # an unusable URL: unreachable, no request made

    def _check_url(self) -> None:
        if self.url_problem:
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


# Host names that stay inside a network: docker-compose service names and other single labels,
# mDNS and the names reserved for home and internal networks (RFC 6762, RFC 8375, ICANN 2024).
_LOCAL_SUFFIXES = (".localhost", ".local", ".lan", ".home.arpa", ".internal", ".intranet", ".corp")


def url_is_local(url: str) -> bool:
    """Whether ``url`` names this machine or the local network (loopback, private, link-local or
    unique-local address, ``localhost``, a single-label or local-suffix name). Decided on the URL
    alone, without a DNS lookup: a public name that resolves to a private address still counts as
    remote, which errs on the side of the warning."""
    import ipaddress
    import urllib.parse

    try:
        host = (urllib.parse.urlsplit((url or "").strip()).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_LOCAL_SUFFIXES)
    return address.is_loopback or address.is_private or address.is_link_local
