"""What the subcommands share: default paths, settings, output helpers."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_KB = "wissensbasis"
DEFAULT_INDEX = "data/index.db"


def add_kb_argument(parser) -> None:
    parser.add_argument("--kb", default=DEFAULT_KB, help=f"Ordner der Wissensbasis (Standard: {DEFAULT_KB})")


def add_index_argument(parser) -> None:
    parser.add_argument("--index", default=DEFAULT_INDEX, help=f"Index-Datei (Standard: {DEFAULT_INDEX})")
    parser.add_argument(
        "--store", default=None, metavar="postgresql://…",
        help="Index in PostgreSQL mit pgvector statt in der Datei (Standard: $PV_AGENT_STORE, sonst --index)",
    )


def index_target(args) -> str:
    """Where the index is: --store, else $PV_AGENT_STORE, else the --index file."""
    import os

    return args.store or os.environ.get("PV_AGENT_STORE") or args.index


def settings():
    from pv_agent.engine.config import Settings

    return Settings.from_env()


def print_json(data) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def fail(message: str, code: int = 1) -> int:
    print(f"Fehler: {message}", file=sys.stderr)
    return code


class ProgressBar:
    """A one-line progress bar on stderr, shown only on a terminal."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr  # looked up now: tests replace sys.stderr
        self.enabled = self.stream.isatty()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        width = 30
        filled = int(width * done / total)
        self.stream.write(f"\r{stage:<10} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
