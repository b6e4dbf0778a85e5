"""``pv-agent validate``: check every entry, the contradictions between and within entries
(``pv_agent.engine.kb.consistency``), kb.json and the parameter mapping (parameters.yaml); exit 1
on any error."""
from __future__ import annotations

import sys
from pathlib import Path

from pv_agent.engine.kb.consistency import consistency_issues
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import check_registry
from pv_agent.engine.params.mapping import validate_mapping_file

from ._common import add_kb_argument, issue_location, print_json

NAME = "validate"
HELP = "Wissensbasis prüfen (Schema, Abschnitte, Verweise, Widersprüche, kb.json, parameters.yaml)"


def add_arguments(parser) -> None:
    add_kb_argument(parser)
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")


def run(args) -> int:
    result = load_knowledge_base(Path(args.kb))
    errors = result.errors
    if Path(args.kb).is_dir():
        errors = errors + consistency_issues(Path(args.kb), result.entries) + check_registry(Path(args.kb), result)
        errors += validate_mapping_file(args.kb, result.entries)
    if args.json:
        print_json({"entries": len(result.entries), "clusters": len(result.clusters), "errors": [e.as_dict() for e in errors]})
    else:
        for issue in errors:  # the problems on stderr, the summary on stdout
            print(f"Fehler: {issue_location(args.kb, issue)}: {issue.message}", file=sys.stderr)
        print(f"{len(result.entries)} Einträge in {len(result.clusters)} Clustern, {len(errors)} Fehler.")
    return 1 if errors else 0
