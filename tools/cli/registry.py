"""``pv-agent registry``: regenerate kb.json and INDEX.md from the entry files."""
from __future__ import annotations

from pathlib import Path

from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import write_registry
from pv_agent.engine.kb.safe_files import UnsafePath

from ._common import add_kb_argument, fail, issue_location, warn

NAME = "registry"
HELP = "kb.json und INDEX.md aus den Einträgen erzeugen"


def add_arguments(parser) -> None:
    add_kb_argument(parser)


def run(args) -> int:
    if not Path(args.kb).is_dir():
        return fail(f"Ordner der Wissensbasis {args.kb} nicht gefunden.")
    result = load_knowledge_base(Path(args.kb))
    for issue in result.errors:
        warn(f"{issue_location(args.kb, issue)}: {issue.message} (übersprungen)")
    try:
        registry, index = write_registry(Path(args.kb), result)
    except UnsafePath as exc:
        return fail(f"{Path(args.kb) / exc.rel}: {exc.reason} – kb.json und INDEX.md nicht geschrieben.")
    print(f"{registry} und {index} geschrieben: {len(result.entries)} Einträge, {len(result.clusters)} Cluster.")
    return 1 if result.errors else 0
