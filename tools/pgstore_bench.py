"""Sidecar vs PostgreSQL/pgvector side by side: build, single-client latency, and several client
processes querying at once. Figures for docs/pgstore.md.

    .venv/bin/python tools/pgstore_bench.py --dsn "$(tools/pg-test-server dsn)" [--scale 1] [--clients 4]

The corpus is synthetic: the knowledge base's entries copied with varied words until it has
``scale`` × 16,000 chunks (the size design.md §9 measures at), embedded with the test server's
deterministic 1024-dimension hash vectors (no model server needed). The questions are the
goldset's. ``pg_vs_sidecar_benchmark`` is the function; the command line prints its result as JSON.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.engine.evaluation.retrieval import GOLDSET_TODAY, load_goldset  # noqa: E402
from pv_agent.engine.index.target import open_index  # noqa: E402
from pv_agent.engine.index.indexer import build_index  # noqa: E402
from pv_agent.engine.kb.loader import load_knowledge_base  # noqa: E402
from pv_agent.engine.retrieval.retrieve import lexical_terms, retrieve  # noqa: E402
from pv_agent.engine.textnorm import query_terms  # noqa: E402
from pv_agent.engine.retrieval.timeframe import asked_year  # noqa: E402
from pv_agent.tests.ollama_api_server import embed_text  # noqa: E402

CHUNKS_AT_1X = 16_000
DIM = 1024


class HashEmbedder:
    """The Ollama test server's vectors, in process: deterministic, 1024 dimensions."""

    def __init__(self, dim: int = DIM):
        self.dim = dim
        self._memo: dict[str, list[float]] = {}

    def embed(self, texts, model=None):
        out = []
        for t in texts:
            if t not in self._memo:
                self._memo[t] = embed_text(t, self.dim)
            out.append(self._memo[t])
        return out


def synthetic_corpus(scale: float, seed: int = 7):
    """The knowledge base's entries, copied with varied words up to ``scale`` × 16k chunks."""
    entries = load_knowledge_base(ROOT / "wissensbasis").entries
    vocab = sorted({w for e in entries for w in e.body.split() if w.isalpha() and len(w) > 4})
    rng = random.Random(seed)
    per_entry = 740 / 147  # chunks per entry in the knowledge base
    wanted = int(scale * CHUNKS_AT_1X / per_entry)
    out = list(entries)
    n = 0
    while len(out) < wanted:
        base = entries[n % len(entries)]
        n += 1
        lines = [
            line if line.startswith(("#", "|", "-")) or not line.strip() else line + " " + " ".join(rng.sample(vocab, 3))
            for line in base.body.splitlines()
        ]
        body = "\n".join(lines)
        out.append(dataclasses.replace(
            base, id=f"{base.id}-s{n}", title=f"{base.title} ({n})", body=body,
            content_hash=hashlib.sha256(body.encode()).hexdigest(),
        ))
    return out


def _percentiles(samples_ms: list[float]) -> dict:
    samples = sorted(samples_ms)
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 2),
        "n": len(samples),
    }


def _questions():
    return [(q.question, q.year or asked_year(q.question, today=GOLDSET_TODAY).year)
            for q in load_goldset(ROOT / "wissensbasis" / "goldset.yaml")]


def _client(target: str, hybrid: bool, rounds: int, start_at: float, queue) -> None:
    """One client process: opens its own index, waits for the common start, asks every goldset question ``rounds`` times."""
    settings = Settings()
    index = open_index(target)
    embedder = HashEmbedder() if hybrid else None
    questions = _questions()
    for question, year in questions:  # warm up: vocabulary, connections, the question vectors
        retrieve(index, question, settings, embedder=embedder, year=year)
    while time.time() < start_at:
        time.sleep(0.005)
    samples = []
    began = time.perf_counter()
    for _ in range(rounds):
        for question, year in questions:
            t = time.perf_counter()
            retrieve(index, question, settings, embedder=embedder, year=year)
            samples.append((time.perf_counter() - t) * 1000)
    queue.put((samples, time.perf_counter() - began))


def concurrent_clients(target: str, clients: int, rounds: int, hybrid: bool) -> dict:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start_at = time.time() + 20.0  # every process imported and warmed up by then
    procs = [ctx.Process(target=_client, args=(target, hybrid, rounds, start_at, queue)) for _ in range(clients)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    samples = [s for r, _ in results for s in r]
    wall = max(w for _, w in results)
    return {"clients": clients, **_percentiles(samples), "questions_per_s": round(len(samples) / wall, 1)}


def single_client(target: str, hybrid: bool, rounds: int = 3) -> dict:
    settings = Settings()
    index = open_index(target)
    embedder = HashEmbedder() if hybrid else None
    questions = _questions()
    for question, _ in questions[:3]:
        retrieve(index, question, settings, embedder=embedder)
    whole, lexical, dense = [], [], []
    vectors = {q: embedder.embed([q])[0] for q, _ in questions} if hybrid else {}
    for _ in range(rounds):
        for question, year in questions:
            t = time.perf_counter()
            retrieve(index, question, settings, embedder=embedder, year=year)
            whole.append((time.perf_counter() - t) * 1000)
            terms = lexical_terms(query_terms(question), lambda root: index.terms_containing(root, 12))
            t = time.perf_counter()
            index.lexical_search(terms, settings.candidate_pool)
            lexical.append((time.perf_counter() - t) * 1000)
            if hybrid:
                t = time.perf_counter()
                index.dense_search(vectors[question], settings.candidate_pool)
                dense.append((time.perf_counter() - t) * 1000)
    out = {"retrieve": _percentiles(whole), "lexical_search": _percentiles(lexical)}
    if hybrid:
        out["dense_search_top150"] = _percentiles(dense)
    index.close()
    return out


def pg_vs_sidecar_benchmark(dsn: str, scale: float = 1.0, clients: int = 4, rounds: int = 3, workdir: str | None = None,
                            stores=("sqlite", "postgresql")) -> dict:
    """Both stores on the same synthetic corpus: build time and size, single-client latency
    (whole retrieve, lexical and dense search alone), and ``clients`` processes at once."""
    workdir = workdir or tempfile.mkdtemp(prefix="pgstore_bench_")
    entries = synthetic_corpus(scale)
    settings = Settings()
    embedder = HashEmbedder()
    targets = {"sqlite": os.path.join(workdir, "index.db"), "postgresql": dsn}
    result = {"scale": scale, "entries": len(entries), "dim": DIM, "stores": {}}
    for name, target in targets.items():
        if name not in stores:
            continue
        t = time.perf_counter()
        report = build_index(entries, target, settings, embedder, full=True)
        build_s = time.perf_counter() - t
        index = open_index(target)
        stats = index.stats()
        index.close()
        store = {
            "build_s": round(build_s, 1),
            "chunks": report.chunks,
            "size_mb": round(stats["size_bytes"] / 2**20, 1),
            "timings_s": report.timings_s,
            "lexical": single_client(target, hybrid=False, rounds=rounds),
            "hybrid": single_client(target, hybrid=True, rounds=rounds),
            f"{clients}_clients_hybrid": concurrent_clients(target, clients, rounds, hybrid=True),
            "1_client_hybrid": concurrent_clients(target, 1, rounds, hybrid=True),
        }
        result["stores"][name] = store
        print(json.dumps({name: store}, indent=1), file=sys.stderr, flush=True)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="PostgreSQL with pgvector (a scratch database is created there)")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("sqlite", "postgresql"), help="one store only")
    args = parser.parse_args(argv)
    import psycopg2

    conn = psycopg2.connect(args.dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS pv_agent_bench")
        cur.execute("CREATE DATABASE pv_agent_bench")
    conn.close()
    parts = urllib.parse.urlsplit(args.dsn)
    dsn = urllib.parse.urlunsplit(parts._replace(path="/pv_agent_bench"))
    print(json.dumps(pg_vs_sidecar_benchmark(
        dsn, args.scale, args.clients, args.rounds, stores=(args.only,) if args.only else ("sqlite", "postgresql")), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
