"""The right drafts the mutation test runs on, and the measurement itself (rates per kind).

Two sources: the right drafts of ``CASES`` in test_verify_adversarial.py (split
``adversarial``, on the shipped knowledge base) and the hand-checked realistic drafts in
tests/data/realistic_drafts/<split>/ (written by helper sessions playing a strong model on the
prompts ``ask`` really sends). ``calibration`` is for tuning the verifier; ``heldout`` and
``fresh`` are the ones to report.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pv_agent.engine.answer.context import Context, ContextBlock

from mutations import KINDS, Mutation, mutate, verifier_verdict

DATA = Path(__file__).resolve().parent / "data" / "realistic_drafts"
REALISTIC_SPLITS = ("calibration", "heldout", "fresh", "report", "report2", "report3", "report4", "report5", "report6",
                    "report5v3", "report7", "report8", "report9", "report10", "report11")
SPLITS = REALISTIC_SPLITS + ("adversarial",)
# The verifier's weights were calibrated on calibration, then held-out and fresh (their false
# alarms and escapes were read), then in the second round on all four splits including "report".
# "report2" (53 drafts on questions never used before, played and hand-checked by helpers who
# never saw the verifier) was the second round's report, measured once; in the third round its
# false alarms and escapes were read and tuned on. "report3" (62 drafts, two players, two
# checkers) was the third round's report, measured once (right 68.9 %), then read and tuned on.
# "report4" (51 drafts on the last unused goldset answer questions, two players and two checkers,
# none of whom saw the verifier) was the third round's report, measured once, then tuned on. The
# fourth round: "report5" (72 drafts on new clerk questions) was measured once, then read and tuned
# on; "report6" (71 drafts on further new questions, written, played and checked by helpers who
# never saw the verifier) was the fourth round's report, measured once after.
# The fifth round changed the contract: the system prompt v3 asks the model to name the cell of
# every figure ("[pv-gfb-02 · Betrag · 2026]") and to mark the clerk's figures "(laut Frage)".
# "report5v3" (report5's questions, prompts captured again on v3, two players, two checkers) is its
# calibration data; "report7" (72 new clerk questions, `q-u-…`, written, played and hand-checked
# by helpers who never saw the verifier, on v3) was measured once, then read and tuned on;
# "report8" (72 further new questions, `q-v-…`, made the same way) was measured once after that
# tuning, then read and tuned on too; "report9" (72 more, `q-w-…`) was the fifth round's report,
# measured once. The sixth round read and tuned on report9 as well; "report10" (72 new questions,
# `q-x-…`, written, played and hand-checked by helpers who never saw the verifier, on v3) was
# measured once (right 44/72), then read and tuned on too; "report11" (72 more, `q-y-…`, made the
# same way) is the split the rates are reported on, measured once after the last tuning.
CALIBRATION = ("calibration", "heldout", "fresh", "report", "report2", "report3", "report4", "report5", "report6",
               "report5v3", "report7", "report8", "report9", "report10")
REPORTED = ("report11",)


@dataclass
class Case:
    id: str
    split: str
    question: str
    draft: str
    context: Context
    kind: str = ""
    style: str = ""


def context_of(record: dict) -> Context:
    blocks = []
    for b in record["blocks"]:
        b = dict(b)
        b["cross_refs"] = tuple(b.get("cross_refs", ()))
        blocks.append(ContextBlock(**b))
    return Context(blocks=blocks, budget=record["budget"])


def realistic_cases(split: str) -> list[Case]:
    out = []
    for path in sorted((DATA / split).glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        if rec["hand_check"].startswith("excluded"):
            continue  # recorded, not a right draft
        # the question as the model saw it: with the year hint ask adds ("(Gefragt ist der Stand 2027.)")
        out.append(Case(rec["id"], split, rec.get("question_as_seen", rec["question"]), rec["draft"],
                        context_of(rec["context"]), rec.get("kind", ""), rec.get("style", "")))
    return out


def excluded(split: str) -> list[tuple[str, str]]:
    out = []
    for path in sorted((DATA / split).glob("*.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        if rec["hand_check"].startswith("excluded"):
            out.append((rec["id"], rec["hand_check"]))
    return out


def adversarial_cases() -> list[Case]:
    from kb_context import kb_context
    from test_verify_adversarial import CASES

    return [Case(f"adv-{n:03d}", "adversarial", question, draft, kb_context(*blocks))
            for n, (blocks, question, draft, passes, _reason) in enumerate(CASES) if passes]


def cases(split: str) -> list[Case]:
    return adversarial_cases() if split == "adversarial" else realistic_cases(split)


@dataclass
class Measurement:
    drafts: int = 0
    right_ok: int = 0
    false_alarms: list[dict] = field(default_factory=list)  # {id, reasons}
    generated: Counter = field(default_factory=Counter)
    accepted: Counter = field(default_factory=Counter)
    escapes: list[dict] = field(default_factory=list)  # {id, kind, detail, sentence, mutated}
    set_aside: int = 0  # mutations of right drafts the verifier rejected (not counted)

    def rate(self, kind: str) -> float:
        return self.accepted[kind] / self.generated[kind] if self.generated[kind] else 0.0

    def add(self, other: "Measurement") -> "Measurement":
        out = Measurement(self.drafts + other.drafts, self.right_ok + other.right_ok,
                          self.false_alarms + other.false_alarms, self.generated + other.generated,
                          self.accepted + other.accepted, self.escapes + other.escapes,
                          self.set_aside + other.set_aside)
        for k in KINDS:  # keep zero counts, so every kind is reported
            out.generated.setdefault(k, 0)
            out.accepted.setdefault(k, 0)
        return out

    def as_dict(self) -> dict:
        return {"right": {"ok": self.right_ok, "total": self.drafts}, "mutations_set_aside": self.set_aside,
                "kinds": {k: {"generated": self.generated[k], "accepted": self.accepted[k],
                              "rate": round(self.rate(k), 4)} for k in KINDS},
                "false_alarms": self.false_alarms, "escapes": self.escapes}


def reasons(flags: dict) -> list[str]:
    """Why the verifier said no, in one short line each (for the false-alarm list)."""
    out = [f"unsupported {u.get('figure')} ({u.get('reason')}): {u.get('sentence', '')[:90]}"
           for u in flags.get("unsupported_figures", [])]
    out += [f"unknown citation {c}" for c in flags.get("unknown_citations", [])]
    out += [f"conflict {c.get('ids')}" + "".join(f" {k}" for k in ("one_sided", "unmarked", "status_missing") if c.get(k))
            for c in flags.get("conflicts", []) if isinstance(c, dict) and c.get("failing")]
    out += [f"contradicted claim: {c.get('sentence', '')[:90]}" for c in flags.get("claims", [])
            if c.get("state") == "contradicted"]
    for key in ("missing_citations", "leaked_prompt"):
        if flags.get(key):
            out.append(key)
    claims = flags.get("claims", [])
    unsupported = [c for c in claims if c.get("state") == "unsupported"]
    if unsupported and not out:
        out.append(f"{len(unsupported)} of {len(claims)} claims unsupported")
    return out or ["not ok (no flag named)"]


def measure(case_list: list[Case], seed: int = 27) -> Measurement:
    m = Measurement()
    for k in KINDS:
        m.generated[k] = 0
        m.accepted[k] = 0
    for case in case_list:
        m.drafts += 1
        ok, flags = verifier_verdict(case.draft, case.context, case.question)
        mutations = mutate(case.draft, case.context, question=case.question, draft_id=case.id, seed=seed)
        if ok:
            m.right_ok += 1
        else:
            # a right draft the verifier rejects says nothing about its mutations: set aside
            m.false_alarms.append({"id": case.id, "reasons": reasons(flags)})
            m.set_aside += len(mutations)
            continue
        mutation: Mutation
        for mutation in mutations:
            accepted, _ = verifier_verdict(mutation.text, case.context, case.question)
            m.generated[mutation.kind] += 1
            if accepted:
                m.accepted[mutation.kind] += 1
                m.escapes.append({"id": case.id, "kind": mutation.kind, "detail": mutation.detail,
                                  "sentence": mutation.sentence, "mutated": mutation.mutated})
    return m
