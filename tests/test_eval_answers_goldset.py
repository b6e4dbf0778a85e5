"""``eval --answers`` on the real goldset (every question whose answer has figures has ``expect_figures``)
against the scripted Ollama-API server: a model that states the expected figures scores 1.0 on
``expected_figures_recall``, one that writes a wrong figure does not. The drafts cite the
question's expected entries and are chosen by the question the request carries."""
from __future__ import annotations

from pathlib import Path

import pytest

from pv_agent.engine import figures as fg
from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.retrieval import GOLDSET_TODAY, load_goldset
from pv_agent.engine.evaluation.answers import ANSWERING_STATES, ItemResult, evaluate_answers, metrics
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply

KB = Path(__file__).resolve().parents[1] / "wissensbasis"
GOLDSET = load_goldset(KB / "goldset.yaml")
KEYED = [q for q in GOLDSET if q.expect_figures]


def test_the_goldset_has_answer_keys():
    # questions without figures ("Darf ich auch zum 15. kündigen?") have no key; refusals never
    assert len(KEYED) >= 100 and not any(q.kind == "refuse" for q in KEYED)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("goldset") / "index.db")
    build_index(load_knowledge_base(KB).entries, path, Settings(), None, full=True)  # lexical: fast, no model
    idx = SidecarIndex.open(path)
    yield idx
    idx.close()


def wrong(figure: str) -> str:
    """The figure with its number changed (1.095 € → 1.096 €, 17 % → 18 %)."""
    f = fg.extract(figure)[0]
    digits = [i for i, c in enumerate(figure) if c.isdigit()]
    i = digits[-1] if f.kind != "date" else digits[0]
    return figure[:i] + str((int(figure[i]) + 1) % 10) + figure[i + 1:]


def _draft(question, figures) -> str:
    cite = question.expected_ids[0] if question.expected_ids else "pv-ab-01"
    return "Laut Wissensbasis gilt: " + ", ".join(figures) + f" [{cite}]."


def _run(index, drafts: dict[str, str], questions) -> dict:
    def reply_for(body: dict) -> Reply | None:
        asked = " ".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")
        # the longest question found in the request (a question may be part of another one)
        found = max((q for q in drafts if q in asked), key=len, default=None)
        return Reply(content=drafts[found]) if found else None

    with OllamaAPIServer() as srv:
        srv.reply_for = reply_for
        srv.default_reply = Reply(content="Dazu enthält die Wissensbasis keine Aussage.")
        return evaluate_answers(questions, index, Settings(ollama_url=srv.url, chat_timeout=5),
                                now=GOLDSET_TODAY)


def test_drafts_stating_the_expected_figures_score_full_recall(index):
    """Every question that reaches the model scores all its key figures. A few questions end
    before the model (the lexical index's relevance gates refuse them): a refusal states none of
    its figures, so the run's recall is exactly the answering questions' share of the key."""
    report = _run(index, {q.question: _draft(q, q.expect_figures) for q in KEYED}, KEYED)
    items = report["items"]
    answering = [i for i in items if i["state"] in ANSWERING_STATES]
    # 0.95 until December 2026; the goldset now also asks in English (q-n-004, q-n-030, q-n-046),
    # which the lexical (German) gate refuses: 126 of 133 reach the model on 2026-12-03; with issue 28's
    # English calibration questions merged in, 132 of 144 (91.7 %).
    assert len(answering) >= 0.91 * len(items), {i["id"]: i["state"] for i in items if i not in answering}
    assert all(i["found_figures"] == i["expect_figures"] for i in answering)
    answered_only = metrics([ItemResult(**i) for i in answering])
    assert answered_only["expected_figures_recall"] == 1.0
    assert answered_only["all_expected_figures_rate"] == 1.0
    share = sum(len(i["expect_figures"]) for i in answering) / sum(len(i["expect_figures"]) for i in items)
    assert report["metrics"]["expected_figures_recall"] == round(share, 4)


def test_a_wrong_figure_lowers_the_recall(index):
    questions = KEYED[:30]
    drafts = {q.question: _draft(q, [wrong(q.expect_figures[0]), *q.expect_figures[1:]]) for q in questions}
    report = _run(index, drafts, questions)
    items = {i["id"]: i for i in report["items"]}
    assert sum(i["state"] in ANSWERING_STATES for i in items.values()) >= 25
    for q in questions:
        assert q.expect_figures[0] not in items[q.id]["found_figures"], (q.id, items[q.id])
    m = report["metrics"]
    assert m["expected_figures_recall"] < 1.0 and m["all_expected_figures_rate"] == 0.0
