"""Fixtures for the engine tests: small knowledge bases written on the fly and the Ollama-API test server."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.tests.ollama_api_server import OllamaAPIServer  # noqa: E402

from kbfactory import write_kb  # noqa: E402


@pytest.fixture
def kb_dir(tmp_path) -> Path:
    return write_kb(tmp_path / "kb")


@pytest.fixture
def ollama():
    with OllamaAPIServer() as server:
        yield server


@pytest.fixture
def settings(ollama) -> Settings:
    return Settings(ollama_url=ollama.url, embed_model="bge-m3", chat_model="qwen3.8:27b", embed_batch_size=8)


@pytest.fixture
def dead_settings() -> Settings:
    """Settings pointing at a port where nothing listens."""
    return Settings(ollama_url="http://127.0.0.1:9", connect_timeout=0.5)
