"""verify_ms on the goldset contexts: for every goldset question with expected entries, the
context ``ask`` would build (lexical retrieval over the shipped knowledge base), a draft that
states up to three figures-bearing lines of each block with its citation, and the time of
``verify()``. Prints one JSON object on stdout.

Wall-clock ``verify_ms`` and the thread's CPU time ``verify_cpu_ms`` (on a shared machine the
wall clock includes waiting for a core). ``cold``: the first check of a context with every
cache emptied (every cited block parsed, as in a fresh process); ``steady``: the first check of
each question in a process that checked the goldset questions before it (facts are cached per
table row and list item, so blocks of entries seen before reuse them); ``warm``: the repeated
checks (the regeneration of the same question).

    .venv/bin/python tools/verify_bench.py [--repeat 5]

Target (issue 13): p95 ≤ 20 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pv_agent.engine.answer.verification import facts as fc  # noqa: E402
from pv_agent.engine import figures as fg  # noqa: E402
from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.engine.answer.context import build_context  # noqa: E402
from pv_agent.engine.evaluation.retrieval import load_goldset  # noqa: E402
from pv_agent.engine.index.indexer import build_index  # noqa: E402
from pv_agent.engine.kb.loader import load_knowledge_base  # noqa: E402
from pv_agent.engine.ollama import OllamaClient  # noqa: E402
from pv_agent.engine.retrieval.retrieve import retrieve  # noqa: E402
from pv_agent.engine.index.sqlite_store import SidecarIndex# noqa: E402
from pv_agent.engine.kb import markdown as md_module  # noqa: E402
from pv_agent.engine.answer.verification import verify  # noqa: E402
from pv_agent.tests.ollama_api_server import OllamaAPIServer  # noqa: E402


def draft_for(context, blocks: int | None = None) -> str:
    """What a careful model writes: per block up to three statements with figures, each citing
    its block: a table cell as "row (column): value", a list item or sentence as it stands."""
    from pv_agent.engine.kb import markdown as md

    parts = []
    for b in context.blocks[:blocks]:
        lines = []
        for node in md.parse(b.text):
            if node.kind == "table":
                for row in node.rows:
                    for h, cell in list(zip(node.header, row))[1:]:
                        lines.append(f"{node.header[0]} {row[0]} ({h}): {cell}")
            elif node.kind in ("item", "paragraph"):
                lines.extend(md.sentences(md.plain(node.text)))
        lines = [s for s in lines if any(f.kind != "number" for f in fg.extract(s))][:3]
        parts += [f"{line.rstrip('.')} [{b.entry_id}]." for line in lines]
    return " ".join(parts) or "Dazu enthält die Wissensbasis keine Aussage."


def stats(samples):
    a = np.array(samples)
    return {"p50": round(float(np.percentile(a, 50)), 2), "p95": round(float(np.percentile(a, 95)), 2),
            "max": round(float(a.max()), 2), "samples": len(samples)}


def clear_caches() -> None:
    """Every per-content cache of the engine, as in a fresh process: the facts of blocks and rows,
    the parses, and the memoised word and figure helpers too – a cold check pays for them all."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("pv_agent.engine"):
            continue
        for obj in list(vars(module).values()):
            if callable(getattr(obj, "cache_clear", None)) and getattr(obj, "__module__", "") == name \
                    and obj is not md_module._parser:  # the markdown parser itself is set up once per process
                obj.cache_clear()
    fc.clear_fact_caches()


def timed(draft, context, question):
    started, cpu = time.perf_counter(), time.thread_time()
    result = verify(draft, context, question=question)
    return result, (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000


def run(index, goldset, settings, repeat: int, cited_blocks: int | None) -> dict:
    cases = []
    for q in goldset:
        hits = retrieve(index, q.question, settings, embedder=None, k=settings.top_k).hits
        context = build_context(hits, settings, system_chars=3000, question=q.question)
        cases.append((q, context, draft_for(context, cited_blocks)))
    wall = {"cold": [], "steady": [], "warm": []}
    cpu = {"cold": [], "steady": [], "warm": []}
    checked = ok = 0
    for q, context, draft in cases:
        clear_caches()
        for n in range(repeat):
            result, ms, cpu_ms = timed(draft, context, q.question)
            wall["warm" if n else "cold"].append(ms)
            cpu["warm" if n else "cold"].append(cpu_ms)
        checked += result.checked_figures
        ok += result.ok
    # steady: a long-running worker – each question checked for the first time, with the
    # caches holding what the questions before it left (the same or other blocks of the same
    # entries, rows and items shared by them), never this question's own earlier check
    clear_caches()
    for q, context, draft in cases:
        _, ms, cpu_ms = timed(draft, context, q.question)
        wall["steady"].append(ms)
        cpu["steady"].append(cpu_ms)
    return {
        "verify_ms": {k: stats(v) for k, v in wall.items()},
        # CPU time of the checking thread: the same work without the waiting of a busy machine
        "verify_cpu_ms": {k: stats(v) for k, v in cpu.items()},
        "figures_checked_per_question": round(checked / len(goldset), 1),
        "quoting_drafts_passing": f"{ok}/{len(goldset)}",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--realistic", metavar="SPLIT", help="instead: the hand-checked realistic drafts of a split "
                    "of tests/data/realistic_drafts (e.g. report8), each cold (every cache emptied) and again")
    args = ap.parse_args(argv)
    print(json.dumps(realistic(args.realistic) if args.realistic else measure(args.repeat), ensure_ascii=False))
    return 0


def realistic(split: str) -> dict:
    """verify_ms on drafts strong models wrote (docs/verification.md §11): p95 thread CPU."""
    sys.path.insert(0, str(ROOT / "tests"))
    from mutation_cases import cases

    cold, steady = [], []
    for case in cases(split):
        clear_caches()
        for samples in (cold, steady):
            started = time.thread_time()
            verify(case.draft, case.context, question=case.question)
            samples.append((time.thread_time() - started) * 1000)
    return {"split": split, "drafts": len(cold), "verify_cpu_ms": {"cold": stats(cold), "steady": stats(steady)},
            "target_p95_ms": 20.0, "load_average": [round(x, 2) for x in os.getloadavg()]}


def measure(repeat: int = 5) -> dict:
    """Both drafts over the goldset contexts of the shipped knowledge base (see the module doc)."""
    loaded = load_knowledge_base(ROOT / "wissensbasis")
    goldset = [q for q in load_goldset(ROOT / "wissensbasis" / "goldset.yaml") if q.expected_ids]
    with tempfile.TemporaryDirectory() as tmp, OllamaAPIServer() as srv:
        settings = Settings(ollama_url=srv.url)
        path = str(Path(tmp) / "index.db")
        build_index(loaded.entries, path, settings, embedder=OllamaClient(settings))
        index = SidecarIndex.open(path)
        runs = {}
        for name, cited_blocks in (("every_block_cited", None), ("top_2_blocks_cited", 2)):
            runs[name] = run(index, goldset, settings, repeat, cited_blocks)
        index.close()
    return {
        "questions": len(goldset), "repeat": repeat, **runs, "target_p95_ms": 20.0,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    sys.exit(main())
