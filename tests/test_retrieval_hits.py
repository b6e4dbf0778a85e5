"""retrieve() builds its hits from few reads (issue 18): entry heads instead of whole entries,
an in-memory outline of each entry's chunks, one read of the chunks shown, coverage on the
folded text. Every goldset question, lexical and hybrid, gets hits exactly as the plain reads
give them — whole entries, every chunk of an entry in section order, coverage over the
re-tokenised text, as retrieve() built them before — and the faster ``ue`` pattern of the
German folding matches exactly where the former one did."""
from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import numpy as np
import pytest

from pv_agent.engine import textnorm
from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import GOLDSET_TODAY, load_goldset
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.retrieval.retrieve import MIN_INFIX_LENGTH, retrieve
from pv_agent.engine.retrieval.timeframe import asked_year
from pv_agent.engine.textnorm import index_text, stem

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "wissensbasis"
GOLDSET = load_goldset(KB / "goldset.yaml")
SETTINGS = Settings(ollama_url="http://127.0.0.1:9")


class HashingEmbedder:
    """A deterministic stand-in model: folded words hashed into 64 dimensions, so hybrid
    retrieval runs (dense ranks, cosines, fusion) without a model."""

    kind, model, cache_key = "ollama", "hashing-64", "hashing-64"

    def _vector(self, text: str) -> list[float]:
        v = np.zeros(64)
        for word in textnorm.tokens(text):
            v[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "big") % 64] += 1.0
        v[0] += 1e-3
        return (v / np.linalg.norm(v)).tolist()

    def embed_passages(self, texts):
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    entries = load_knowledge_base(KB).entries
    folder = tmp_path_factory.mktemp("hits")
    lexical, hybrid = str(folder / "lexical.db"), str(folder / "hybrid.db")
    assert build_index(entries, lexical, SETTINGS, None, full=True).mode == "lexical"
    assert build_index(entries, hybrid, SETTINGS, HashingEmbedder(), full=True).mode == "hybrid"
    return SidecarIndex.open(lexical), SidecarIndex.open(hybrid)


def _plain_hit_fields(index, hit, terms, shown_row):
    """A hit's fields from whole entries and all of the entry's chunks (the reads before)."""
    entry = index.entry(hit.entry_id)
    kv_rows = index.chunks_of_entries([hit.entry_id], kind="key_values")
    key_values = "" if shown_row.kind == "key_values" else "\n\n".join(r.text for r in kv_rows)
    fields = {
        "entry_id": entry.id, "title": entry.title, "stand": entry.stand, "topic": entry.topic, "source": entry.source,
        "official": entry.official, "cross_refs": entry.cross_refs, "tags": entry.tags + entry.legal_bases,
        "section": shown_row.section, "chunk_id": shown_row.chunk_id, "chunk_hash": shown_row.content_hash,
        "text": shown_row.text, "header": shown_row.header, "key_values": key_values,
    }
    if hit.via == "retrieval" and terms:
        roots = [stem(t) for t in terms]
        block = shown_row.text if not key_values else f"{shown_row.text}\n\n### Kernwerte & Fristen\n{key_values}"
        text = " " + index_text(f"{shown_row.header} {' '.join(fields['tags'])} {block}")
        fields["coverage"] = sum(1 for r in roots if (r in text if len(r) >= MIN_INFIX_LENGTH else f" {r}" in text)) / len(roots)
    else:
        fields["coverage"] = 0.0
    return fields


def _first_section(index, entry_id):
    rows = index.chunks_of_entries([entry_id])
    return next((r for r in rows if r.kind == "key_values"), rows[0] if rows else None)


def _check(index, result):
    by_chunk = {r.chunk_id: r for r in index.chunks_of_entries([h.entry_id for h in result.hits])}
    ranked = [h for h in result.hits if h.via == "retrieval"]
    for hit in ranked:
        row = by_chunk[hit.chunk_id]
        assert row.entry_id == hit.entry_id
        # a ranked hit shows its best content section, or — found only through its references —
        # the first key-values section, else the first section
        assert row.kind != "references" or row == _first_section(index, hit.entry_id)
        got = {name: getattr(hit, name) for name in _plain_hit_fields(index, hit, result.terms, row)}
        assert got == _plain_hit_fields(index, hit, result.terms, row), (result.question, hit.entry_id)
    wanted: list[str] = []
    present = {h.entry_id for h in ranked}
    for hit in ranked[: SETTINGS.cross_ref_sources]:
        wanted += [ref for ref in index.entry(hit.entry_id).cross_refs if ref not in present and ref not in wanted]
    wanted = [eid for eid in wanted[: SETTINGS.cross_ref_expand] if index.entry(eid) and _first_section(index, eid)]
    cross = [h for h in result.hits if h.via == "cross_ref"]
    assert [h.entry_id for h in cross] == wanted
    for hit in cross:
        row = _first_section(index, hit.entry_id)
        assert (hit.score, hit.lexical_rank, hit.dense_rank, hit.cosine) == (0.0, None, None, None)
        got = {name: getattr(hit, name) for name in _plain_hit_fields(index, hit, result.terms, row)}
        assert got == _plain_hit_fields(index, hit, result.terms, row), (result.question, hit.entry_id)
    assert result.hits[: len(ranked)] == ranked  # the ranked hits first, then the cross_refs


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_goldset_hits_are_those_the_plain_reads_give(indexes, mode):
    index = indexes[0] if mode == "lexical" else indexes[1]
    embedder = HashingEmbedder() if mode == "hybrid" else None
    shown_kinds, crossed = set(), 0
    for q in GOLDSET:
        year = asked_year(q.question, GOLDSET_TODAY).year
        result = retrieve(index, q.question, SETTINGS, embedder=embedder, k=10, year=year)
        assert result.mode == mode
        _check(index, result)
        shown_kinds |= {h.section == "Kernwerte & Fristen" for h in result.hits}
        crossed += sum(h.via == "cross_ref" for h in result.hits)
    assert shown_kinds == {True, False} and crossed > 20  # both kinds of section and many cross_refs were checked


def test_filters_and_odd_questions_give_plain_hits(indexes):
    lexical, hybrid = indexes
    topics = sorted({r[0] for r in lexical.conn.execute("SELECT DISTINCT topic FROM chunks")})[:3]
    for index, embedder in ((lexical, None), (hybrid, HashingEmbedder())):
        for question in ("", "§ 67 AND NEAR(*)", "SV DZ UEL", "Überstunden Zuschlag steuerfrei Feiertag"):
            _check(index, retrieve(index, question, SETTINGS, embedder=embedder))
            _check(index, retrieve(index, question, SETTINGS, embedder=embedder, topics=topics, k=3))


# The pattern textnorm used before: it tries every position of the text.
_UE_BEFORE = re.compile(r"(?<![aiq])(?<!\bhe)ue(?!ll)")


def test_the_ue_pattern_matches_where_the_former_one_did():
    texts = [index_text(e.body).replace(" ", "  ") for e in load_knowledge_base(KB).entries[:60]]
    texts += [e.body.lower() for e in load_knowledge_base(KB).entries[:60]]
    rng = random.Random(18)
    alphabet = "aeiqhuls -1_\u00e4"  # the letters the pattern's look-arounds test, word breaks and a non-ASCII one
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    texts += ["ue", "aue", "heue", "he ue", "sheue", "quelle", "aktuell", "ueber", "steuer", "heuer", "feuer", "ueue"]
    changed = 0
    for text in texts:
        assert textnorm._UE_UMLAUT.sub("u", text) == _UE_BEFORE.sub("u", text), text
        changed += _UE_BEFORE.search(text) is not None
    assert changed > 1000  # the pattern had work to do


def test_after_an_update_hits_are_those_the_plain_reads_give(tmp_path):
    """An update deletes and re-inserts changed entries' chunks (new rowids) and removes
    deleted ones: the outline follows, and every hit still shows what the plain reads give."""
    import dataclasses

    entries = load_knowledge_base(KB).entries
    path = str(tmp_path / "index.db")
    build_index(entries, path, SETTINGS, None, full=True)
    index = SidecarIndex.open(path)
    questions = [q.question for q in GOLDSET[:40]]
    touched = list(dict.fromkeys(h.entry_id for q in questions[:10] for h in retrieve(index, q, SETTINGS).hits))
    changed = {eid: i for i, eid in enumerate(touched[:6])}
    updated = [dataclasses.replace(e, body=e.body + f"\n\n## Ergänzung\n\nNachtrag {changed[e.id]} zur Lohnsteuer.\n",
                                   content_hash=e.content_hash + "x") if e.id in changed else e
               for e in entries if e.id not in touched[6:8]]
    report = build_index(updated, path, SETTINGS, None)
    assert not report.full and report.updated >= 6
    index.refresh()
    for question in questions:
        result = retrieve(index, question, SETTINGS, k=10)
        assert not {h.entry_id for h in result.hits} & set(touched[6:8])
        _check(index, result)


def test_the_dense_spread_is_statistics_pstdev_to_the_last_bit():
    """dense_z's standard deviation (a gate's input) on integers gives pstdev's float exactly."""
    import statistics

    from pv_agent.engine.retrieval.retrieve import population_sd

    rng = random.Random(18)
    cases = [[1.0] * 5, [0.0, 0.0], [0.5], [1e-300, -1e-300, 0.0], [3.0, 1e20, -7.5]]
    for i in range(3000):
        n = rng.choice([2, 3, 10, 150])
        if i % 3 == 0:  # cosines from float32 distances, as dense_search gives them
            cases.append([1.0 - float(np.float32(rng.uniform(0.0, 1.0))) for _ in range(n)])
        elif i % 3 == 1:
            cases.append([rng.uniform(0.8, 0.95) for _ in range(n)])
        else:
            cases.append([rng.uniform(-1e6, 1e6) * 10.0 ** rng.randint(-30, 30) for _ in range(n)])
    for values in cases:
        assert population_sd(values) == statistics.pstdev(values), values
