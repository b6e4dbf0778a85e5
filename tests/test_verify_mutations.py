"""Mutation testing of the answer verifier (issue 27, "Done when").

Right drafts – the adversarial suite's and the hand-checked realistic ones – are turned into
wrong drafts by tests/mutations.py; the verifier must accept the right ones and reject the
wrong ones at the rates below. Mutations of a right draft the verifier rejects are not counted
(they would be rejected for the wrong reason). The minimum counts keep the test from passing
on too few mutations. ``tools/mutation_report.py`` prints the same numbers with the escapes.
"""
from __future__ import annotations

import pytest

from mutation_cases import REALISTIC_SPLITS, REPORTED, cases, measure
from mutations import KINDS

# Issue 27's "Done when" targets. They are NOT met (docs/verification.md, §12): on report11, 72 drafts
# on new questions written on prompt v3 (the model names the cell of each figure), measured once,
# the verifier accepts 72 % of the right drafts and 0.5–12 % of the mutations per kind.
ISSUE_TARGET_RIGHT_OK = 0.95
ISSUE_TARGET_ACCEPTED = {"other_row": 0.02, "other_year": 0.02, "period": 0.02, "digits": 0.0, "swap": 0.0,
                         "neighbour_citation": 0.02}
# What CI asserts: the rates measured once on report11 + adversarial (2026-12-07, sixth round; report11
# was written, played and hand-checked by helpers who never saw the verifier, after the tuning on
# report10 and the earlier splits; tools/mutation_report.py --split report11), rounded up to the next
# step, so that a change making the verifier worse fails. Tighten them as it improves.
RIGHT_OK_MIN = 0.72  # report11 alone: measured 52/72 = 72.2 %
MAX_ACCEPTED = {  # share of the mutations of each kind the verifier may accept (measured in brackets)
    "other_row": 0.055,  # 8/147 = 5.4 %
    "other_year": 0.035,  # 2/64 = 3.1 %
    "period": 0.035,  # 1/31 = 3.2 %
    "digits": 0.006,  # 3/577 = 0.5 %
    "swap": 0.12,  # 8/68 = 11.8 %
    # 8/110 = 7.3 % measured once; 1/110 since a bracket's entry must hold its figure (read on
    # report11's escapes after its measurement – §12)
    "neighbour_citation": 0.02,
    # measured only, no target of the issue: a value *and* its cell name moved to another row
    # (the model read the wrong row and copied its label) – 66/103 = 64.1 %, docs/verification.md §12
    "named_row": 0.65,
}
# The splits tuned on keep what they reached (right drafts accepted after the sixth round's tuning):
# a change that makes any of them worse fails, even where the reported split does not notice.
CALIBRATION_RIGHT_MIN = {"report5v3": 63, "report7": 66, "report8": 67, "report9": 66, "report10": 56}
MIN_GENERATED = {  # per kind, over all splits together, so no rate is measured on nothing
    "other_row": 40,
    "other_year": 20,
    "period": 15,
    "digits": 150,
    "swap": 20,
    "neighbour_citation": 30,
    "negation": 10,
    "named_row": 60,  # only drafts written on prompt v3 name their cells
}
MIN_REALISTIC_DRAFTS = 45  # the reported split (and ≥ 60 over all realistic splits, below)


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
    drafts = _together(measured, REPORTED).drafts
    assert drafts >= MIN_REALISTIC_DRAFTS
    assert sum(len(cases(s)) for s in REALISTIC_SPLITS) >= 60


@pytest.mark.parametrize("splits", [REPORTED], ids=["+".join(REPORTED)])
def test_right_realistic_drafts_are_accepted(measured, splits):
    m = _together(measured, splits)
    ok, total = m.right_ok, m.drafts
    assert total, f"no right drafts in {splits}"
    alarms = "\n".join(f"{a['id']}: {'; '.join(a['reasons'])}" for a in m.false_alarms)
    assert ok / total >= RIGHT_OK_MIN, f"{ok}/{total} right drafts accepted ({ok / total:.1%}):\n{alarms}"


@pytest.mark.parametrize("split", sorted(CALIBRATION_RIGHT_MIN))
def test_calibration_right_drafts_do_not_regress(split):
    m = measure(cases(split))
    alarms = "\n".join(f"{a['id']}: {'; '.join(a['reasons'])}" for a in m.false_alarms)
    assert m.right_ok >= CALIBRATION_RIGHT_MIN[split], f"{m.right_ok}/{m.drafts} right drafts accepted:\n{alarms}"


def test_adversarial_right_drafts_stay_accepted(measured):
    ok, total, alarms = measured["adversarial"].right_ok, measured["adversarial"].drafts, measured["adversarial"].false_alarms
    assert total >= 40 and ok == total, alarms


def test_every_kind_has_enough_mutations(measured):
    generated = dict(_together(measured, REPORTED + ("adversarial",)).generated)
    short = {k: generated.get(k, 0) for k in KINDS if generated.get(k, 0) < MIN_GENERATED[k]}
    assert not short, f"too few mutations (needed {MIN_GENERATED}): {short}"


@pytest.mark.parametrize("kind", sorted(MAX_ACCEPTED))
def test_wrong_drafts_are_rejected(measured, kind):
    m = _together(measured, REPORTED + ("adversarial",))
    escapes = [e for e in m.escapes if e["kind"] == kind]
    shown = "\n".join(f"{e['id']}: {e['mutated'][:160]}" for e in escapes[:15])
    rate, accepted, generated = m.rate(kind), m.accepted[kind], m.generated[kind]  # plain numbers in the report
    assert rate <= MAX_ACCEPTED[kind], (
        f"{kind}: {accepted}/{generated} accepted ({rate:.1%}, at most {MAX_ACCEPTED[kind]:.0%}):\n{shown}")
