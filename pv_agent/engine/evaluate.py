"""Retrieval evaluation on a goldset (design.md §6): Recall@k, MRR and hit rate, overall and per kind.

Only ranked hits count for @k; ``cross_refs`` expansions are context, not ranking.
Questions of kind ``refuse`` have no expected entries and are left out of the retrieval
figures (the answer evaluation measures whether they are refused).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from .retrieve import retrieve
from .timeframe import asked_year

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


def load_goldset(path: str | Path) -> list[GoldQuestion]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or []
    questions = []
    for n, item in enumerate(data, start=1):
        kind = item.get("kind", "answer")
        if kind not in KINDS:
            raise ValueError(f"{path}: Frage {n} ({item.get('id')}): unbekannte kind '{kind}'")
        questions.append(
            GoldQuestion(
                id=str(item["id"]),
                question=str(item["question"]),
                expected_ids=tuple(item.get("expected_ids") or ()),
                kind=kind,
                year=item.get("year"),
                note=str(item.get("note") or ""),
                expect_figures=tuple(str(f) for f in item.get("expect_figures") or ()),
            )
        )
    return questions


def evaluate_retrieval(index, questions: list[GoldQuestion], settings, embedder=None, today: date | None = None) -> dict:
    """``today`` fixes the date questions without a year are read against (default: the
    goldset's reference date, so results do not change when the calendar does)."""
    today = today or GOLDSET_TODAY
    rows = []
    for q in questions:
        started = time.monotonic()
        year = asked_year(q.question, today).year
        result = retrieve(index, q.question, settings, embedder=embedder, k=max(K_VALUES), year=year)
        ms = (time.monotonic() - started) * 1000
        ranked = [h.entry_id for h in result.hits if h.via == "retrieval"]
        row = {"id": q.id, "kind": q.kind, "question": q.question, "expected": list(q.expected_ids),
               "retrieved": ranked, "mode": result.mode, "ms": round(ms, 2)}
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
