"""Recall@50 and latency of the sign-bit first stage against the number of rescored candidates,
on clustered synthetic vectors (tools/synthcorpus.VectorSpace): the curve behind
``DenseMatrix.RESCORE_SHARE`` (docs/benchmarks.md).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tools/dense_budget_curve.py --n 171000 --dim 1024 --pools 1000 2000 4000 8000 16000
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pv_agent.engine.index.dense import DenseMatrix# noqa: E402
from tools.synthcorpus import VectorSpace  # noqa: E402


def clustered(n: int, dim: int, seed: int, questions: int = 100):
    entries = [f"e{i}" for i in range(max(1, n // 10))]
    space = VectorSpace(entries, seed, dim)
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(entries), n)
    kinds = rng.choice(list(VectorSpace.KINDS), n, p=[0.8, 0.1, 0.1]).tolist()
    matrix = np.vstack([
        space.chunk_vectors([entries[r] for r in rows[s:s + 8192]], [int(r % 21) for r in rows[s:s + 8192]], kinds[s:s + 8192])
        for s in range(0, n, 8192)
    ])
    asked = rng.integers(0, len(entries), questions)
    return matrix, np.array([space.query_vector(entries[r], int(r % 21)) for r in asked])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=171_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--pools", type=int, nargs="+", default=[1000, 2000, 4000, 8000, 16000])
    args = parser.parse_args()
    matrix, questions = clustered(args.n, args.dim, args.seed)
    n = len(matrix)
    exact = [set(np.argpartition(matrix @ q, n - 50)[n - 50:].tolist()) for q in questions]
    dense = DenseMatrix(np.arange(n), matrix)
    print(f"n {n}, dim {args.dim}, seed {args.seed}; the rule in DenseMatrix.candidates(50) gives {dense.candidates(50)}")
    for pool in args.pools:
        if pool >= n:
            continue
        dense.candidates = lambda limit, pool=pool: pool
        started = time.perf_counter()
        recall = [len({r for r, _ in dense.search(q, 50)} & ex) / 50 for q, ex in zip(questions, exact)]
        ms = (time.perf_counter() - started) * 1000 / len(questions)
        print(f"candidates {pool:>6} ({pool / n:6.2%}): recall@50 mean {np.mean(recall):.4f}, min {min(recall):.2f}, {ms:.2f} ms/query")
    return 0


if __name__ == "__main__":
    sys.exit(main())
