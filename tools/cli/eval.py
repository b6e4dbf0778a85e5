"""``pv-agent eval``: measure retrieval (and, with --answers, the answers) on a goldset."""
from __future__ import annotations

from pv_agent.engine.evaluate import K_VALUES, evaluate_retrieval, load_goldset
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.store import IndexError_, SidecarIndex

from ._common import add_index_argument, fail, print_json, settings

NAME = "eval"
HELP = "Goldset auswerten: Recall@k, MRR, Trefferquote (mit --answers auch die Antworten)"


def add_arguments(parser) -> None:
    parser.add_argument("--goldset", default="wissensbasis/goldset.yaml", help="Goldset (YAML)")
    add_index_argument(parser)
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")
    parser.add_argument("--misses", action="store_true", help="verfehlte Fragen auflisten")


def run(args) -> int:
    cfg = settings()
    try:
        index = SidecarIndex.open(args.index)
    except IndexError_ as exc:
        return fail(str(exc))
    report = evaluate_retrieval(index, load_goldset(args.goldset), cfg, embedder=OllamaClient(cfg))
    if args.json:
        print_json(report)
        return 0
    print(f"Retrieval ({report['mode']}), {report['questions']} Fragen")
    header = "".join(f"  R@{k:<5}" for k in K_VALUES) + "  MRR    Treffer  n"
    print(f"{'':<10}{header}")
    for name, summary in [("gesamt", report["overall"]), *report["per_kind"].items()]:
        if not summary.get("n"):
            continue
        cells = "".join(f"  {summary[f'recall@{k}']:<6.3f}" for k in K_VALUES)
        print(f"{name:<10}{cells}  {summary['mrr']:<6.3f} {summary['hit_rate']:<7.3f}  {summary['n']}")
    lat = report["latency_ms"]
    print(f"Latenz retrieve: p50 {lat['p50']} ms, p95 {lat['p95']} ms")
    if args.misses:
        for row in report["rows"]:
            if row.get("missing"):
                print(f"- {row['id']} ({row['kind']}): fehlt {', '.join(row['missing'])} – {row['question']}")
                print(f"    gefunden: {', '.join(row['retrieved'][:5])}")
    return 0
