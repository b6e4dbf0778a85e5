"""Dense search over the in-memory matrix: the same neighbours as sqlite-vec's vec0, reloaded
after an update, and complete even when the embedding cache lacks a vector."""
from __future__ import annotations

import numpy as np

from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.index.sqlite_conn import connect
from pv_agent.engine.index.dense import DenseMatrix
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import embed_text

from kbfactory import SAMPLE_ENTRIES, entry_text


def _index(kb_dir, tmp_path, settings):
    path = str(tmp_path / "index.db")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    return path


def _same(a, b):
    """Same distances rank by rank; same rowids except where two chunks are equally near."""
    da, db = [d for _, d in a], [d for _, d in b]
    assert np.allclose(da, db, atol=1e-5)
    for rowid, d in a:
        if sum(abs(d - other) < 1e-5 for other in da) == 1:
            assert (rowid, True) in [(r, abs(x - d) < 1e-5) for r, x in b]


def test_matrix_search_equals_vec0(kb_dir, tmp_path, settings, ollama):
    index = SidecarIndex.open(_index(kb_dir, tmp_path, settings))
    for question in ("Urlaubsersatzleistung", "Sonderzahlungen Jahressechstel", "Kommunalsteuer 3 %"):
        q = embed_text(question, ollama.dim)
        for k in (1, 3, 50):
            _same(index.dense_search(q, k), index.dense_search_vec0(q, k))


def test_matrix_is_reloaded_after_an_update(kb_dir, tmp_path, settings, ollama):
    path = _index(kb_dir, tmp_path, settings)
    index = SidecarIndex.open(path)
    q = embed_text("Pendlerpauschale Kilometer", ollama.dim)
    before = index.dense_matrix()
    entries = dict(SAMPLE_ENTRIES)
    entries["pv-pp-01"] = dict(title="Pendlerpauschale", topic="pendlerpauschale", summary="Pendlerpauschale nach Kilometern.")
    (kb_dir / "dokumente" / "pv-pp-01.md").write_text(entry_text("pv-pp-01", **entries["pv-pp-01"]), encoding="utf-8")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    assert index.refresh()
    assert index.dense_matrix() is not before and len(index.dense_matrix()) > len(before)
    _same(index.dense_search(q, 5), index.dense_search_vec0(q, 5))
    assert index.chunks_by_rowid([index.dense_search(q, 1)[0][0]]).popitem()[1].entry_id == "pv-pp-01"


def test_vectors_missing_from_the_cache_come_from_vec0(kb_dir, tmp_path, settings, ollama):
    path = _index(kb_dir, tmp_path, settings)
    conn = connect(path)
    conn.execute("DELETE FROM embedding_cache WHERE rowid % 2 = 0")
    conn.commit()
    total = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1").fetchone()[0]
    matrix = DenseMatrix.load(conn, settings.embed_model, ollama.dim)
    conn.close()
    assert len(matrix) == total
    index = SidecarIndex.open(path)
    q = embed_text("Überstunden Zuschlag", ollama.dim)
    _same(index.dense_search(q, 10), index.dense_search_vec0(q, 10))


def test_two_stage_search_keeps_recall_against_exact_search():
    """Sign-bit candidates + exact rescoring on clustered vectors (like embeddings of one domain)."""
    import numpy as np

    from pv_agent.engine.index.dense import DenseMatrix

    rng = np.random.default_rng(3)
    centroids = rng.normal(size=(20, 256))
    rows = centroids[rng.integers(0, 20, 8000)] + 0.9 * rng.normal(size=(8000, 256))
    matrix = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    dm = DenseMatrix(np.arange(8000, dtype=np.int64), matrix)
    assert dm.bits is not None  # large enough for the two-stage search
    recalls = []
    for q in centroids[:10] + 0.9 * rng.normal(size=(10, 256)):
        exact = set(np.argsort(-(matrix @ (q / np.linalg.norm(q))))[:50].tolist())
        found = [r for r, _ in dm.search(q, 50)]
        assert len(found) == 50
        recalls.append(len(exact & set(found)) / 50)
    assert min(recalls) >= 0.96 and sum(recalls) / len(recalls) >= 0.99
    distances = [d for _, d in dm.search(centroids[0], 50)]
    assert distances == sorted(distances)  # nearest first, exact cosine distances


def test_small_matrices_are_searched_exactly():
    import numpy as np

    from pv_agent.engine.index.dense import DenseMatrix

    matrix = np.eye(8, dtype=np.float32)
    dm = DenseMatrix(np.arange(10, 18, dtype=np.int64), matrix)
    assert dm.bits is None
    assert dm.search(np.eye(8, dtype=np.float32)[3], 2)[0] == (13, 0.0)


def _clustered(n: int, dim: int, seed: int):
    """Synthetic chunk vectors clustered like the benchmark corpus (tools/synthcorpus) and 40
    questions near their entries."""
    from tools.synthcorpus import VectorSpace

    entries = [f"e{i}" for i in range(n // 10)]
    space = VectorSpace(entries, seed, dim)
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(entries), n)
    kinds = rng.choice(list(VectorSpace.KINDS), n, p=[0.8, 0.1, 0.1]).tolist()
    matrix = space.chunk_vectors([entries[r] for r in rows], [int(r % 21) for r in rows], kinds)
    asked = rng.integers(0, len(entries), 40)
    questions = np.array([space.query_vector(entries[r], int(r % 21)) for r in asked])
    return matrix, questions


def _recall_at_50(dense: DenseMatrix, matrix, questions) -> float:
    n = len(matrix)
    found = []
    for q in questions:
        exact = set(np.argpartition(matrix @ q, n - 50)[n - 50 :].tolist())
        found.append(len({r for r, _ in dense.search(q, 50)} & exact) / 50)
    return float(np.mean(found))


def test_dense_recall_holds_where_a_fixed_candidate_budget_fails():
    """Issue 21: 1,000 sign-bit candidates (8 × limit at least) lost the true neighbours as the
    corpus grew (recall@50 0.72 at 171k chunks). The budget now grows with the corpus and with
    fewer dimensions; on 20k clustered 256-dim vectors the fixed budget already falls below 0.99.
    (The share was chosen on other seeds and sizes; this seed is not among them.)"""
    matrix, questions = _clustered(20_000, 256, seed=11)
    dense = DenseMatrix(np.arange(len(matrix)), matrix)
    assert dense.bits is not None and dense.candidates(50) < len(matrix)  # the two-stage path runs

    class FixedBudget(DenseMatrix):
        RESCORE_SHARE = 0.0  # only MIN_RESCORE / RESCORE_FACTOR × limit, as before

    fixed = FixedBudget(dense.rowids, matrix, bits=dense.bits)
    assert fixed.candidates(50) == 1000
    assert _recall_at_50(fixed, matrix, questions) < 0.99
    assert _recall_at_50(dense, matrix, questions) >= 0.99


def test_saved_matrix_reads_exact_rows_from_the_file(tmp_path):
    """Issue 21: a worker opening the saved arrays scores its few final rows in float32 read
    with pread (not mapped), and gets the same neighbours and distances as the in-memory search."""
    from pv_agent.engine.index.dense import ArrayCache

    matrix, questions = _clustered(6_000, 128, seed=5)
    in_memory = DenseMatrix(np.arange(len(matrix), dtype=np.int64), matrix)
    cache = ArrayCache(str(tmp_path / "x.arrays"), "1-2-g3-20261201")
    saved = cache.save(DenseMatrix.ARRAYS, {"rowids": in_memory.rowids, "matrix": matrix, "bits": in_memory.bits,
                                 "codes": in_memory.codes, "scales": in_memory.scales})
    mapped = DenseMatrix(saved["rowids"], saved["matrix"], None, saved["bits"], saved["codes"], saved["scales"],
                         cache.file_of(DenseMatrix.ARRAYS, "matrix"))
    assert mapped._reader is not None and mapped._reader.fd is not None
    assert mapped.candidates(50) < len(matrix) and mapped.rescored(50) < mapped.candidates(50)  # all three stages run
    for q in questions[:10]:
        assert mapped.search(q, 50) == in_memory.search(q, 50)
        exact = matrix @ (q / np.linalg.norm(q))
        for rowid, distance in mapped.search(q, 10):
            assert abs((1.0 - exact[rowid]) - distance) < 1e-6  # exact float32 distances, not int8 ones


def test_an_updates_delta_searches_as_the_arrays_derived_anew(tmp_path):
    """Item 2 of the memory/update work: an update saves only its rows (and the base's deleted
    ones) beside an older generation's arrays. Searched together they find what a search over
    the live rows finds — never a deleted row, every added one — at recall@50 ≥ 0.99 against
    exact search, and the distances are exact float32 cosines."""
    from pv_agent.engine.index.dense import ArrayCache, _int8_codes, _sign_bits

    matrix, questions = _clustered(8_000, 128, seed=9)
    rowids = np.arange(1, len(matrix) + 1, dtype=np.int64)
    base = DenseMatrix(rowids, matrix)
    cache = ArrayCache(str(tmp_path / "x.arrays"), "1-2-f-g3-20261201")
    saved = cache.save(DenseMatrix.ARRAYS, {"rowids": rowids, "matrix": matrix, "bits": base.bits,
                                            "codes": base.codes, "scales": base.scales})
    rng = np.random.default_rng(4)
    dead = np.sort(rng.choice(len(matrix), 60, replace=False))
    added = matrix[dead[:40]] + rng.normal(0, 0.02, (40, matrix.shape[1])).astype(np.float32)  # edited chunks
    added /= np.linalg.norm(added, axis=1, keepdims=True)
    codes, scales = _int8_codes(added)
    delta = {"rowids": np.arange(len(matrix) + 1, len(matrix) + 41, dtype=np.int64), "matrix": added,
             "bits": _sign_bits(added), "codes": codes, "scales": scales, "dead": dead}
    layered = DenseMatrix(saved["rowids"], saved["matrix"], None, saved["bits"], saved["codes"], saved["scales"],
                          cache.file_of(DenseMatrix.ARRAYS, "matrix")).with_delta(delta)
    live = np.setdiff1d(np.arange(len(matrix)), dead)
    live_rowids = np.concatenate([rowids[live], delta["rowids"]])
    live_matrix = np.concatenate([matrix[live], added])
    assert len(layered) == len(live_rowids) and layered.candidates(50) < len(layered)  # the staged path runs
    dead_rowids = set(rowids[dead].tolist())
    recall = []
    for q in list(questions[:20]) + list(added[:10]):
        unit = q / np.linalg.norm(q)
        exact = live_matrix @ unit
        truth = set(live_rowids[np.argsort(-exact)[:50]].tolist())
        found = layered.search(q, 50)
        assert not {r for r, _ in found} & dead_rowids
        recall.append(len({r for r, _ in found} & truth) / 50)
        by_rowid = dict(zip(live_rowids.tolist(), exact.tolist()))
        for rowid, distance in found[:10]:
            assert abs((1.0 - by_rowid[rowid]) - distance) < 1e-5
    for i, q in enumerate(added[:10]):  # an added row is its own nearest neighbour
        assert layered.search(q, 1)[0][0] == delta["rowids"][i]
    assert np.mean(recall) >= 0.99


def test_an_update_saves_a_dense_delta_and_finds_the_edited_chunk(kb_dir, tmp_path, settings, ollama, monkeypatch):
    """Through the indexer: after an update the new generation holds only a delta of the dense
    arrays, and its search equals one over arrays derived from scratch."""
    import os
    import shutil

    monkeypatch.setattr(DenseMatrix, "EXACT_BELOW", 1)  # stage even the small sample's matrix
    path = _index(kb_dir, tmp_path, settings)
    index = SidecarIndex.open(path)
    entries = dict(SAMPLE_ENTRIES)
    entries["pv-pp-01"] = dict(title="Pendlerpauschale", topic="pendlerpauschale", summary="Pendlerpauschale nach Kilometern.")
    (kb_dir / "dokumente" / "pv-pp-01.md").write_text(entry_text("pv-pp-01", **entries["pv-pp-01"]), encoding="utf-8")
    build_index(load_knowledge_base(kb_dir).entries, path, settings, OllamaClient(settings))
    assert index.refresh()
    newest = sorted(os.listdir(path + ".arrays"), key=lambda k: int(k.split("-g")[1].split("-")[0]))[-1]
    assert os.path.isdir(os.path.join(path + ".arrays", newest, DenseMatrix.ARRAYS + ".delta"))
    assert index.dense_matrix().extra is not None
    copy = str(tmp_path / "fresh.db")
    shutil.copyfile(path, copy)  # the same rows, its arrays derived from scratch
    fresh = SidecarIndex.open(copy)
    assert fresh.dense_matrix().extra is None
    for question in ("Pendlerpauschale Kilometer", "Urlaubsersatzleistung", "Sonderzahlungen Jahressechstel"):
        q = embed_text(question, ollama.dim)
        _same(index.dense_search(q, 20), fresh.dense_search(q, 20))
    q = embed_text("Pendlerpauschale Kilometer", ollama.dim)
    assert index.chunks_by_rowid([index.dense_search(q, 1)[0][0]]).popitem()[1].entry_id == "pv-pp-01"
