"""Index and retrieval: German folding, compounds, hostile input, atomic rebuild,
incremental update, lexical-only mode — against the Ollama-API test server, on both stores
(``store_target``: the sidecar file and PostgreSQL/pgvector)."""
from __future__ import annotations

import os

import pytest

from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.retrieval.retrieve import lexical_terms, retrieve
from pv_agent.engine.index.sqlite_store import fts5_expression
from pv_agent.engine.index.target import is_dsn, open_index
from pv_agent.engine.index.base import IndexCorrupt, IndexMissing
from pv_agent.engine.index.sqlite_store import SidecarIndex, SidecarWriter

from kbfactory import SAMPLE_ENTRIES, entry_text, write_kb


@pytest.fixture
def hybrid_index(kb_dir, store_target, settings):
    report = build_index(load_knowledge_base(kb_dir).entries, store_target, settings, OllamaClient(settings))
    assert report.mode == "hybrid"
    index = open_index(store_target)
    yield index
    index.close()


@pytest.fixture
def lexical_index(kb_dir, store_target, dead_settings):
    report = build_index(load_knowledge_base(kb_dir).entries, store_target, dead_settings, OllamaClient(dead_settings))
    assert report.mode == "lexical"
    index = open_index(store_target)
    yield index
    index.close()


def _writer_class(target):
    if is_dsn(target):
        from pv_agent.engine.index.pg_store import PgWriter

        return PgWriter
    return SidecarWriter


def _unfinished_builds(target, folder) -> list:
    """What an interrupted full build left behind: files beside the sidecar, tables in PostgreSQL."""
    if not is_dsn(target):
        return [f for f in os.listdir(folder) if "building" in f]
    from pv_agent.engine.index.pg_store import connect

    conn = connect(target)
    with conn.cursor() as cur:
        cur.execute("SELECT build FROM pv_index_builds WHERE state = 'building'")
        builds = cur.fetchall()
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'pv_index_b%%'")
        tables = [r[0] for r in cur.fetchall()]
    conn.close()
    return builds + [t for t in tables if not t.startswith(("pv_index_b1_", "pv_index_builds"))]


def _top(index, question, settings, embedder=None, **kw):
    return retrieve(index, question, settings, embedder=embedder, **kw)


@pytest.mark.parametrize(
    "question,expected",
    [
        ("Ueberstunden Zuschlag", "pv-ues-01"),  # ü written as ue
        ("uberstunden zuschlag", "pv-ues-01"),  # ü written as plain u
        ("ÜBERSTUNDEN", "pv-ues-01"),
        ("Kommunalsteuer Strasse", "pv-dg-01"),  # ß written as ss
        ("Sonderzahlung Steuersatz", "pv-sz-01"),  # singular finds the plural
        ("Ersatzleistung für Urlaub", "pv-url-01"),  # compound part finds Urlaubsersatzleistung
        ("Was ist die UEL?", "pv-url-01"),  # abbreviation from the tags
    ],
)
def test_german_spellings_and_compounds_find_the_entry(lexical_index, dead_settings, question, expected):
    result = _top(lexical_index, question, dead_settings)
    assert result.ids[0] == expected, result.ids


def test_compound_expansion_uses_corpus_words():
    terms = lexical_terms(["ersatzleistung", "uel"], lambda root: ("urlaubsersatzleistung",))
    assert fts5_expression(terms) == '"ersatzleistung"* OR "urlaubsersatzleistung" OR "uel"'


HOSTILE = [
    "§ 67",
    '"Sonderzahlung',
    'Sonderzahlung" OR "x',
    "AND",
    "OR NOT NEAR",
    "Sonderzahlung AND NOT Urlaub",
    "NEAR(Sonderzahlung Urlaub, 3)",
    "Sonder*",
    "*",
    "^Sonderzahlung",
    "-Sonderzahlung",
    "(Sonderzahlung OR",
    ")))",
    "title:Urlaub",
    "😀 Sonderzahlung 🎉",
    "",
    "   ",
    "'; DROP TABLE chunks; --",
    "\x00\x01\x02",
    "Ｓｏｎｄｅｒｚａｈｌｕｎｇ",
    "a" * 5000,
]


@pytest.mark.parametrize("question", HOSTILE)
def test_fts5_syntax_in_questions_is_treated_as_text(hybrid_index, settings, question):
    result = _top(hybrid_index, question, settings, OllamaClient(settings))
    assert result.mode == "hybrid"
    assert all(h.entry_id in SAMPLE_ENTRIES for h in result.hits)
    if "Sonderzahlung" in question and "NOT" not in question:
        assert result.ids[0] == "pv-sz-01"


def test_hostile_question_keeps_the_index_intact(hybrid_index, settings):
    _top(hybrid_index, "'; DROP TABLE chunks; --", settings)
    assert hybrid_index.stats()["chunks"] == 25


def test_hybrid_hits_carry_the_best_content_section_and_key_values(hybrid_index, settings):
    result = _top(hybrid_index, "Jahressechstel laufende Bezüge", settings, OllamaClient(settings))
    top = result.hits[0]
    assert top.entry_id == "pv-sz-02"
    assert top.section != "Verweise"
    assert top.dense_rank is not None and top.lexical_rank is not None and top.cosine > 0
    assert "1/6 der laufenden Bezüge" in top.block_text
    assert result.as_dict()["mode"] == "hybrid"


def test_cross_refs_of_top_hits_are_added(lexical_index, dead_settings):
    result = _top(lexical_index, "Weihnachtsremuneration", dead_settings, k=1)
    assert result.ids == ["pv-sz-01", "pv-sz-02"]
    assert result.hits[1].via == "cross_ref" and result.hits[1].score == 0.0


def test_topic_and_scope_filters(hybrid_index, settings):
    result = _top(hybrid_index, "steuerfrei Sonderzahlung Überstunden", settings, OllamaClient(settings), topics=["ueberstunden-zulagen"])
    assert [h.entry_id for h in result.hits if h.via == "retrieval"] == ["pv-ues-01"]
    assert _top(hybrid_index, "Sonderzahlung", settings, OllamaClient(settings), scopes=["gesetz"]).hits == []


def test_lexical_only_when_ollama_is_unreachable_at_index_time(lexical_index, dead_settings):
    stats = lexical_index.stats()
    assert stats["mode"] == "lexical" and stats["vectors"] == 0 and stats["chunks"] == 25
    assert "nicht erreichbar" in stats["notice"]
    result = _top(lexical_index, "Sonderzahlungen", dead_settings, OllamaClient(dead_settings))
    assert result.mode == "lexical" and result.ids[0] == "pv-sz-01"
    assert "nur lexikalische Suche" in result.notice


def test_lexical_fallback_when_ollama_dies_after_indexing(hybrid_index, dead_settings):
    result = _top(hybrid_index, "Sonderzahlungen", dead_settings, OllamaClient(dead_settings))
    assert result.mode == "lexical" and result.ids[0] == "pv-sz-01"
    assert "nicht erreichbar" in result.notice


def test_embedding_batches_and_cache(kb_dir, store_target, settings, ollama):
    entries = load_knowledge_base(kb_dir).entries
    path = store_target
    first = build_index(entries, path, settings, OllamaClient(settings))
    embed_calls = ollama.requests_to("/api/embed")
    assert first.embedded == 25
    assert all(len(call["input"]) <= 8 for call in embed_calls)  # embed_batch_size
    assert sum(len(call["input"]) for call in embed_calls) == 25
    again = build_index(entries, path, settings, OllamaClient(settings), full=True)
    assert again.embedded == 0 and again.cache_hits == 25 and again.mode == "hybrid"
    assert again.generation == first.generation + 1  # the audit trail never sees a generation twice


def test_incremental_update_reembeds_only_changed_chunks(kb_dir, store_target, settings, ollama):
    path = store_target
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    reader = open_index(path)
    generation = reader.generation
    ollama.requests.clear()

    doc = kb_dir / "dokumente" / "pv-sz-02.md"
    doc.write_text(doc.read_text().replace("Das Jahressechstel ist", "Das Jahressechstel (1/6) ist"))
    (kb_dir / "dokumente" / "pv-dg-01.md").unlink()
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Neuer Eintrag Pendlerpauschale"))
    entries = load_knowledge_base(kb_dir).entries
    report = build_index(entries, path, settings, OllamaClient(settings))

    assert not report.full
    assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, 3)
    sent = [text for call in ollama.requests_to("/api/embed") for text in call["input"]]
    # pv-sz-02: only its changed summary; pv-new-01: all 5 sections, except those identical
    # to already-cached chunks (none, its header names the new id)
    assert report.embedded == len(sent) == 6
    assert sum("[pv-sz-02]" in t for t in sent) == 1
    assert reader.refresh() is True and reader.generation == generation + 1
    stats = reader.stats()
    assert stats["entries"] == 5 and stats["chunks"] == stats["vectors"] == 25
    assert retrieve(reader, "Pendlerpauschale", settings, embedder=OllamaClient(settings)).ids[0] == "pv-new-01"
    assert "pv-dg-01" not in retrieve(reader, "Kommunalsteuer", settings, embedder=OllamaClient(settings)).ids


def test_unchanged_knowledge_base_changes_nothing(kb_dir, store_target, settings, ollama):
    path = store_target
    entries = load_knowledge_base(kb_dir).entries
    first = build_index(entries, path, settings, OllamaClient(settings))
    second = build_index(entries, path, settings, OllamaClient(settings))
    assert second.generation == first.generation and second.embedded == 0 and second.unchanged == 5


def test_interrupted_rebuild_leaves_the_old_index_serving(kb_dir, tmp_path, store_target, settings, monkeypatch):
    path = store_target
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, path, settings, OllamaClient(settings))
    reader = open_index(path)
    before = reader.stats()

    calls = {"n": 0}
    original = _writer_class(path).insert_entry

    def crash_after_two(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt("simulated kill during reindex")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_writer_class(path), "insert_entry", crash_after_two)
    with pytest.raises(KeyboardInterrupt):
        build_index(entries, path, settings, OllamaClient(settings), full=True)

    assert _unfinished_builds(path, tmp_path) == []
    assert reader.refresh() is False
    assert reader.stats()["generation"] == before["generation"]
    assert retrieve(reader, "Sonderzahlungen", settings, embedder=OllamaClient(settings)).ids[0] == "pv-sz-01"
    fresh = open_index(path)
    assert fresh.stats()["entries"] == 5


def test_interrupted_update_rolls_back(kb_dir, tmp_path, store_target, settings, monkeypatch):
    path = store_target
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    doc = kb_dir / "dokumente" / "pv-sz-02.md"
    doc.write_text(doc.read_text().replace("Jahressechstel ist", "Jahressechstel bleibt"))

    def boom(self, *args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(_writer_class(path), "insert_entry", boom)
    with pytest.raises(RuntimeError):
        build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    reader = open_index(path)
    assert reader.stats()["entries"] == 5  # the delete of the old version was rolled back too
    assert "Jahressechstel ist" in reader.entry("pv-sz-02").body


def test_full_rebuild_is_seen_by_an_open_reader(kb_dir, store_target, settings):
    path = store_target
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    reader = open_index(path)
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Pendlerpauschale"))
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings), full=True)
    assert reader.refresh() is True
    assert reader.stats()["entries"] == 6


def test_lexical_index_becomes_hybrid_when_ollama_is_back(kb_dir, store_target, dead_settings, settings):
    path = store_target
    entries = load_knowledge_base(kb_dir).entries
    assert build_index(entries, path, dead_settings, OllamaClient(dead_settings)).mode == "lexical"
    report = build_index(entries, path, settings, OllamaClient(settings))
    assert report.mode == "hybrid" and report.vectors == 25


def test_update_while_ollama_down_keeps_hybrid_and_fills_vectors_later(kb_dir, store_target, settings, dead_settings):
    path = store_target
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Pendlerpauschale"))
    entries = load_knowledge_base(kb_dir).entries
    down = build_index(entries, path, dead_settings.replace(embed_model="bge-m3"), OllamaClient(dead_settings))
    assert down.mode == "hybrid" and down.vectors == 25 and down.chunks == 30
    assert "nur lexikalisch" in down.notice
    reader = open_index(path)
    found = retrieve(reader, "Pendlerpauschale", settings, embedder=OllamaClient(settings))
    new = next(h for h in found.hits if h.entry_id == "pv-new-01")  # found although it has no vector yet
    assert new.lexical_rank == 1 and new.dense_rank is None
    up = build_index(entries, path, settings, OllamaClient(settings))
    assert up.vectors == 30 and up.embedded == 5


def test_wrong_embedding_dimension_is_refused(kb_dir, store_target, settings, ollama):
    path = store_target
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Pendlerpauschale"))
    ollama.embed_dim_override = 64
    report = build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    assert "Dimension" in report.notice and report.vectors == 25
    result = retrieve(open_index(path), "Sonderzahlung", settings, embedder=OllamaClient(settings))
    assert result.mode == "lexical" and "Dimension" in result.notice


def test_missing_and_corrupt_index_give_clear_errors(tmp_path):
    with pytest.raises(IndexMissing, match="bitte zuerst indizieren"):
        SidecarIndex.open(str(tmp_path / "none.db"))
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexCorrupt, match="beschädigt|öffnen"):
        SidecarIndex.open(str(broken))


def test_readers_keep_the_old_index_until_a_full_build_completes(kb_dir, store_target, settings, monkeypatch):
    path = store_target
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    reader = open_index(path)
    generation = reader.generation
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Pendlerpauschale"))
    seen = []
    original = _writer_class(path).insert_entry

    def look_while_building(self, *args, **kwargs):
        reader.refresh()
        fresh = open_index(path)
        seen.append((reader.stats()["entries"], fresh.stats()["entries"], fresh.generation))
        fresh.close()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(_writer_class(path), "insert_entry", look_while_building)
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings), full=True)
    assert seen and all(s == (5, 5, generation) for s in seen)
    assert reader.refresh() is True and reader.stats()["entries"] == 6
    assert retrieve(reader, "Pendlerpauschale", settings, embedder=OllamaClient(settings)).ids[0] == "pv-new-01"


def test_missing_postgresql_index_gives_a_clear_error(pg_dsn):
    with pytest.raises(IndexMissing, match="bitte zuerst indizieren"):
        open_index(pg_dsn)


def test_unreachable_postgresql_gives_a_clear_error(tmp_path):
    pytest.importorskip("psycopg2")
    from pv_agent.engine.index.pg_store import IndexUnreachable

    dsn = f"postgresql://nobody:secret@/nowhere?host={tmp_path}"
    with pytest.raises(IndexUnreachable, match="nicht erreichbar") as failure:
        open_index(dsn)
    assert "secret" not in str(failure.value)


def test_missing_pgvector_is_named(kb_dir, dead_settings):
    """Against a PostgreSQL without pgvector (Debian 12's own, as Odoo's test server has):
    $PV_AGENT_TEST_PG_NO_VECTOR, else the local cluster's default socket."""
    pytest.importorskip("psycopg2")
    from pv_agent.engine.index.pg_store import IndexUnreachable, PgvectorMissing, connect

    dsn = os.environ.get("PV_AGENT_TEST_PG_NO_VECTOR", "postgresql:///postgres")
    try:
        conn = connect(dsn)
    except IndexUnreachable as exc:
        pytest.skip(f"no PostgreSQL without pgvector to try: {exc}")
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        has_vector = cur.fetchone()
    conn.close()
    if has_vector:
        pytest.skip(f"{dsn} has pgvector")
    with pytest.raises(PgvectorMissing, match="pgvector \\(Name 'vector'\\) ist auf dem Datenbankserver nicht installiert"):
        build_index(load_knowledge_base(kb_dir).entries, dsn, dead_settings, None)


@pytest.mark.parametrize("cache_size", [2, 2048])
def test_entry_heads_are_read_all_at_once_when_they_fit_and_follow_an_update(kb_dir, tmp_path, dead_settings, monkeypatch,
                                                                           cache_size):
    """The sidecar's entry heads (what every hit shows): an index whose entries all fit the cache
    has them read in one query per generation, a larger one as asked; either way the same heads,
    unknown ids left out, and an update's new title seen after refresh()."""
    from pv_agent.engine.index import sqlite_store

    monkeypatch.setattr(sqlite_store, "ENTRY_HEAD_CACHE_SIZE", cache_size)
    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, OllamaClient(dead_settings))
    reader = SidecarIndex.open(path)
    ids = reader.entry_ids()
    queries = []
    reader.conn.set_trace_callback(lambda sql: queries.append(sql) if "FROM entries" in sql else None)
    heads = {}
    for eid in ids + ["kein-eintrag"]:
        heads.update(reader.entry_heads([eid, "kein-eintrag"]))
    # the count, then all rows at once, or a query per call (each asks for the unknown id too)
    assert len(queries) == (2 if cache_size >= len(ids) else 1 + len(ids) + 1)
    assert list(heads) == ids
    for eid, entry in reader.entries_by_id(ids).items():
        assert heads[eid] == (entry.id, entry.title, entry.stand, entry.topic, entry.source, entry.official, entry.tags,
                              entry.legal_bases, entry.cross_refs)

    doc = kb_dir / "dokumente" / "pv-sz-02.md"
    doc.write_text(doc.read_text().replace('title: "Jahressechstel"', 'title: "Jahressechstel neu"'))
    assert not build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, OllamaClient(dead_settings)).full
    assert reader.refresh() is True
    assert reader.entry_heads(["pv-sz-02"])["pv-sz-02"].title == "Jahressechstel neu"
    reader.close()


def test_all_entries_tags_are_read_from_an_index_not_the_table(kb_dir, tmp_path, dead_settings):
    """The tag-phrase check reads every entry's tags once per generation: from the covering
    index the writer creates, not by a scan of the entries with their bodies."""
    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb_dir).entries, path, dead_settings, OllamaClient(dead_settings))
    reader = SidecarIndex.open(path)
    queries = []
    reader.conn.set_trace_callback(queries.append)
    assert reader.entry_tags() == {eid: e.tags for eid, e in reader.entries_by_id(reader.entry_ids()).items()}
    reader.conn.set_trace_callback(None)
    plan = reader.conn.execute("EXPLAIN QUERY PLAN " + queries[0]).fetchall()
    assert "COVERING INDEX entries_tags" in " ".join(str(step[-1]) for step in plan)
    reader.close()
