"""A deadline per question (issue 16): ``ask(deadline=…)`` bounds the total model time and ends
``sources_only`` with the reason instead of running past the Odoo worker's time limit."""
from __future__ import annotations

import time

import pytest
from answer_helpers import build_test_index

from pv_agent.engine.answer.ask import ask
from pv_agent.engine.config import Settings
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply

QUESTION = "Wie hoch ist die HBGL 2026 monatlich?"
BAD = "Die HBGL 2026 beträgt monatlich 7.070 € (Stand 2026-01) [pv-sv-02]."  # needs a second call


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    idx = SidecarIndex.open(build_test_index(tmp_path_factory.mktemp("kb")))
    yield idx
    idx.close()


@pytest.fixture
def srv():
    with OllamaAPIServer() as server:
        yield server


def test_a_slow_model_call_is_cut_at_the_deadline(srv, index):
    srv.script(Reply(BAD, delay=6.0))
    settings = Settings(ollama_url=srv.url, chat_timeout=30.0)
    started = time.monotonic()
    answer = ask(QUESTION, index, settings, deadline=started + 2.5)
    took = time.monotonic() - started
    assert answer.state == "sources_only", answer.as_dict()
    assert "Zeitlimit" in answer.notice
    assert took < 5.0, took  # the 30 s chat timeout did not apply


def test_no_second_call_starts_after_the_deadline(srv, index):
    srv.script(Reply(BAD, delay=2.0), BAD)
    settings = Settings(ollama_url=srv.url, chat_timeout=30.0)
    answer = ask(QUESTION, index, settings, deadline=time.monotonic() + 2.5)
    assert answer.state == "sources_only", answer.as_dict()
    assert "Zeitlimit" in answer.notice
    assert len(srv.requests_to("/api/chat")) == 1


def test_without_a_deadline_nothing_changes(srv, index):
    srv.script(BAD, BAD)
    answer = ask(QUESTION, index, Settings(ollama_url=srv.url, chat_timeout=30.0))
    assert answer.state == "uncertain"
    assert len(srv.requests_to("/api/chat")) == 2
