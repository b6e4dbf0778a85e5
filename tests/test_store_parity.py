"""The sidecar and PostgreSQL/pgvector give the same hits for the same corpus and questions:
the whole goldset on the real knowledge base (lexical-only, as without a model server), and
hybrid retrieval on a small knowledge base through the Ollama-API test server."""
from __future__ import annotations

import os
import uuid
from itertools import groupby
from pathlib import Path

import pytest

from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import GOLDSET_TODAY, load_goldset
from pv_agent.engine.index.target import open_index
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.retrieval.retrieve import lexical_terms, retrieve
from pv_agent.engine.textnorm import query_terms
from pv_agent.engine.retrieval.timeframe import asked_year

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "wissensbasis"
GOLDSET = load_goldset(KB / "goldset.yaml")


def ranked(result) -> list:
    """The hits as a list of groups of equal score (ties may come in either order)."""
    hits = [h for h in result.hits if h.via == "retrieval"]
    groups = [sorted(h.entry_id for h in group) for _, group in groupby(hits, key=lambda h: round(h.score, 12))]
    cross = [h.entry_id for h in result.hits if h.via == "cross_ref"]
    return groups + [cross]


@pytest.fixture(scope="module")
def both_stores(tmp_path_factory, pg_server):
    dsn, reason = pg_server
    if dsn is None:
        if os.environ.get("PV_AGENT_REQUIRE_PG"):
            pytest.fail(f"no PostgreSQL with pgvector: {reason}")
        pytest.skip(f"no PostgreSQL with pgvector: {reason}")
    import psycopg2

    from conftest import with_search_path

    schema = "parity_" + uuid.uuid4().hex[:12]  # unique: test runs may share the server
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        cur.execute(f"CREATE SCHEMA {schema}")
    settings = Settings(ollama_url="http://127.0.0.1:9", connect_timeout=0.5)
    entries = load_knowledge_base(KB).entries
    path = str(tmp_path_factory.mktemp("parity") / "index.db")
    pg = with_search_path(dsn, schema)
    for target in (path, pg):
        assert build_index(entries, target, settings, None).mode == "lexical"
    sidecar, postgres = open_index(path), open_index(pg)
    yield sidecar, postgres, settings
    sidecar.close()
    postgres.close()
    with conn.cursor() as cur:
        cur.execute(f"DROP SCHEMA {schema} CASCADE")
    conn.close()


def test_both_stores_hold_the_same_index(both_stores):
    sidecar, postgres, _ = both_stores
    a, b = sidecar.stats(), postgres.stats()
    assert (a["entries"], a["chunks"], a["mode"]) == (b["entries"], b["chunks"], b["mode"])
    assert sidecar.entry_hashes() == postgres.entry_hashes()
    assert sidecar.vocabulary() == postgres.vocabulary()


def test_goldset_gives_the_same_hits_on_both_stores(both_stores):
    sidecar, postgres, settings = both_stores
    differ = []
    for q in GOLDSET:
        year = q.year or asked_year(q.question, today=GOLDSET_TODAY).year
        a = retrieve(sidecar, q.question, settings, year=year)
        b = retrieve(postgres, q.question, settings, year=year)
        if ranked(a) != ranked(b):
            differ.append((q.id, a.ids, b.ids))
    assert len(GOLDSET) > 50
    assert differ == []


def test_goldset_bm25_scores_are_the_same_floats(both_stores):
    """Not only the order: PostgreSQL computes FTS5's BM25 to the last bit."""
    sidecar, postgres, settings = both_stores
    for q in GOLDSET:
        terms = lexical_terms(query_terms(q.question), lambda root: sidecar.terms_containing(root, 12))
        if not terms:
            continue
        a = sidecar.lexical_search(terms, settings.candidate_pool)
        b = postgres.lexical_search(terms, settings.candidate_pool)
        assert [s for _, s in a] == [s for _, s in b], q.id
        assert sorted(a) == sorted(b), q.id  # same chunks (ties may come in either order)


def test_filters_give_the_same_hits_on_both_stores(both_stores):
    sidecar, postgres, settings = both_stores
    for topics, scopes in ((["sonderzahlungen"], None), (None, ["gesetz"]), (["urlaub"], ["briefing"])):
        a = retrieve(sidecar, "Urlaubsersatzleistung Sonderzahlung Steuer", settings, topics=topics, scopes=scopes)
        b = retrieve(postgres, "Urlaubsersatzleistung Sonderzahlung Steuer", settings, topics=topics, scopes=scopes)
        assert ranked(a) == ranked(b) and a.hits, (topics, scopes)


def test_hybrid_retrieval_gives_the_same_hits_on_both_stores(kb_dir, tmp_path, pg_dsn, settings):
    entries = load_knowledge_base(kb_dir).entries
    path = str(tmp_path / "index.db")
    for target in (path, pg_dsn):
        assert build_index(entries, target, settings, OllamaClient(settings)).mode == "hybrid"
    sidecar, postgres = open_index(path), open_index(pg_dsn)
    for question in ("Jahressechstel laufende Bezüge", "Überstunden steuerfrei", "Urlaub bei Ende", "Gemeinde Abgabe"):
        a = retrieve(sidecar, question, settings, embedder=OllamaClient(settings))
        b = retrieve(postgres, question, settings, embedder=OllamaClient(settings))
        assert a.mode == b.mode == "hybrid"
        assert ranked(a) == ranked(b), question
        assert [(h.lexical_rank, h.dense_rank) for h in a.hits] == [(h.lexical_rank, h.dense_rank) for h in b.hits]
        assert [round(h.cosine or 0, 5) for h in a.hits] == [round(h.cosine or 0, 5) for h in b.hits]


def test_command_line_index_and_retrieve_with_store(kb_dir, store_target, monkeypatch, capsys):
    import json

    from tools.cli.__main__ import main

    monkeypatch.setenv("OLLAMA_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("PV_AGENT_CONNECT_TIMEOUT", "0.5")
    assert main(["index", "--kb", str(kb_dir), "--store", store_target, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["entries"], report["chunks"], report["mode"]) == (5, 25, "lexical")
    assert "secret" not in report["path"]
    assert main(["retrieve", "Ersatzleistung für Urlaub", "--store", store_target, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["id"] == "pv-url-01"


def test_command_line_names_the_missing_index(pg_dsn, capsys):
    from tools.cli.__main__ import main

    assert main(["retrieve", "Urlaub", "--store", pg_dsn]) == 1
    assert "bitte zuerst indizieren" in capsys.readouterr().err


def test_entry_heads_and_chunk_outlines_are_the_same_on_both_stores(both_stores):
    """What retrieval builds its hits from: the entries without body, and which chunks (and of
    which kind) each entry has, in section order; unknown ids are left out on both."""
    sidecar, postgres, _ = both_stores
    ids = sidecar.entry_ids() + ["kein-eintrag"]
    assert sidecar.entry_heads(ids) == postgres.entry_heads(ids)
    assert list(sidecar.entry_heads(ids)) == ids[:-1]
    outline = sidecar.chunk_outline(ids)
    assert outline == postgres.chunk_outline(ids)
    assert list(outline) == ids[:-1]
    rows = sidecar.chunks_of_entries(ids)  # section order, as the outline's
    assert [(r.entry_id, r.rowid, r.kind) for r in rows] == [(e, r, k) for e, chunks in outline.items() for r, k in chunks]
    assert sidecar.entry_tags(ids) == postgres.entry_tags(ids) == {e.id: e.tags for e in sidecar.entries_by_id(ids[:-1]).values()}
    every = sidecar.entry_tags()  # all entries at once, in id order (read once per generation)
    assert list(every.items()) == list(postgres.entry_tags().items()) == list(sidecar.entry_tags(ids[:-1]).items())
    full = sidecar.entries_by_id(ids[:5])
    heads = sidecar.entry_heads(ids[:5])
    for eid, entry in full.items():
        assert heads[eid] == (entry.id, entry.title, entry.stand, entry.topic, entry.source, entry.official, entry.tags,
                              entry.legal_bases, entry.cross_refs)


def test_goldset_hits_show_the_same_sections_on_both_stores(both_stores):
    """Each hit's shown section, key values, coverage and entry fields (ties may come in either order)."""
    sidecar, postgres, settings = both_stores

    def shown(result):
        return {(h.entry_id, h.via): (h.section, h.chunk_id, h.chunk_hash, h.text, h.header, h.key_values, h.coverage,
                                      h.title, h.stand, h.tags, h.cross_refs) for h in result.hits}

    for q in GOLDSET:
        year = q.year or asked_year(q.question, today=GOLDSET_TODAY).year
        a = shown(retrieve(sidecar, q.question, settings, year=year))
        b = shown(retrieve(postgres, q.question, settings, year=year))
        assert a == b, q.id


def test_entry_frequencies_are_the_same_on_both_stores(both_stores):
    """The refusal's topic coverage weighs a question's terms by these counts: both stores count
    the same entries for long roots (inside words) and short ones (at a word's start)."""
    sidecar, postgres, _ = both_stores
    roots = ["lohn", "sv", "urlaub", "ersatzleistung", "sachbezug", "pfandung", "beitragsgrundlag", "zz"]
    found = sidecar.entry_frequencies(roots)
    assert found == postgres.entry_frequencies(roots)
    assert found["lohn"] > 0 and found["pfandung"] == 0
    assert sidecar.entry_count() == postgres.entry_count() == len(sidecar.entry_ids())
