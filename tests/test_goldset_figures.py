"""Every answerable goldset question names the figures a correct answer must state, and each
figure is written, word for word, in one of the entries the question expects – so an answer
that states it can cite it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

KB = Path(__file__).resolve().parents[1] / "wissensbasis"
GOLDSET = yaml.safe_load((KB / "goldset.yaml").read_text(encoding="utf-8"))
ANSWERABLE = [q for q in GOLDSET if q.get("kind", "answer") != "refuse"]


def _entry_text(entry_id: str) -> str:
    path = KB / "dokumente" / f"{entry_id}.md"
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8")) if path.exists() else ""


def test_ids_are_unique():
    ids = [q["id"] for q in GOLDSET]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("question", ANSWERABLE, ids=lambda q: q["id"])
def test_answerable_question_lists_its_figures(question):
    figures = question.get("expect_figures")
    assert isinstance(figures, list), "expect_figures fehlt oder ist keine Liste"
    assert all(isinstance(f, str) and f.strip() for f in figures)


@pytest.mark.parametrize("question", [q for q in ANSWERABLE if q.get("expect_figures")], ids=lambda q: q["id"])
def test_each_figure_is_stated_in_an_expected_entry(question):
    text = " ".join(_entry_text(i) for i in question["expected_ids"])
    assert text, f"keiner der erwarteten Einträge existiert: {question['expected_ids']}"
    missing = [f for f in question["expect_figures"] if f not in text]
    assert not missing, f"{missing} steht in keinem von {question['expected_ids']}"


def test_refusals_carry_no_figures():
    assert not [q["id"] for q in GOLDSET if q.get("kind") == "refuse" and q.get("expect_figures")]
