"""Query glosses: abbreviations, digit fractions and towns get their long form for the
embedding model; a town's Bundesland is searched lexically too."""
from __future__ import annotations

from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.textnorm import glossed, place_states

from kbfactory import SAMPLE_ENTRIES, write_kb


def test_abbreviations_are_spelled_out_as_written():
    assert glossed("Wieviel FBP bekommt ein MA?") == "Wieviel FBP (Familienbonus Plus) bekommt ein MA (Mitarbeiter)?"
    # "ma" is dialect for "wir", "an" a preposition: only the capitalised forms are abbreviations
    assert glossed("Was zahl ma an LSt?") == "Was zahl ma an LSt (Lohnsteuer)?"
    assert glossed("km-Geld für den DN") == "km (Kilometer)-Geld für den DN (Dienstnehmer)"
    assert glossed("Wie hoch ist der DZ?") == "Wie hoch ist der DZ?"  # the entries say DZ themselves


def test_fractions_with_digits_and_nothing_else():
    assert glossed("Wie rechne ich das 1/6 aus?") == "Wie rechne ich das 1/6 (Sechstel) aus?"
    assert glossed("1 / 12 vom Bezug") == "1 / 12 (Zwölftel) vom Bezug"
    for untouched in ("Stand 11/12", "1,1/2 Stunden", "1/60 Tag", "Frist 1/2026"):
        assert glossed(untouched) == untouched


def test_towns_name_their_bundesland():
    assert place_states("DZ für eine Betriebsstätte in St. Pölten und Graz") == ["Niederösterreich", "Steiermark"]
    assert place_states("Sankt Pölten, Wiener Neustadt") == ["Niederösterreich"]
    assert place_states("Wie lang dauert das Lernen?") == []  # a word boundary, not "Linz" in "Lernen"
    assert glossed("DZ in Linz") == "DZ in Linz (Oberösterreich)"


def test_the_embedder_reads_the_glossed_question_and_bm25_the_bundesland(tmp_path, settings, ollama):
    entries = dict(SAMPLE_ENTRIES)
    entries["pv-dg-09"] = dict(title="Zuschlag zum DB Niederösterreich", topic="dienstgeberabgaben",
                               summary="In Niederösterreich beträgt der Zuschlag zum Dienstgeberbeitrag 0,36 %.")
    kb = write_kb(tmp_path / "kb", entries)
    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb).entries, path, settings, OllamaClient(settings))
    index = SidecarIndex.open(path)
    before = len(ollama.requests_to("/api/embed"))
    result = retrieve(index, "Welchen DZ für eine Betriebsstätte in St. Pölten?", settings, embedder=OllamaClient(settings))
    sent = ollama.requests_to("/api/embed")[before:]
    assert [r["input"] for r in sent] in (["Welchen DZ für eine Betriebsstätte in St. Pölten? (Niederösterreich)"],
                                           [["Welchen DZ für eine Betriebsstätte in St. Pölten? (Niederösterreich)"]])
    assert result.mode == "hybrid" and result.hits[0].entry_id == "pv-dg-09" and result.hits[0].lexical_rank == 1
    assert "niederosterreich" not in result.terms  # the relevance signals keep the question's own words
