"""Retrieval evaluation on a goldset (design.md §6): Recall@k, MRR and hit rate, overall and per kind.

Only ranked hits count for @k; ``cross_refs`` expansions are context, not ranking.
Questions of kind ``refuse`` have no expected entries and are left out of the retrieval
figures (the answer evaluation measures whether they are refused).
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import numpy as np
import yaml

from ..retrieval.retrieve import retrieve
from ..retrieval.timeframe import asked_year

KINDS = ("answer", "refuse", "conflict", "survey", "clarify")
K_VALUES = (1, 3, 8)
# The goldset was written for the knowledge base's state of 2026; "heuer" means 2026.
GOLDSET_TODAY = date(2026, 6, 30)


@dataclass(frozen=True)
class GoldQuestion:
    id: str
    question: str
    expected_ids: tuple[str, ...]
    kind: str
    year: int | None = None
    note: str = ""
    expect_figures: tuple[str, ...] = ()  # answer key: figures a correct answer states ("6.930 €", "17 %")
    split: str = ""  # "calibration" | "heldout"; unset: by a hash of the id (see question_split)


SPLITS = ("calibration", "heldout")


def question_split(q: GoldQuestion) -> str:
    """The half a question belongs to: its ``split`` field, else a fixed hash of its id, so
    questions appended later fall into a half without anyone choosing."""
    if q.split:
        return q.split
    return SPLITS[int(hashlib.sha256(q.id.encode("utf-8")).hexdigest(), 16) % 2]


def load_goldset(path: str | Path) -> list[GoldQuestion]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or []
    questions = []
    for n, item in enumerate(data, start=1):
        kind = item.get("kind", "answer")
        if kind not in KINDS:
            raise ValueError(f"{path}: Frage {n} ({item.get('id')}): unbekannte kind '{kind}'")
        if item.get("split") not in (None, "", *SPLITS):
            raise ValueError(f"{path}: Frage {n} ({item.get('id')}): unbekannter split '{item.get('split')}'")
        questions.append(
            GoldQuestion(
                id=str(item["id"]),
                question=str(item["question"]),
                expected_ids=tuple(item.get("expected_ids") or ()),
                kind=kind,
                year=item.get("year"),
                note=str(item.get("note") or ""),
                expect_figures=tuple(str(f) for f in item.get("expect_figures") or ()),
                split=str(item.get("split") or ""),
            )
        )
    return questions


def evaluate_retrieval(index, questions: list[GoldQuestion], settings, embedder=None, today: date | None = None,
                       half: str | None = None) -> dict:
    """``today`` fixes the date questions without a year are read against (default: the
    goldset's reference date, so results do not change when the calendar does).

    Figures come overall, per kind and per half (``per_split``: calibration / heldout by
    ``question_split``). ``half`` evaluates one half only: tuning looks at the calibration
    half without the held-out figures being computed at all."""
    today = today or GOLDSET_TODAY
    if half is not None:
        if half not in SPLITS:
            raise ValueError(f"unbekannte Hälfte '{half}' (erwartet: {', '.join(SPLITS)})")
        questions = [q for q in questions if question_split(q) == half]
    rows = []
    for q in questions:
        started = time.monotonic()
        year = asked_year(q.question, today).year
        result = retrieve(index, q.question, settings, embedder=embedder, k=max(K_VALUES), year=year)
        ms = (time.monotonic() - started) * 1000
        ranked = [h.entry_id for h in result.hits if h.via == "retrieval"]
        row = {"id": q.id, "kind": q.kind, "split": question_split(q), "question": q.question,
               "expected": list(q.expected_ids), "retrieved": ranked, "mode": result.mode, "ms": round(ms, 2)}
        if q.expected_ids:
            expected = set(q.expected_ids)
            for k in K_VALUES:
                row[f"recall@{k}"] = len(expected & set(ranked[:k])) / len(expected)
            first = next((i for i, eid in enumerate(ranked, start=1) if eid in expected), None)
            row["rr"] = 1.0 / first if first else 0.0
            row["hit"] = first is not None
            row["missing"] = sorted(expected - set(ranked[: max(K_VALUES)]))
        rows.append(row)
    return {
        "mode": rows[0]["mode"] if rows else "",
        "questions": len(rows),
        "overall": _summary([r for r in rows if "rr" in r]),
        "per_kind": {kind: _summary([r for r in rows if r["kind"] == kind and "rr" in r]) for kind in KINDS if kind != "refuse"},
        "per_split": {split: _summary([r for r in rows if r["split"] == split and "rr" in r]) for split in SPLITS},
        "half": half or "",
        "latency_ms": _latency([r["ms"] for r in rows]),
        "rows": rows,
    }


def _summary(rows: list[dict]) -> dict:
    if not rows:
        return {"n": 0}
    n = len(rows)
    out = {"n": n}
    for k in K_VALUES:
        out[f"recall@{k}"] = round(sum(r[f"recall@{k}"] for r in rows) / n, 3)
    out["mrr"] = round(sum(r["rr"] for r in rows) / n, 3)
    out["hit_rate"] = round(sum(r["hit"] for r in rows) / n, 3)
    return out


def _latency(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 2)

    return {"p50": pct(0.5), "p95": pct(0.95), "max": round(ordered[-1], 2)}


# -- relevance without a language model (gates.supported) -----------------------------------
# The in-domain refusal questions are those of kind "refuse" with a ``split``: payroll topics
# the knowledge base deliberately leaves out. The older refusal questions without one include
# answer-level refusals ("the percentage is not stated") that no retrieval signal can catch;
# they are reported apart.
REFUSAL_GROUPS = ("uncovered", "covered", "other_refuse")


def relevance_rows(index, questions: list[GoldQuestion], settings, embedder=None, today: date | None = None) -> list[dict]:
    """Per question: the signals of gates.supported on the retrieval ``ask`` does (plan, sub-queries)."""
    from ..answer.ask import _retrieve
    from ..retrieval.gates import relevance_signals, supported
    from ..retrieval.planner import plan

    today = today or GOLDSET_TODAY
    rows = []
    for q in questions:
        the_plan = plan(q.question, now=today)
        year = the_plan.years[0] if len(the_plan.years) == 1 else (None if the_plan.years else today.year)
        result = _retrieve(index, the_plan, settings, embedder, default_year=year)
        group = "covered" if q.kind != "refuse" else ("uncovered" if q.split else "other_refuse")
        rows.append({"id": q.id, "group": group, "split": question_split(q), "mode": result.mode,
                     "supported": supported(result, settings), **relevance_signals(result)})
    return rows


def refusal_report(rows: list[dict]) -> dict:
    """Per half: share of uncovered questions refused, share of covered ones wrongly refused."""
    out = {}
    for half in SPLITS:
        part = [r for r in rows if r["split"] == half]
        entry = {}
        for group in REFUSAL_GROUPS:
            members = [r for r in part if r["group"] == group]
            refused = [r["id"] for r in members if not r["supported"]]
            key = "wrongly_refused" if group == "covered" else "refused"
            entry[group] = {"n": len(members), key: round(len(refused) / len(members), 3) if members else None,
                            "ids": refused if group == "covered" else [r["id"] for r in members if r["supported"]]}
        out[half] = entry
    return out


# Ridge penalty of the calibration's logistic regression (on standardised features, per
# question summed): with ~100 calibration questions and two or three features it keeps the
# weights from chasing single questions.
CALIBRATION_L2 = 1.0
# When no uncovered calibration question scores below the first covered one kept, the boundary
# sits CALIBRATION_MARGIN below that covered question; otherwise midway between the two.
CALIBRATION_MARGIN = 0.01


# Share of covered calibration questions the boundary may refuse, per mode: issue 28's 2 %. The
# gate also checks a model's "nothing in the knowledge base" (answer.ask: covered → "unanswered"
# with the matching entries), and a false refusal makes a clerk stop looking, so precision on
# "covered" comes first; it refuses fewer uncovered questions than issue 14's 5 % did
# (docs/retrieval.md has both operating points).
CALIBRATION_MAX_WRONG = {"hybrid": 0.02, "lexical": 0.02}
# The features of each mode's score, in gates.support_features' order (Settings refuse_<mode>_<name>).
SUPPORT_FEATURE_NAMES = {"hybrid": ("topic", "coverage", "cosine"), "lexical": ("topic", "coverage")}


def calibrate_relevance(rows: list[dict], settings, max_wrong: float | None = None) -> dict:
    """Weights and bias of gates.support_score for the rows' mode, from the CALIBRATION half
    only: a ridge-regularised logistic regression of "uncovered" on the mode's features
    (gates.support_features), turned into a support score, whose bias is then moved so that at
    most ``max_wrong`` (default: the mode's CALIBRATION_MAX_WRONG) of the covered calibration
    questions score below zero, midway between the first covered question kept and the highest
    uncovered question refused. Rows from ``relevance_rows``; returns Settings field values."""
    from ..retrieval.gates import support_features

    # questions in another language are supported by rule (gates.supported_by_signals), not by the score
    cal = [r for r in rows if r["split"] == "calibration" and r["group"] in ("covered", "uncovered") and r["hits"]
           and not r.get("foreign_language")]
    mode = support_features(cal[0], settings)[0] if cal else "lexical"
    x = np.array([support_features(r, settings)[1] for r in cal], dtype=float)
    y = np.array([r["group"] == "uncovered" for r in cal], dtype=float)
    weights, bias = support_score_fit(x, y, CALIBRATION_MAX_WRONG[mode] if max_wrong is None else max_wrong)
    found = {f"refuse_{mode}_bias": round(float(bias), 4)}
    found.update({f"refuse_{mode}_{n}": round(float(w), 4) for n, w in zip(SUPPORT_FEATURE_NAMES[mode], weights)})
    return found


def support_score_fit(x: np.ndarray, y: np.ndarray, max_wrong: float, l2: float = CALIBRATION_L2) -> tuple[np.ndarray, float]:
    """(weights, bias) of a support score (high = supported) on features ``x``, ``y`` = 1 for
    uncovered questions: the logistic regression's direction, the bias placed so that at most
    ``max_wrong`` of the covered rows score below zero. Also used by tools/refusal_cv.py."""
    weights, _ = _logistic(x, y, l2)
    weights = -weights  # the support score: high = supported
    covered = np.sort(x[y == 0] @ weights)
    kept = covered[int(max_wrong * len(covered))]  # the first covered question kept
    # every boundary between the highest uncovered question refused and ``kept`` refuses the
    # same calibration questions: take the middle (the widest margin to both sides)
    uncovered = x[y == 1] @ weights
    refused = uncovered[uncovered < kept]
    bias = -(kept + refused.max()) / 2 if len(refused) else CALIBRATION_MARGIN - kept
    return weights, float(bias)


def _logistic(x: np.ndarray, y: np.ndarray, l2: float = CALIBRATION_L2) -> tuple[np.ndarray, float]:
    """Ridge logistic regression by Newton's method on standardised features (deterministic);
    returns weights and intercept on the features' own scale."""
    mean, sd = x.mean(axis=0), x.std(axis=0)
    sd[sd == 0] = 1.0
    z = np.c_[np.ones(len(x)), (x - mean) / sd]
    w = np.zeros(z.shape[1])
    penalty = np.diag([0.0] + [l2] * (z.shape[1] - 1))
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty @ w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + penalty
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    weights = w[1:] / sd
    return weights, float(w[0] - weights @ mean)
