"""The fresh held-out question set (wissensbasis/goldset-fresh.yaml) is well-formed: it loads with
the goldset loader, every expected entry exists, every expected figure is written word for word in
one of the question's expected entries, no question repeats one of goldset.yaml, every question is
held out, and it is big enough to report on (>= 60 covered, >= 40 uncovered). No index is built."""
from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
import yaml

from pv_agent.engine.evaluation.retrieval import load_goldset, question_split

KB = Path(__file__).resolve().parents[1] / "wissensbasis"
FRESH_PATH = KB / "goldset-fresh.yaml"
FRESH_RAW = yaml.safe_load(FRESH_PATH.read_text(encoding="utf-8"))
FRESH = load_goldset(FRESH_PATH)
GOLDSET = load_goldset(KB / "goldset.yaml")
COVERED = [q for q in FRESH if q.kind != "refuse"]
UNCOVERED = [q for q in FRESH if q.kind == "refuse"]
# Above this similarity (after lower-casing and dropping punctuation) a question counts as a light
# rephrasing of a goldset question. The closest pair in the file is far below it.
NEAR_DUPLICATE = 0.85


def _entry_text(entry_id: str) -> str:
    path = KB / "dokumente" / f"{entry_id}.md"
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8")) if path.exists() else ""


def _normalised(question: str) -> str:
    return re.sub(r"\W+", " ", question.lower()).strip()


def test_sizes_per_kind():
    assert len(COVERED) >= 60, f"nur {len(COVERED)} abgedeckte Fragen"
    assert len(UNCOVERED) >= 40, f"nur {len(UNCOVERED)} nicht abgedeckte Fragen"
    assert {q.kind for q in COVERED} >= {"answer", "conflict", "survey", "clarify"}


def test_every_question_is_held_out():
    assert not [q.id for q in FRESH if q.split != "heldout" or question_split(q) != "heldout"]


def test_ids_are_unique_and_apart_from_the_goldset():
    ids = [q.id for q in FRESH]
    assert len(ids) == len(set(ids))
    assert not set(ids) & {q.id for q in GOLDSET}


def test_expected_entries_exist():
    missing = [(q.id, eid) for q in FRESH for eid in q.expected_ids if not (KB / "dokumente" / f"{eid}.md").is_file()]
    assert not missing


def test_refusals_expect_nothing_and_say_why():
    assert not [q.id for q in UNCOVERED if q.expected_ids or q.expect_figures]
    assert not [q.id for q in UNCOVERED if not q.note.strip()], "jede refuse-Frage nennt Thema und Grund in note"


def test_covered_questions_expect_entries_and_list_figures():
    raw = {item["id"]: item for item in FRESH_RAW}
    assert not [q.id for q in COVERED if not q.expected_ids]
    assert not [q.id for q in COVERED if not isinstance(raw[q.id].get("expect_figures"), list)]


@pytest.mark.parametrize("question", [q for q in COVERED if q.expect_figures], ids=lambda q: q.id)
def test_each_figure_is_stated_in_an_expected_entry(question):
    text = " ".join(_entry_text(i) for i in question.expected_ids)
    missing = [f for f in question.expect_figures if f not in text]
    assert not missing, f"{missing} steht in keinem von {list(question.expected_ids)}"


def test_no_question_repeats_the_goldset():
    gold = [(q.id, _normalised(q.question)) for q in GOLDSET]
    repeats = []
    for q in FRESH:
        mine = _normalised(q.question)
        for gid, theirs in gold:
            if difflib.SequenceMatcher(None, mine, theirs).ratio() >= NEAR_DUPLICATE:
                repeats.append((q.id, gid))
    assert not repeats


def test_the_near_duplicate_check_catches_a_light_rephrasing():
    """The similarity check is not vacuous: a goldset question with a typo fixed and a word swapped is caught."""
    original = _normalised("Wie hoch ist der Säumniszuschlag der ÖGK, wenn ich die mBGM zu spät schicke?")
    rephrased = _normalised("Wie hoch is der Säumniszuschlag der ÖGK, wenn ich die mBGM zu spät übermittle?")
    assert difflib.SequenceMatcher(None, rephrased, original).ratio() >= NEAR_DUPLICATE
