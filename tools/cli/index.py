"""``pv-agent index``: build or update the index (sidecar file or ``--store postgresql://…``) from the knowledge base."""
from __future__ import annotations

import time
from pathlib import Path

from pv_agent.engine.index.embedders import choose_embedder
from pv_agent.engine.index.embedding_seed import load_seed
from pv_agent.engine.index.indexer import IndexNotOurs, build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.index.sqlite_conn import sqlite_module
from pv_agent.engine.index.base import IndexError_

from ._common import (
    EXIT_BROKEN_ENTRIES, ProgressBar, add_index_argument, add_kb_argument, fail, hint, index_target,
    issue_location, print_json, settings, warn,
)

NAME = "index"
HELP = "Index bauen oder aktualisieren (nur geänderte Einträge werden neu eingebettet)"
EPILOG = (
    "Ein Eintrag, dessen Datei sich nicht laden lässt, behält seine letzte gültige Fassung im Index; "
    "der Befehl endet dann mit Exit-Code 3 (mit --allow-broken: 0). Eine Datei, die kein PV-Agent-Index ist, "
    "wird nur mit --force ersetzt; Ordner und Geräte nie."
)


def add_arguments(parser) -> None:
    add_kb_argument(parser)
    add_index_argument(parser)
    parser.add_argument("--full", action="store_true", help="vollständig neu bauen statt aktualisieren")
    parser.add_argument("--lexical", action="store_true", help="ohne Embeddings (nur BM25)")
    parser.add_argument("--allow-broken", action="store_true",
                        help="nicht ladbare Einträge (letzte gültige Fassung bleibt) beenden den Befehl mit 0 statt 3")
    parser.add_argument("--force", action="store_true",
                        help="eine Datei am Index-Pfad ersetzen, auch wenn sie kein PV-Agent-Index ist")
    parser.add_argument("--json", action="store_true", help="Bericht als JSON")


def run(args) -> int:
    cfg = settings()
    kb = Path(args.kb)
    if not kb.is_dir():
        return fail(f"Ordner der Wissensbasis {kb} nicht gefunden – Index bleibt unverändert.")
    t = time.monotonic()
    loaded = load_knowledge_base(kb)
    load_s = time.monotonic() - t
    loaded_ids = {e.id for e in loaded.entries}
    broken = sorted({Path(i.file).stem for i in loaded.errors} - loaded_ids)  # the file name is the id
    for issue in loaded.errors:
        if Path(issue.file).stem in broken:
            fail(f"{issue_location(args.kb, issue)}: {issue.message}")
        else:
            warn(f"{issue_location(args.kb, issue)}: {issue.message}")
    if not loaded.entries:
        return fail("keine gültigen Einträge – Index bleibt unverändert.")
    try:
        embedder, why = (None, "") if args.lexical else choose_embedder(cfg)
    except ValueError as exc:  # PV_AGENT_EMBEDDER with an unknown value
        return fail(str(exc))
    seed = load_seed(args.kb, embedder.cache_key) if embedder is not None else None
    try:
        report = build_index(loaded.entries, index_target(args), cfg, embedder, full=args.full,
                             progress=ProgressBar(), broken=broken, force=args.force, seed=seed, notice=why)
    except IndexNotOurs as exc:
        return fail(f"{exc} Mit --force trotzdem ersetzen.")
    except IndexError_ as exc:  # a bad path, PostgreSQL unreachable, pgvector missing
        return fail(str(exc))
    except (OSError, sqlite_module().DatabaseError) as exc:  # disk full, permissions while writing
        return fail(f"Index {index_target(args)} konnte nicht geschrieben werden: {exc} – der bisherige bleibt.")
    report.timings_s["load"] = round(load_s, 3)
    for entry_id in report.kept:
        warn(f"[{entry_id}] nicht ladbar – die letzte gültige Fassung bleibt im Index.")
    for entry_id in report.broken_without_previous:
        warn(f"[{entry_id}] nicht ladbar und noch nicht im Index – fehlt, bis die Datei korrigiert ist.")
    if report.notice:
        hint(report.notice)
    data = report.as_dict() | {"load_errors": len(loaded.errors), "broken": broken}
    if args.json:
        print_json(data)
    else:
        kind = "neu gebaut" if report.full else "aktualisiert"
        via = f", Embeddings: {embedder.kind} {embedder.model}" if embedder is not None and report.mode == "hybrid" else ""
        print(f"Index {report.path} {kind} (Generation {report.generation}, Modus {report.mode}{via}).")
        print(
            f"  {report.entries} Einträge, {report.chunks} Abschnitte, {report.vectors} Vektoren; "
            f"neu {report.added}, geändert {report.updated}, entfernt {report.removed}, unverändert {report.unchanged}"
        )
        print(f"  eingebettet: {report.embedded} Abschnitte (aus dem Cache: {report.cache_hits})")
        print("  Zeiten: " + ", ".join(f"{k} {v:.2f} s" for k, v in report.timings_s.items()))
    if broken and not args.allow_broken:
        return fail(f"{len(broken)} Eintrag/Einträge nicht ladbar (siehe oben) – Exit-Code 3; "
                    "--allow-broken, um das hinzunehmen.", EXIT_BROKEN_ENTRIES)
    return 0
