"""Issue 28: a model that refuses every question must not turn covered questions into "nothing in
the knowledge base". Every goldset question (both halves) goes through ``ask`` on the sample
knowledge base (hybrid, built-in model, vectors from the shipped seed) against the Ollama-API
test server answering "Dazu enthält die Wissensbasis keine Aussage." to everything.

Measured 2026-12-03 (tools/refuse_everything.py, the same run): covered questions ending
``refused`` 1 of 73 (calibration) and 0 of 66 (held-out); an expected entry shown for 68 of 72
and 65 of 66 of the others; uncovered questions still refused 13 of 51 and 2 of 24 — the gate's
operating point (at most 2 % of the covered calibration questions refused, docs/retrieval.md).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import load_goldset
from pv_agent.engine.index.embedders import BuiltinEmbedder
from pv_agent.engine.index.embedding_seed import load_seed
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.kb.loader import load_knowledge_base

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from refuse_everything import refuse_everything  # noqa: E402

SAMPLE_KB = ROOT / "wissensbasis"
# Issue 28's "≤ 1 of the covered questions refused", over both halves together.
MAX_COVERED_REFUSED = 1
# Share of the covered questions ending unanswered that show an expected entry (measured 133 of 137).
MIN_EXPECTED_SHOWN = 0.95
# Uncovered questions still refused at the 2 % point: measured 15 of 75 before the merge with issue
# 30's new entries and questions, 10 after it (2026-12-03; the new entries cover more of what the
# uncovered questions ask about, so the gate calls fewer of them uncovered). Floor: the measured 10.
MIN_UNCOVERED_REFUSED = 10


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    entries = load_knowledge_base(SAMPLE_KB).entries
    builtin = BuiltinEmbedder()
    path = str(tmp_path_factory.mktemp("hybrid") / "index.db")
    report = build_index(entries, path, Settings(), builtin, seed=load_seed(SAMPLE_KB, builtin.cache_key))
    assert report.mode == "hybrid" and report.embedded == 0, "Embedding-Seed veraltet: tools/pv-agent seed-embeddings"
    index = SidecarIndex.open(path)
    try:
        yield refuse_everything(index, load_goldset(SAMPLE_KB / "goldset.yaml"))
    finally:
        index.close()


def test_the_model_was_asked(rows):
    assert sum(r["chat_calls"] for r in rows) >= len(rows) - 5  # all but the few the first gate stops


def test_covered_questions_are_not_refused_on_the_models_word(rows):
    covered = [r for r in rows if r["group"] == "covered"]
    assert len(covered) >= 120 and {r["split"] for r in covered} == {"calibration", "heldout"}
    refused = [r["id"] for r in covered if r["state"] == "refused"]
    assert len(refused) <= MAX_COVERED_REFUSED, refused


def test_covered_questions_show_an_expected_entry(rows):
    kept = [r for r in rows if r["group"] == "covered" and r["state"] == "unanswered"]
    assert kept
    shown = sum(r["expected_shown"] for r in kept)
    assert shown >= MIN_EXPECTED_SHOWN * len(kept), (shown, len(kept))


def test_uncovered_questions_are_refused_or_shown_unchecked(rows):
    uncovered = [r for r in rows if r["group"] == "uncovered"]
    assert {r["state"] for r in uncovered} <= {"refused", "unanswered"}  # never passed off as an answer
    assert sum(r["state"] == "refused" for r in uncovered) >= MIN_UNCOVERED_REFUSED
