"""``ask(on_progress=…, should_stop=…)`` and ``find_sources``: the clerk sees the sources before
the answer and can stop a question; a real index over the small knowledge base and the
Ollama-API test server, which counts every model request."""
from __future__ import annotations

import pytest
from answer_helpers import build_test_index

from pv_agent.engine.answer.ask import ask
from pv_agent.engine.answer.progress import Cancelled, rewrite_reason
from pv_agent.engine.answer.sources import find_sources, key_line
from pv_agent.engine.config import Settings
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import OllamaAPIServer

HBGL_QUESTION = "Wie hoch ist die HBGL 2026 monatlich?"
GOOD = "Die HBGL 2026 beträgt monatlich 6.930 € und täglich 231 € (Stand 2026-01) [pv-sv-02]."
ONE_BAD_FIGURE = "Die HBGL 2026 beträgt monatlich 7.070 € (Stand 2026-01) [pv-sv-02]."


@pytest.fixture(scope="module")
def index_path(tmp_path_factory):
    return build_test_index(tmp_path_factory.mktemp("kb"))


@pytest.fixture
def srv():
    with OllamaAPIServer() as server:
        yield server


@pytest.fixture
def settings(srv):
    return Settings(ollama_url=srv.url, chat_timeout=5.0, num_predict=256)


@pytest.fixture
def index(index_path):
    idx = SidecarIndex.open(index_path)
    yield idx
    idx.close()


def model_requests(srv):
    return [r for r in srv.requests if r["path"] in ("/api/chat", "/api/embed", "/api/embeddings")]


class Recorder:
    def __init__(self):
        self.events: list[tuple[str, dict]] = []

    def __call__(self, stage, info):
        self.events.append((stage, info))

    @property
    def stages(self):
        return [s for s, _ in self.events]


def test_a_good_answer_reports_sources_then_writing_then_checking(srv, settings, index):
    srv.script(GOOD)
    seen = Recorder()
    answer = ask(HBGL_QUESTION, index, settings, on_progress=seen)
    assert answer.state == "answered"
    assert seen.stages == ["sources", "writing", "checking"]
    sources = seen.events[0][1]["sources"]
    first = sources[0]
    assert first["id"] == "pv-sv-02" and first["title"] == "Höchstbeitragsgrundlage 2026"
    assert first["stand"] == "2026-01" and first["score"] > 0
    assert first["line"] == "monatlich: 6.930 €"  # the key line the question asks for, not the table header
    assert [s["id"] for s in sources] == [r["id"] for r in answer.retrieved]
    assert seen.events[1][1] == {"attempt": 1}


def test_sources_are_reported_before_the_model_is_asked(srv, settings, index):
    srv.script(GOOD)
    chats_when = {}

    def on_progress(stage, info):
        chats_when.setdefault(stage, len(srv.requests_to("/api/chat")))

    ask(HBGL_QUESTION, index, settings, on_progress=on_progress)
    assert chats_when == {"sources": 0, "writing": 0, "checking": 1}


def test_a_regeneration_is_reported_with_its_reason(srv, settings, index):
    srv.script(ONE_BAD_FIGURE, GOOD)
    seen = Recorder()
    answer = ask(HBGL_QUESTION, index, settings, on_progress=seen)
    assert answer.state == "answered_after_retry"
    assert seen.stages == ["sources", "writing", "checking", "rewriting", "writing", "checking"]
    assert seen.events[3][1] == {"reason": "zweiter Versuch: 1 Zahl nicht belegt"}
    assert seen.events[4][1] == {"attempt": 2}


def test_no_sources_reported_when_the_gate_refuses(srv, settings, index):
    seen = Recorder()
    answer = ask("Wie hoch ist das Kilometergeld für Fahrräder in Tirol?", index, settings, on_progress=seen)
    assert answer.state in ("refused", "off_topic")
    assert "sources" not in seen.stages and "writing" not in seen.stages
    assert srv.requests_to("/api/chat") == []


def test_should_stop_from_the_start_makes_no_model_call(srv, settings, index):
    srv.script(GOOD)
    with pytest.raises(Cancelled):
        ask(HBGL_QUESTION, index, settings, should_stop=lambda: True)
    assert model_requests(srv) == []


def test_cancel_during_the_first_draft_starts_no_regeneration(srv, settings, index):
    srv.script(ONE_BAD_FIGURE, GOOD)
    cancelled = []

    def on_progress(stage, info):
        if stage == "checking":  # the first draft is back: the clerk pressed "Abbrechen" meanwhile
            cancelled.append(True)

    with pytest.raises(Cancelled):
        ask(HBGL_QUESTION, index, settings, on_progress=on_progress, should_stop=lambda: bool(cancelled))
    assert len(srv.requests_to("/api/chat")) == 1  # the regeneration never went out


def test_should_stop_is_asked_before_every_model_call(srv, settings, index):
    srv.script(ONE_BAD_FIGURE, GOOD)
    asked = []

    def should_stop():
        asked.append(len(model_requests(srv)))
        return False

    ask(HBGL_QUESTION, index, settings, should_stop=should_stop)
    # one embedding of the question, then the two drafts: asked before each, never after the last
    assert asked == list(range(len(model_requests(srv))))
    assert len(srv.requests_to("/api/chat")) == 2


def test_find_sources_needs_no_language_model_and_matches_ask(srv, settings, index):
    sources = find_sources(HBGL_QUESTION, index, settings)
    assert srv.requests_to("/api/chat") == []
    srv.script(GOOD)
    seen = Recorder()
    ask(HBGL_QUESTION, index, settings, on_progress=seen)
    assert sources == seen.events[0][1]["sources"]


def test_find_sources_is_empty_off_topic_and_when_nothing_is_relevant(settings, index):
    assert find_sources("Hallo, danke!", index, settings) == []
    assert find_sources("Wie hoch ist das Kilometergeld für Fahrräder in Tirol?", index, settings) == []


def test_key_line_follows_the_question(srv, settings, index):
    [hbgl] = [s for s in find_sources("HBGL 2026 täglich?", index, settings) if s["id"] == "pv-sv-02"]
    assert hbgl["line"] == "täglich: 231 €"
    [leave] = [s for s in find_sources("Urlaubsanspruch nach 25 Dienstjahren?", index, settings)
               if s["id"] == "pv-ur-01"]
    assert leave["line"] == "nach 25 Dienstjahren: 36 Werktage = 30 Arbeitstage"


def test_key_line_without_key_values_is_the_first_line():
    from answer_helpers import make_hit

    hit = make_hit("pv-ur-01", section="Zusammenfassung", text="## x\n\nDer Anspruch beträgt 30 Werktage.\n\nMehr.",
                   key_values="")
    assert key_line(hit, "Wie viele Werktage?") == "Der Anspruch beträgt 30 Werktage."


def test_rewrite_reason_counts_what_failed():
    from types import SimpleNamespace

    check = SimpleNamespace(unsupported_figures=[1, 2], unknown_citations=["x"], missing_citations=False,
                            claims_mostly_unsupported=False, conflicts=[], leaked_prompt=False)
    assert rewrite_reason(check) == "zweiter Versuch: 2 Zahlen nicht belegt, 1 unbekannte Quelle zitiert"
    assert rewrite_reason(check, truncated=True).endswith(", Antwort abgeschnitten")


def test_key_line_names_the_columns_of_a_table_with_several_values():
    from answer_helpers import make_hit

    table = "| Wert | 2025 | 2026 |\n|---|---|---|\n| Grenze monatlich | 551,10 € | 551,10 € |\n| Grenze jährlich | – | 7.715,40 € |"
    hit = make_hit("pv-ur-01", text=table)
    assert key_line(hit, "Grenze monatlich 2026?") == "Grenze monatlich – 2025: 551,10 € · 2026: 551,10 €"
    assert key_line(hit, "Grenze jährlich?") == "Grenze jährlich – 2025: – · 2026: 7.715,40 €"
