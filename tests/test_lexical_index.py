"""The in-memory lexical index (lexical.LexicalIndex) against FTS5, the ranking it replaced.

Before/after on the real knowledge base and its goldset: with compound expansions scored term
by term, as FTS5 does, the in-memory scorer returns the same chunks with the same bm25 floats
and ``retrieve`` the same entry rankings as the FTS5 query it replaced. The one intended change
is the grouping of a word's compound expansions into one scored term (issue 14 item 5), tested
on its own below.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import GOLDSET_TODAY, load_goldset
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.retrieval.retrieve import MAX_INFIX_EXPANSIONS, lexical_terms, retrieve
from pv_agent.engine.index.base import CompoundLookup, compound_ends_with
from pv_agent.engine.index.lexical import LexicalIndex
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.textnorm import query_terms
from pv_agent.engine.retrieval.timeframe import asked_year
from pv_agent.engine.types import QueryTerm

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "wissensbasis"
GOLDSET = load_goldset(KB / "goldset.yaml")
SETTINGS = Settings(ollama_url="http://127.0.0.1:9")


@pytest.fixture(scope="module")
def kb_index(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("lexical") / "index.db")
    build_index(load_knowledge_base(KB).entries, path, SETTINGS, None, full=True)
    return path


def _terms(index, question, grouped=True) -> list[QueryTerm]:
    terms = lexical_terms(query_terms(question), lambda root: index.terms_containing(root, MAX_INFIX_EXPANSIONS))
    return terms if grouped else [dataclasses.replace(t, group="") for t in terms]


def test_in_memory_bm25_is_fts5_bm25_on_the_goldset(kb_index):
    index = SidecarIndex.open(kb_index)
    compared = 0
    for q in GOLDSET:
        terms = _terms(index, q.question, grouped=False)
        before = index.lexical_search_fts5(terms, SETTINGS.candidate_pool)
        after = index.lexical_search(terms, SETTINGS.candidate_pool)
        assert after == before, q.id  # same rowids, same order, the same floats
        compared += bool(before)
    assert compared >= len(GOLDSET) - 2  # nearly every question finds something


def test_filters_and_limits_match_fts5(kb_index):
    index = SidecarIndex.open(kb_index)
    topics = sorted({r[0] for r in index.conn.execute("SELECT DISTINCT topic FROM chunks")})[:3]
    scopes = sorted({r[0] for r in index.conn.execute("SELECT DISTINCT source FROM chunks")})[:1]
    for q in GOLDSET[:25]:
        terms = _terms(index, q.question, grouped=False)
        for limit in (1, 7, 150):
            for t, s in ((topics, None), (None, scopes), (topics, scopes), (["kein-thema"], None)):
                assert index.lexical_search(terms, limit, t, s) == index.lexical_search_fts5(terms, limit, t, s), (q.id, limit)


def test_goldset_rankings_unchanged_by_the_speed_work(kb_index):
    """``retrieve`` on the in-memory index ranks every goldset question as on FTS5 (ungrouped)."""
    index = SidecarIndex.open(kb_index)
    fts5 = SidecarIndex.open(kb_index)
    ungrouped = lambda terms, *args: fts5.lexical_search_fts5([dataclasses.replace(t, group="") for t in terms], *args)  # noqa: E731
    fts5.lexical_search = ungrouped
    mine_ungrouped = lambda terms, *args: SidecarIndex.lexical_search(index, [dataclasses.replace(t, group="") for t in terms], *args)  # noqa: E731
    index.lexical_search = mine_ungrouped
    for q in GOLDSET:
        year = asked_year(q.question, GOLDSET_TODAY).year
        before = [(h.entry_id, h.score) for h in retrieve(fts5, q.question, SETTINGS, year=year).hits]
        after = [(h.entry_id, h.score) for h in retrieve(index, q.question, SETTINGS, year=year).hits]
        assert after == before, q.id


def test_scratch_buffers_are_per_thread_and_left_clean(kb_index):
    """search() reuses per-thread scratch arrays: queries in any order and from threads at once
    give what a lone query gives (a buffer left dirty would add to the next query's scores)."""
    from concurrent.futures import ThreadPoolExecutor

    index = SidecarIndex.open(kb_index)
    queries = [_terms(index, q.question) for q in GOLDSET[:40]]
    alone = [SidecarIndex.open(kb_index).lexical_search(t, 20) for t in queries]
    assert [index.lexical_search(t, 20) for t in reversed(queries)] == alone[::-1]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda t: index.lexical_search(t, 20), queries)) == alone


def test_a_generic_head_no_longer_floods_the_ranking(kb_index):
    """Issue 14: "Betrag" expanded to every …betrag compound, each scored with its own (high)
    IDF, put the Pensionistenabsetzbetrag first for a question on Sonderzahlungen. Scored as one
    group, the compounds weigh as much as the head is specific."""
    index = SidecarIndex.open(kb_index)
    question = "Welcher Betrag von Weihnachts- und Urlaubsgeld ist beitragspflichtig?"
    terms = _terms(index, question)
    assert len([t for t in terms if t.group == "betrag"]) > 3  # the expansion itself stays
    fts5 = SidecarIndex.open(kb_index)
    fts5.lexical_search = fts5.lexical_search_fts5  # FTS5 scores each compound on its own
    before = retrieve(fts5, question, SETTINGS).ids[:3]
    after = retrieve(index, question, SETTINGS).ids[:3]
    # the flood: an entry of other …beträge first (the Pensionistenabsetzbetrag; since issue 30's
    # Pendlerpauschale tables, the Pendlerpauschale's monthly amounts)
    assert before[0] in ("pv-ab-03", "pv-pp-03")
    assert not any(eid.startswith(("pv-ab-", "pv-pp-")) for eid in after)
    assert any(eid.startswith(("pv-sz-", "pv-bg-")) for eid in after)  # Sonderzahlungen


def test_a_group_scores_as_one_term():
    """One group's IDF counts the chunks holding any member; its frequency sums the members'."""
    import math

    from pv_agent.engine.index.lexical import LexicalIndex

    texts = {1: "freibetrag", 2: "freibetrag", 3: "absetzbetrag", 4: "absetzbetrag freibetrag"}
    texts.update({n: "anderes" for n in range(5, 11)})
    lex = LexicalIndex(_tiny_arrays(texts))  # ten chunks; one word each but chunk 4 (two)
    single = [QueryTerm("freibetrag"), QueryTerm("absetzbetrag")]
    group = [QueryTerm("freibetrag", group="betrag"), QueryTerm("absetzbetrag", group="betrag")]
    ungrouped, grouped = dict(lex.search(single, 10)), dict(lex.search(group, 10))
    assert set(grouped) == set(ungrouped) == {1, 2, 3, 4}
    avgdl = 11 / 10

    def bm25(idf, freq, length):
        return -idf * (freq * 2.2) / (freq + 1.2 * (0.25 + 0.75 * length / avgdl))

    idf_free, idf_abs, idf_group = math.log(7.5 / 3.5), math.log(8.5 / 2.5), math.log(6.5 / 4.5)
    assert ungrouped[1] == pytest.approx(bm25(idf_free, 1, 1))
    assert ungrouped[4] == pytest.approx(bm25(idf_free, 1, 2) + bm25(idf_abs, 1, 2))
    assert grouped[1] == pytest.approx(bm25(idf_group, 1, 1))  # the union's IDF: lower
    assert grouped[4] == pytest.approx(bm25(idf_group, 2, 2))  # both members: one term, frequency 2


def _tiny_arrays(texts: dict[int, str]) -> dict:
    """LexicalIndex arrays for a few chunks (body text only) through an in-memory sidecar."""
    from pv_agent.engine.index.sqlite_conn import connect
    from pv_agent.engine.index.lexical import LexicalIndex
    from pv_agent.engine.index.sqlite_store import _SCHEMA

    conn = connect(":memory:")
    conn.executescript(_SCHEMA)
    for rowid, text in texts.items():
        conn.execute(
            "INSERT INTO chunks(rowid, chunk_id, entry_id, ordinal, section, kind, topic, source, header, text, content_hash)"
            " VALUES (?, ?, ?, 0, '', 'content', 't', 's', '', ?, '')", (rowid, f"c{rowid}", f"e{rowid}", text))
        conn.execute("INSERT INTO chunks_fts(rowid, head, body) VALUES (?, '', ?)", (rowid, text))
    return LexicalIndex.derive(conn)


def test_compound_lookup_equals_the_scan(kb_index):
    index = SidecarIndex.open(kb_index)
    vocab = index.vocabulary()
    lookup = CompoundLookup(vocab)
    parts = sorted({t[i:] for t, _ in vocab for i in range(1, len(t))})[::7] + ["betrag", "satz", "ersatzleistung"]
    for part in parts:
        assert lookup.ending_with(part) == [(t, d) for t, d in vocab if compound_ends_with(t, part)], part


def test_vocabulary_is_fts5s(kb_index):
    index = SidecarIndex.open(kb_index)
    fts5 = sorted(index.conn.execute("SELECT term, doc FROM chunks_vocab").fetchall(), key=lambda r: -r[1])
    assert index.vocabulary() == fts5


def test_arrays_are_shared_files_per_generation(kb_index, tmp_path):
    path = str(tmp_path / "index.db")
    with open(kb_index, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    first = SidecarIndex.open(path)
    expected = first.lexical_search([QueryTerm("sonderzahlung", prefix=True)], 20)
    folders = os.listdir(path + ".arrays")
    assert len(folders) == 1 and os.path.exists(os.path.join(path + ".arrays", folders[0], "lexical", "post_chunk.npy"))
    second = SidecarIndex.open(path)  # another worker: maps the saved files, derives nothing
    assert isinstance(second.lexical_index().post_chunk.base, np.memmap)
    assert second.lexical_search([QueryTerm("sonderzahlung", prefix=True)], 20) == expected


def test_an_unwritable_cache_location_still_searches(kb_index, tmp_path):
    path = str(tmp_path / "index.db")
    with open(kb_index, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())
    Path(path + ".arrays").write_text("not a folder")  # saving fails: the arrays stay in memory
    index = SidecarIndex.open(path)
    reference = SidecarIndex.open(kb_index)
    terms = [QueryTerm("urlaub", prefix=True)]
    assert index.lexical_search(terms, 30) == reference.lexical_search_fts5(terms, 30)


def test_an_update_gets_new_arrays_and_old_generations_are_removed(kb_dir, tmp_path, settings):
    from pv_agent.engine.ollama import OllamaClient

    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings), full=True)
    index = SidecarIndex.open(path)
    index.lexical_index()
    before = os.listdir(path + ".arrays")
    entry = kb_dir / "dokumente" / "pv-sz-02.md"
    entry.write_text(entry.read_text(encoding="utf-8").replace("## Zusammenfassung\n", "## Zusammenfassung\nZauberwort. ", 1), encoding="utf-8")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    assert index.refresh()
    hits = index.lexical_search([QueryTerm("zauberwort")], 5)
    assert hits and index.chunks_by_rowid([hits[0][0]]).popitem()[1].entry_id == "pv-sz-02"
    after = sorted(os.listdir(path + ".arrays"))
    # the update's arrays are a delta on the previous generation's, which stays while referenced
    assert len(after) == 2 and before[0] in after and os.path.isdir(os.path.join(path + ".arrays", after[-1], "lexical.delta"))
    entry.write_text(entry.read_text(encoding="utf-8").replace("Zauberwort. ", "Zauberspruch. ", 1), encoding="utf-8")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    assert index.refresh() and not index.lexical_search([QueryTerm("zauberwort")], 5)
    assert index.lexical_search([QueryTerm("zauberspruch")], 5)
    latest = sorted(os.listdir(path + ".arrays"))
    assert len(latest) == 2 and before[0] in latest and after[-1] not in latest  # the older delta went
    full = SidecarIndex.open(path)
    full.lexical_index()  # as derived from scratch: same floats, same vocabulary
    scratch = LexicalIndex(LexicalIndex.derive(full.conn))
    for terms in ([QueryTerm("zauberspruch")], [QueryTerm("sonderzahlung", prefix=True), QueryTerm("urlaub", prefix=True)]):
        assert full.lexical_search(terms, 50) == scratch.search(terms, 50)
    assert full.vocabulary() == scratch.vocabulary()


def test_a_process_on_an_older_generation_keeps_the_newer_arrays(tmp_path):
    from pv_agent.engine.index.dense import ArrayCache

    base = str(tmp_path / "index.db.arrays")
    ArrayCache(base, "1-2-g7-20261201").save("dense", {"rowids": np.arange(3)})
    ArrayCache(base, "1-2-g6-20261130").save("dense", {"rowids": np.arange(2)})  # a late, stale worker
    assert sorted(os.listdir(base)) == ["1-2-g6-20261130", "1-2-g7-20261201"]
    ArrayCache(base, "1-3-g8-20261202").save("dense", {"rowids": np.arange(4)})  # the next build (new file)
    assert os.listdir(base) == ["1-3-g8-20261202"]
    assert list(ArrayCache(base, "1-3-g8-20261202").load("dense", ("rowids",))["rowids"]) == [0, 1, 2, 3]


def test_prepare_saves_the_arrays_for_the_next_worker(kb_dir, tmp_path, settings):
    from pv_agent.engine.ollama import OllamaClient
    from pv_agent.engine.index.dense import ArrayCache, DenseMatrix

    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings), full=True)
    SidecarIndex.open(path).prepare()
    (key,) = os.listdir(path + ".arrays")
    cache = ArrayCache(path + ".arrays", key)
    assert cache.load("lexical", ("rowids", "post_chunk")) is not None
    assert cache.load(DenseMatrix.ARRAYS, ("rowids", "matrix", "bits", "codes", "scales")) is not None
