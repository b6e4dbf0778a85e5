"""``pv-agent retrieve``: the entries the retrieval finds for a question (no language model)."""
from __future__ import annotations

from pv_agent.engine.embedders import query_embedder
from pv_agent.engine.retrieve import retrieve
from pv_agent.engine.index_target import open_index
from pv_agent.engine.store import IndexError_
from pv_agent.engine.timeframe import asked_year

from ._common import add_index_argument, index_target, fail, print_json, settings

NAME = "retrieve"
HELP = "Treffer der Suche für eine Frage anzeigen (ohne Sprachmodell)"


def add_arguments(parser) -> None:
    parser.add_argument("question", help="die Frage")
    add_index_argument(parser)
    parser.add_argument("--k", type=int, default=None, help="Anzahl der Treffer (Standard: 8)")
    parser.add_argument("--topic", action="append", help="nur dieses Cluster (mehrfach möglich)")
    parser.add_argument("--scope", action="append", help="nur diese Quellenart: briefing, gesetz, kv, rechtsprechung")
    parser.add_argument("--year", type=int, help="Jahr, nach dem gefragt wird (Standard: aus der Frage, sonst das laufende)")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")


def run(args) -> int:
    cfg = settings()
    try:
        index = open_index(index_target(args))
    except IndexError_ as exc:
        return fail(str(exc))
    year = args.year or asked_year(args.question).year
    embedder, why = query_embedder(index, cfg)
    result = retrieve(
        index, args.question, cfg, embedder=embedder, embedder_notice=why,
        topics=args.topic, scopes=args.scope, k=args.k, year=year,
    )
    if args.json:
        print_json(result.as_dict())
        return 0
    print(f"Modus: {result.mode}" + (f" – {result.notice}" if result.notice else ""))
    if not result.hits:
        print("Keine Treffer.")
    ranked = [h for h in result.hits if h.via != "cross_ref"]
    refs = [h for h in result.hits if h.via == "cross_ref"]
    for n, hit in enumerate(ranked, start=1):
        print(f"{n:>2}. [{hit.entry_id}] {hit.title} · Stand {hit.stand} · {hit.section} · {hit.score:.4f}")
    if refs:
        print("Querverweise der besten Treffer (nicht gerankt):")
        for hit in refs:
            print(f"   → [{hit.entry_id}] {hit.title} · Stand {hit.stand} · {hit.section}")
    return 0
