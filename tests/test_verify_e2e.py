"""The cases of "verified means verified" end to end: ``pv-agent ask --json`` over an index of
shipped knowledge-base entries, against the scripted Ollama-API server returning one fixed
draft for every attempt (first draft and regeneration alike)."""
from __future__ import annotations

import json
import shutil

import pytest
from kb_context import KB

from pv_agent.engine.config import Settings
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply
from tools.cli.__main__ import main

ENTRIES = ("pv-ab-01", "pv-ab-02", "pv-bg-01", "pv-bg-02", "pv-dg-01", "pv-sz-03", "pv-abf-01",
           "pv-ues-02", "pv-ues-03", "pv-ues-05")

VAB_Q = "Wie hoch ist der Verkehrsabsetzbetrag 2026?"
HBGL_Q = "Wie hoch ist die Höchstbeitragsgrundlage 2026 monatlich?"
DB_Q = "Welcher Freibetrag gilt beim Dienstgeberbeitrag DB?"
SZ_Q = "Mit welchen Steuersätzen werden sonstige Bezüge innerhalb des Sechstels besteuert?"
ABF_Q = "Wie viele Monatsentgelte Abfertigung alt nach 25 Dienstjahren?"
UES_Q = "Wie viele Überstunden sind 2026 steuerfrei und bis zu welchem Höchstbetrag?"

# (question, fixed draft, expected state)
CASES = [
    (VAB_Q, "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 804 € [pv-ab-01].", "uncertain"),
    (VAB_Q, "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 487 € [pv-ab-01].", "uncertain"),
    (VAB_Q, "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01].", "answered"),
    (VAB_Q, "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496,00 EUR [pv-ab-01].", "answered"),
    (HBGL_Q, "Die Höchstbeitragsgrundlage beträgt 2026 monatlich 231 € [pv-bg-02].", "uncertain"),
    (HBGL_Q, "Die Höchstbeitragsgrundlage beträgt 2026 monatlich 6.930 € [pv-bg-02].", "answered"),
    (HBGL_Q, "Die Höchstbeitragsgrundlage beträgt 2026 monatlich 6930,00 EUR [pv-bg-02].", "answered"),
    (HBGL_Q, "Die Höchstbeitragsgrundlage beträgt 2026 monatlich 6 930 € [pv-bg-02].", "answered"),
    (DB_Q, "Beträgt die Monats-Bemessungsgrundlage höchstens 1.095 €, werden 1.460 € abgezogen [pv-dg-01].",
     "uncertain"),
    (DB_Q, "Beträgt die Monats-Bemessungsgrundlage höchstens 1.460 €, werden 1.095 € abgezogen [pv-dg-01].",
     "answered"),
    ("Mein Dienstnehmer hat 1.300 € Bemessungsgrundlage im Monat – welcher Freibetrag gilt beim "
     "Dienstgeberbeitrag DB?",
     "Bei 1.300 € Bemessungsgrundlage werden 1.095 € abgezogen, weil die Monats-Bemessungsgrundlage höchstens "
     "1.460 € beträgt [pv-dg-01].", "answered"),
    (SZ_Q, "Die nächsten 24.380 € werden mit 27 % besteuert, die nächsten 25.000 € mit 6 % [pv-sz-03].",
     "uncertain"),
    (SZ_Q, "Die nächsten 24.380 € werden mit 6 % besteuert, die nächsten 25.000 € mit 27 % [pv-sz-03].",
     "answered"),
    (ABF_Q, "Nach 25 Dienstjahren stehen 9 Monatsentgelte zu [pv-abf-01].", "uncertain"),
    (ABF_Q, "Nach 25 Dienstjahren stehen 12 Monatsentgelte zu [pv-abf-01].", "answered"),
    (VAB_Q, "Der Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01]. Zum Pendlereuro enthält die "
            "Wissensbasis keine Aussage, er beträgt aber 2 € pro km.", "uncertain"),
    (VAB_Q, "## VAB 2026: 999 €\nDer Verkehrsabsetzbetrag beträgt 2026 jährlich 496 € [pv-ab-01].", "uncertain"),
    (VAB_Q, "Beträgt der VAB 2026 wirklich 512 €? Er beträgt 2026 jährlich 496 € [pv-ab-01].", "uncertain"),
    (UES_Q, "2026 sind Zuschläge für 10 Überstunden im Monat bis höchstens 120 € steuerfrei [pv-ues-03]. "
            "Siehe auch [pv-ues-02].", "uncertain"),
    (UES_Q, "2026 sind Zuschläge für 15 Überstunden bis 170 € steuerfrei [pv-ues-02]. "
            "Die Angabe 10 Überstunden/120 € ist überholt [pv-ues-03].", "uncertain"),
    (UES_Q, "⚠ Laut Novelle (maßgeblich) sind 2026 Zuschläge für 15 Überstunden bis 170 € steuerfrei "
            "[⚠ pv-ues-02]. ⚠ Die Angabe 10 Überstunden/120 € ist überholt [⚠ pv-ues-03].", "answered"),
]


@pytest.fixture(scope="module")
def index_path(tmp_path_factory):
    from pv_agent.engine.index.indexer import build_index
    from pv_agent.engine.kb.loader import load_knowledge_base
    from pv_agent.engine.ollama import OllamaClient

    root = tmp_path_factory.mktemp("kb")
    docs = root / "wissensbasis" / "dokumente"
    docs.mkdir(parents=True)
    for entry_id in ENTRIES:
        shutil.copy(KB / "dokumente" / f"{entry_id}.md", docs / f"{entry_id}.md")
    loaded = load_knowledge_base(root / "wissensbasis")  # cross_refs outside the subset are dropped
    assert {e.id for e in loaded.entries} == set(ENTRIES)
    path = str(root / "index.db")
    with OllamaAPIServer() as srv:
        settings = Settings(ollama_url=srv.url)
        build_index(loaded.entries, path, settings, embedder=OllamaClient(settings))
    return path


@pytest.fixture(scope="module")
def srv():
    with OllamaAPIServer() as server:
        yield server


@pytest.mark.parametrize("question, draft, state", CASES, ids=[f"{n:02d}" for n in range(len(CASES))])
def test_fixed_draft_gets_its_verdict(srv, index_path, monkeypatch, capsys, question, draft, state):
    monkeypatch.setenv("OLLAMA_URL", srv.url)
    srv.replies.clear()
    srv.default_reply = Reply(content=draft)
    assert main(["ask", question, "--index", index_path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == state, (out["state"], out["flags"], [r["id"] for r in out["retrieved"]])
    checked = out["flags"]["checked"]
    assert checked["figures_checked"] >= 1 and "in den zitierten Einträgen geprüft" in checked["state_line"]
    assert all(c["state"] in ("quote", "paraphrase", "unsupported") for c in out["flags"]["claims"])
    if state == "uncertain":
        assert out["flags"]["unsupported_figures"] or any(
            g["cited"] and (g["one_sided"] or g["unmarked"] or g["status_missing"]) for g in out["flags"]["conflicts"])
        assert "⟨" in out["answer"] or "widersprechen" in out["answer"]
