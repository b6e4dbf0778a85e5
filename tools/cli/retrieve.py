"""``pv-agent retrieve``: the entries the retrieval finds for a question (no language model)."""
from __future__ import annotations

from pv_agent.engine.index.embedders import query_embedder
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.target import open_index
from pv_agent.engine.index.base import IndexError_
from pv_agent.engine.retrieval.timeframe import asked_year
from pv_agent.engine.types import SOURCE_FAMILIES

from ._common import EXIT_USAGE, add_index_argument, fail, hint, index_target, print_json, settings, text_argument

NAME = "retrieve"
HELP = "Treffer der Suche für eine Frage anzeigen (ohne Sprachmodell)"


def add_arguments(parser) -> None:
    parser.add_argument("question", help="die Frage")
    add_index_argument(parser)
    parser.add_argument("--k", type=int, default=None, help="Anzahl der Treffer (Standard: 8)")
    parser.add_argument("--topic", action="append", help="nur dieses Cluster (mehrfach möglich)")
    parser.add_argument("--scope", action="append", help=f"nur diese Quellenart: {', '.join(SOURCE_FAMILIES)}")
    parser.add_argument("--year", type=int, help="Jahr, nach dem gefragt wird (Standard: aus der Frage, sonst das laufende)")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")


def run(args) -> int:
    if args.k is not None and args.k < 1:
        return fail(f"--k {args.k}: mindestens 1 Treffer", EXIT_USAGE)
    cfg = settings()
    try:
        index = open_index(index_target(args))
    except IndexError_ as exc:
        return fail(str(exc))
    unknown = _unknown_names(index, args.topic, args.scope)
    if unknown:
        index.close()
        return fail(unknown, EXIT_USAGE)
    question = text_argument(args.question)
    year = args.year or asked_year(question).year
    embedder, why = query_embedder(index, cfg)
    result = retrieve(
        index, question, cfg, embedder=embedder, embedder_notice=why,
        topics=args.topic, scopes=args.scope, k=args.k, year=year,
    )
    if args.json:
        print_json(result.as_dict())
        return 0
    if result.notice:
        hint(result.notice)
    print(f"Modus: {result.mode}")
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


def _unknown_names(index, topics, scopes) -> str:
    """One line naming a --topic or --scope the index does not know, with the valid ones; "" if all are known."""
    if scopes:
        wrong = [s for s in scopes if s not in SOURCE_FAMILIES]
        if wrong:
            return f"unbekannte Quellenart {', '.join(map(repr, wrong))} – möglich: {', '.join(SOURCE_FAMILIES)}"
    if topics:
        known = sorted({e.topic for e in index.entries_by_id(index.entry_ids()).values()})
        wrong = [t for t in topics if t not in known]
        if wrong:
            return f"unbekanntes Thema {', '.join(map(repr, wrong))} – im Index: {', '.join(known)}"
    return ""
