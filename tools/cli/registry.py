"""``pv-agent registry``: regenerate kb.json and INDEX.md from the entry files."""
from __future__ import annotations

from pathlib import Path

from pv_agent.engine.loader import load_knowledge_base
from pv_agent.engine.registry import write_registry

from ._common import add_kb_argument

NAME = "registry"
HELP = "kb.json und INDEX.md aus den Einträgen erzeugen"


def add_arguments(parser) -> None:
    add_kb_argument(parser)


def run(args) -> int:
    result = load_knowledge_base(Path(args.kb))
    for issue in result.errors:
        print(f"{Path(args.kb) / issue.file}:{issue.line}: {issue.message} (übersprungen)")
    registry, index = write_registry(Path(args.kb), result)
    print(f"{registry} und {index} geschrieben: {len(result.entries)} Einträge, {len(result.clusters)} Cluster.")
    return 1 if result.errors else 0
