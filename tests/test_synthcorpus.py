"""The synthetic corpus generator: schema-valid, deterministic, and indexable hybrid without a model server."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from pv_agent.engine.config import Settings
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import check_registry
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex
from tools.synthcorpus import PrecomputedVectors, generate


def _digest(folder):
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "manifest.json"):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "kb"
    manifest = generate(out, entries=30, seed=7, dim=64, queries=10)
    return out, manifest


def test_tiny_corpus_validates(corpus):
    out, manifest = corpus
    loaded = load_knowledge_base(out)
    assert loaded.errors == [] and check_registry(out, loaded) == []
    assert len(loaded.entries) == 30 == manifest["entries"]
    assert {e.source for e in loaded.entries} <= {"briefing", "gesetz", "kv", "rechtsprechung"}
    assert any(e.cross_refs for e in loaded.entries)
    text = "\n".join(e.body for e in loaded.entries)
    assert "€" in text and "%" in text and "|---|" in text
    vectors = np.load(out / "vectors.npy")
    assert vectors.shape == (manifest["chunks"], 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_same_seed_same_files_other_seed_other_files(corpus, tmp_path):
    out, _ = corpus
    again = tmp_path / "again"
    generate(again, entries=30, seed=7, dim=64, queries=10)
    assert _digest(again) == _digest(out)
    generate(again, entries=30, seed=8, dim=64, queries=10)  # overwrites its own earlier output
    assert _digest(again) != _digest(out)


def test_refuses_to_overwrite_a_folder_it_did_not_write(tmp_path):
    (tmp_path / "wissensbasis").mkdir()
    (tmp_path / "wissensbasis" / "notes.md").write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError):
        generate(tmp_path / "wissensbasis", entries=5, dim=8)
    assert (tmp_path / "wissensbasis" / "notes.md").exists()


def test_indexes_hybrid_with_precomputed_vectors_and_finds_the_entries(corpus, tmp_path):
    out, manifest = corpus
    settings = Settings(ollama_url="http://127.0.0.1:9", embed_model="synthetic")
    vectors = PrecomputedVectors(out)
    report = build_index(load_knowledge_base(out).entries, str(tmp_path / "index.db"), settings, vectors)
    assert report.mode == "hybrid" and report.vectors == report.chunks == manifest["chunks"]
    assert vectors.texts == manifest["chunks"]  # every chunk found by its hash
    index = SidecarIndex.open(str(tmp_path / "index.db"))
    queries = __import__("json").loads((out / "queries.json").read_text(encoding="utf-8"))
    qvec = np.load(out / "queries.npy")

    class QueryVector:  # the precomputed vector of the one question asked
        def __init__(self, v):
            self.v = v

        def embed(self, texts, model=None):
            return [self.v.tolist()]

    found = 0
    for q, v in zip(queries, qvec):
        result = retrieve(index, q["question"], settings, embedder=QueryVector(v))
        assert result.mode == "hybrid"
        found += q["expected_id"] in result.ids
    assert found >= 0.8 * len(queries)
