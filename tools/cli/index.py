"""``pv-agent index``: build or update the index (sidecar file or ``--store postgresql://…``) from the knowledge base."""
from __future__ import annotations

import time
from pathlib import Path

from pv_agent.engine.embedders import choose_embedder
from pv_agent.engine.embedding_seed import load_seed
from pv_agent.engine.indexer import build_index
from pv_agent.engine.loader import load_knowledge_base
from pv_agent.engine.store import IndexError_

from ._common import ProgressBar, add_index_argument, add_kb_argument, fail, index_target, print_json, settings

NAME = "index"
HELP = "Index bauen oder aktualisieren (nur geänderte Einträge werden neu eingebettet)"


def add_arguments(parser) -> None:
    add_kb_argument(parser)
    add_index_argument(parser)
    parser.add_argument("--full", action="store_true", help="vollständig neu bauen statt aktualisieren")
    parser.add_argument("--lexical", action="store_true", help="ohne Embeddings (nur BM25)")
    parser.add_argument("--json", action="store_true", help="Bericht als JSON")


def run(args) -> int:
    cfg = settings()
    t = time.monotonic()
    loaded = load_knowledge_base(Path(args.kb))
    load_s = time.monotonic() - t
    for issue in loaded.errors:
        print(f"Warnung: {Path(args.kb) / issue.file}:{issue.line}: {issue.message}")
    if not loaded.entries:
        print("Fehler: keine gültigen Einträge – Index bleibt unverändert.")
        return 1
    try:
        embedder, why = (None, "Ohne Embeddings gebaut (--lexical) – nur lexikalische Suche (BM25).") if args.lexical \
            else choose_embedder(cfg)
    except ValueError as exc:  # PV_AGENT_EMBEDDER with an unknown value
        return fail(str(exc))
    seed = load_seed(args.kb, embedder.cache_key) if embedder is not None else None
    try:
        report = build_index(loaded.entries, index_target(args), cfg, embedder, full=args.full,
                             progress=ProgressBar(), seed=seed, notice=why)
    except IndexError_ as exc:  # PostgreSQL unreachable, pgvector missing
        return fail(str(exc))
    report.timings_s["load"] = round(load_s, 3)
    data = report.as_dict() | {"load_errors": len(loaded.errors)}
    if args.json:
        print_json(data)
        return 0
    kind = "neu gebaut" if report.full else "aktualisiert"
    via = f", Embeddings: {embedder.kind} {embedder.model}" if embedder is not None and report.mode == "hybrid" else ""
    print(f"Index {report.path} {kind} (Generation {report.generation}, Modus {report.mode}{via}).")
    print(
        f"  {report.entries} Einträge, {report.chunks} Abschnitte, {report.vectors} Vektoren; "
        f"neu {report.added}, geändert {report.updated}, entfernt {report.removed}, unverändert {report.unchanged}"
    )
    print(f"  eingebettet: {report.embedded} Abschnitte (aus dem Cache: {report.cache_hits})")
    print("  Zeiten: " + ", ".join(f"{k} {v:.2f} s" for k, v in report.timings_s.items()))
    if report.notice:
        print(f"  Hinweis: {report.notice}")
    return 0
