"""Mutation testing of the answer verifier (issue 27, "Done when").

Right drafts – the adversarial suite's and the hand-checked realistic ones – are turned into
wrong drafts by tests/mutations.py; the verifier must accept the right ones and reject the
wrong ones at the rates below. Mutations of a right draft the verifier rejects are not counted
(they would be rejected for the wrong reason). The minimum counts keep the test from passing
on too few mutations. ``tools/mutation_report.py`` prints the same numbers with the escapes.
"""
from __future__ import annotations

import pytest

from mutation_cases import REPORTED, cases, measure
from mutations import KINDS

RIGHT_OK_MIN = 0.95  # right realistic drafts (held-out + fresh) the verifier must accept
MAX_ACCEPTED = {  # share of the mutations of each kind the verifier may accept
    "other_row": 0.02,
    "other_year": 0.02,
    "period": 0.02,
    "digits": 0.0,
    "swap": 0.0,
    "neighbour_citation": 0.02,
}
MIN_GENERATED = {  # per kind, over all splits together, so no rate is measured on nothing
    "other_row": 40,
    "other_year": 20,
    "period": 15,
    "digits": 150,
    "swap": 20,
    "neighbour_citation": 30,
    "negation": 10,
}
MIN_REALISTIC_DRAFTS = 60  # held-out + fresh


@pytest.fixture(scope="module")
def measured():
    by_split = {split: measure(cases(split)) for split in REPORTED + ("adversarial",)}
    return by_split


def _together(measured, splits):
    total = None
    for s in splits:
        total = measured[s] if total is None else total.add(measured[s])
    return total


def test_enough_realistic_right_drafts(measured):
    assert _together(measured, REPORTED).drafts >= MIN_REALISTIC_DRAFTS


@pytest.mark.parametrize("splits", [REPORTED, ("heldout",), ("fresh",)], ids=["heldout+fresh", "heldout", "fresh"])
def test_right_realistic_drafts_are_accepted(measured, splits):
    m = _together(measured, splits)
    assert m.drafts, f"no right drafts in {splits}"
    rate = m.right_ok / m.drafts
    alarms = "\n".join(f"{a['id']}: {'; '.join(a['reasons'])}" for a in m.false_alarms)
    assert rate >= RIGHT_OK_MIN, f"{m.right_ok}/{m.drafts} right drafts accepted ({rate:.1%}):\n{alarms}"


def test_adversarial_right_drafts_stay_accepted(measured):
    m = measured["adversarial"]
    assert m.drafts >= 40 and m.right_ok == m.drafts, m.false_alarms


def test_every_kind_has_enough_mutations(measured):
    m = _together(measured, REPORTED + ("adversarial",))
    short = {k: m.generated[k] for k in KINDS if m.generated[k] < MIN_GENERATED[k]}
    assert not short, f"too few mutations (needed {MIN_GENERATED}): {short}"


@pytest.mark.parametrize("kind", sorted(MAX_ACCEPTED))
def test_wrong_drafts_are_rejected(measured, kind):
    m = _together(measured, REPORTED + ("adversarial",))
    escapes = [e for e in m.escapes if e["kind"] == kind]
    shown = "\n".join(f"{e['id']}: {e['mutated'][:160]}" for e in escapes[:15])
    assert m.rate(kind) <= MAX_ACCEPTED[kind], (
        f"{kind}: {m.accepted[kind]}/{m.generated[kind]} accepted ({m.rate(kind):.1%}, at most "
        f"{MAX_ACCEPTED[kind]:.0%}):\n{shown}")
