"""``pv-agent ask`` on the command line: German output for people, the answer object as JSON."""
from __future__ import annotations

import json

import pytest
from answer_helpers import build_test_index

from tools.cli.__main__ import main
from pv_agent.tests.ollama_api_server import OllamaAPIServer

GOOD = "Die HBGL 2026 beträgt monatlich 6.930 € (Stand 2026-01) [pv-sv-02]."


@pytest.fixture(scope="module")
def index_path(tmp_path_factory):
    return build_test_index(tmp_path_factory.mktemp("kb"))


@pytest.fixture
def srv(monkeypatch):
    with OllamaAPIServer() as server:
        monkeypatch.setenv("OLLAMA_URL", server.url)
        yield server


def test_ask_json_prints_the_answer_object(srv, index_path, capsys):
    srv.script(GOOD)
    assert main(["ask", "Wie hoch ist die HBGL 2026?", "--index", index_path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "answered" and out["citations"][0]["id"] == "pv-sv-02"


def test_ask_prints_state_answer_and_sources_in_german(srv, index_path, capsys):
    srv.script(GOOD)
    assert main(["ask", "Wie hoch ist die HBGL 2026?", "--index", index_path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Status: Beantwortet (answered)")
    assert GOOD in out
    assert "Quellen:\n  ✓ [pv-sv-02] Höchstbeitragsgrundlage 2026 (Stand 2026-01)" in out


def test_ask_json_shows_unanswered_when_the_model_refuses_a_covered_question(srv, index_path, capsys):
    srv.script("Dazu enthält die Wissensbasis keine Aussage.")
    assert main(["ask", "Wie hoch ist die HBGL 2026?", "--index", index_path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "unanswered", out
    assert "pv-sv-02" in [c["id"] for c in out["citations"]] and out["drafts"]


def test_ask_prints_unanswered_in_german(srv, index_path, capsys):
    srv.script("Dazu enthält die Wissensbasis keine Aussage.")
    assert main(["ask", "Wie hoch ist die HBGL 2026?", "--index", index_path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Status: Keine geprüfte Antwort – passende Einträge, nicht geprüft (unanswered)")
    assert "· [pv-sv-02]" in out  # a source shown, not checked


def test_ask_without_ollama_prints_sources_only(monkeypatch, index_path, capsys):
    monkeypatch.setenv("OLLAMA_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PV_AGENT_CONNECT_TIMEOUT", "0.5")
    assert main(["ask", "Wie hoch ist die HBGL 2026?", "--index", index_path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "sources_only" and "nicht erreichbar" in out["notice"]


def test_ask_with_missing_index_fails_with_a_message(tmp_path, capsys):
    assert main(["ask", "Frage?", "--index", str(tmp_path / "fehlt.db")]) == 1
    assert capsys.readouterr().err.startswith("Fehler:")


def test_ask_prints_the_sources_to_stderr_before_the_progress(srv, index_path, capsys):
    srv.script("Die HBGL 2026 beträgt monatlich 7.070 € (Stand 2026-01) [pv-sv-02].", GOOD)
    assert main(["ask", "Wie hoch ist die HBGL 2026 monatlich?", "--index", index_path, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["state"] == "answered_after_retry"  # stdout: the answer object alone
    err = captured.err.splitlines()
    start = err.index("Gefundene Quellen – Antwort wird erstellt:")
    assert err[start + 1] == "  [pv-sv-02] Höchstbeitragsgrundlage 2026 (Stand 2026-01) – monatlich: 6.930 €"
    steps = [line for line in err[start:] if not line.startswith(("  ", "Gefundene"))]
    assert steps == ["Das Sprachmodell schreibt …", "Wird geprüft …", "Zweiter Versuch: 1 Zahl nicht belegt …",
                     "Wird geprüft …"]
