"""The goldset's retrieval figures on the sample knowledge base, lexical and hybrid (built-in
model, vectors from the shipped seed), must not fall below floors set from measured figures.

Re-measure (after the knowledge base or the goldset grew):
    tools/pv-agent seed-embeddings                       # when entries changed
    PV_AGENT_EMBEDDER=none    tools/pv-agent index --full --index /tmp/lex.db
    PV_AGENT_EMBEDDER=builtin tools/pv-agent index --full --index /tmp/hyb.db
    tools/pv-agent eval --index /tmp/lex.db --refusals
    tools/pv-agent eval --index /tmp/hyb.db --refusals
and set the floors below (whole goldset and per half) a little under the new figures (docs/retrieval.md keeps the table).
The refusal weights (Settings.refuse_*) are refitted on the calibration half with
``eval --refusals --calibrate`` on each index; copy them to config.py, then re-measure.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from pv_agent.engine.kb.chunker import chunk_entry
from pv_agent.engine.config import Settings
from pv_agent.engine.index.embedders import BuiltinEmbedder
from pv_agent.engine.index.embedding_seed import load_seed
from pv_agent.engine.evaluation.retrieval import evaluate_retrieval, load_goldset, refusal_report, relevance_rows
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.index.sqlite_store import SidecarIndex

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "wissensbasis"
GOLDSET = SAMPLE_KB / "goldset.yaml"

# Measured on 2026-12-01 on the merged knowledge base (222 entries, 204 goldset questions, 128
# with expected entries; query glosses in): lexical R@8 0.921, MRR 0.765 (calibration half
# 0.933 / 0.792, held-out 0.909 / 0.740); hybrid R@8 0.971, MRR 0.854 (calibration 0.957 / 0.859,
# held-out 0.985 / 0.848). With issue 28's 11 English covered questions in the calibration half
# (139 with expected entries; lexical retrieval cannot match English words to German entries):
# lexical R@8 0.876, MRR 0.730 (calibration 0.847 / 0.720, held-out unchanged); hybrid R@8 0.966,
# MRR 0.841 (calibration 0.950 / 0.834, held-out unchanged). Refusal without a model at issue 28's operating point (≤ 2 % of the
# covered calibration questions refused; English questions never refused on these signals),
# measured 2026-12-03 with the English calibration questions q-e-/q-er- added, uncovered refused /
# covered wrongly refused: lexical calibration 0.569 / 0.027, held-out 0.667 / 0.091; hybrid
# calibration 0.255 / 0.014, held-out 0.083 / 0.000. Floors leave a margin of about one or two questions.
# (kbnew30's measurement, before the merge with issue 28's English questions and gate:)
#
# lexical R@8 0.921, MRR 0.765 (calibration half 0.933 / 0.792, held-out 0.909 / 0.740); hybrid
# R@8 0.971, MRR 0.854 (calibration 0.957 / 0.859, held-out 0.985 / 0.848). Refusal without a
# model, uncovered refused / covered wrongly refused: lexical calibration 0.792 / 0.048,
# held-out 0.708 / 0.167; hybrid calibration 0.958 / 0.032, held-out 0.708 / 0.136.
# Re-measured on 2026-12-03 after issue 30 items 11-12 (264 entries, 258 questions, 189 with
# expected entries; refusal weights NOT refitted - a refit on the calibration half refused only
# 33 % of its uncovered questions in hybrid mode, see docs/retrieval.md): lexical R@8 0.921, MRR
# 0.773 (calibration 0.930 / 0.795, held-out 0.911 / 0.750); hybrid R@8 0.966, MRR 0.849
# (calibration 0.951 / 0.851, held-out 0.982 / 0.847). Refusal: lexical calibration 0.689 /
# 0.063, held-out 0.524 / 0.117; hybrid calibration 0.889 / 0.063, held-out 0.619 / 0.106 - the
# refusal floors were lowered to these figures less about one question (they were 0.75 / 0.62
# lexical and 0.91 / 0.62 hybrid). Floors leave a margin of about one to three questions.
# Merged (issues 27, 28, 30; 2026-12-03): 264 entries, the goldset with issue 28's English
# questions and issue 30's new ones, issue 28's gate (≤ 2 % of covered calibration questions
# refused). Measured (python of this module's fixture): lexical R@8 0.897, MRR 0.741 (calibration
# 0.876 / 0.733, held-out 0.922 / 0.749); hybrid R@8 0.965, MRR 0.844 (calibration 0.947 / 0.828,
# held-out 0.986 / 0.862). Refusal without a model, uncovered refused / covered wrongly refused:
# lexical calibration 0.354 / 0.038, held-out 0.292 / 0.043; hybrid calibration 0.167 / 0.009,
# held-out 0.083 / 0.000 – the gate now leaves most uncovered questions to the model (whose
# refusal it checks, issue 28), so few are refused before it. Floors leave about one question.
FLOORS = {
    "lexical": {"recall@8": 0.88, "mrr": 0.72,
                "calibration_refused": 0.33, "calibration_wrongly_refused_max": 0.05,
                "heldout_refused": 0.25, "heldout_wrongly_refused_max": 0.06},
    "hybrid": {"recall@8": 0.95, "mrr": 0.83,
               "calibration_refused": 0.14, "calibration_wrongly_refused_max": 0.02,
               "heldout_refused": 0.04, "heldout_wrongly_refused_max": 0.02},
}
FLOORS_PER_HALF = {
    "lexical": {"calibration": {"recall@8": 0.86, "mrr": 0.72}, "heldout": {"recall@8": 0.90, "mrr": 0.73}},
    "hybrid": {"calibration": {"recall@8": 0.93, "mrr": 0.81}, "heldout": {"recall@8": 0.97, "mrr": 0.84}},
}


class _CachedQueries:
    """The built-in model with query vectors remembered: the two evaluations ask the same questions."""

    kind, model, cache_key = BuiltinEmbedder.kind, BuiltinEmbedder.model, BuiltinEmbedder.cache_key

    def __init__(self):
        self.inner = BuiltinEmbedder()
        self.embed_query = lru_cache(maxsize=None)(self.inner.embed_query)

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    entries = load_knowledge_base(SAMPLE_KB).entries
    questions = load_goldset(GOLDSET)
    settings = Settings()
    builtin = BuiltinEmbedder()
    seed = load_seed(SAMPLE_KB, builtin.cache_key)
    hashes = {c.content_hash for e in entries for c in chunk_entry(e, settings.chunk_max_chars)}
    stale = len(hashes - set(seed))
    if stale:
        pytest.fail(f"Embedding-Seed veraltet: {stale} Abschnitte fehlen – tools/pv-agent seed-embeddings ausführen")
    out = {}
    for mode, embedder in (("lexical", None), ("hybrid", _CachedQueries())):
        path = str(tmp_path_factory.mktemp(mode) / "index.db")
        report = build_index(entries, path, settings, embedder, seed=seed if embedder else None)
        assert report.mode == mode and report.embedded == 0
        index = SidecarIndex.open(path)
        retrieval = evaluate_retrieval(index, questions, settings, embedder=embedder)
        refusals = refusal_report(relevance_rows(index, questions, settings, embedder=embedder))
        out[mode] = (retrieval, refusals)
    return out


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_retrieval_floor(measured, mode):
    retrieval, _ = measured[mode]
    overall, floor = retrieval["overall"], FLOORS[mode]
    assert retrieval["mode"] == mode
    assert overall["recall@8"] >= floor["recall@8"] and overall["mrr"] >= floor["mrr"], (mode, overall)


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_retrieval_floor_per_half(measured, mode):
    """Each half on its own: a gain on the half the ranking was tuned on (calibration) must not
    hide a loss on the other."""
    retrieval, _ = measured[mode]
    for half, floor in FLOORS_PER_HALF[mode].items():
        summary = retrieval["per_split"][half]
        assert summary["n"] >= 60, (half, summary)
        assert summary["recall@8"] >= floor["recall@8"] and summary["mrr"] >= floor["mrr"], (mode, half, summary)


@pytest.mark.parametrize("half", ["calibration", "heldout"])
@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_refusal_floor(measured, mode, half):
    _, refusals = measured[mode]
    part, floor = refusals[half], FLOORS[mode]
    assert part["uncovered"]["n"] >= 20, "the goldset's in-domain refusal questions (q-r-…) are missing"
    assert part["uncovered"]["refused"] >= floor[f"{half}_refused"], (mode, half, part)
    assert part["covered"]["wrongly_refused"] <= floor[f"{half}_wrongly_refused_max"], (mode, half, part)


def test_hybrid_beats_lexical(measured):
    """The reason to ship the model: on the same questions, hybrid finds more."""
    lexical, hybrid = measured["lexical"][0]["overall"], measured["hybrid"][0]["overall"]
    assert hybrid["recall@8"] > lexical["recall@8"] and hybrid["mrr"] > lexical["mrr"]
