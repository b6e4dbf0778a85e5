"""What the subcommands share: default paths, settings, output helpers.

Output: the result on stdout (the report, the answer, with ``--json`` only JSON); every line
for people about problems (``Fehler:``, ``Warnung:``, ``Hinweis:``) and progress on stderr.

Exit codes (README, ``docs/reliability.md``): 0 done; 1 an error, nothing changed; 2 a
usage error (unknown option, name or value); 3 ``index`` finished, but entries failed to
load and keep their last good version (``--allow-broken``: 0).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Defaults are the project's own folders, wherever the command is run from; the environment
# may point elsewhere (PV_AGENT_KB, PV_AGENT_INDEX).
DEFAULT_KB = os.environ.get("PV_AGENT_KB") or str(ROOT / "wissensbasis")
DEFAULT_INDEX = os.environ.get("PV_AGENT_INDEX") or str(ROOT / "data" / "index.db")

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BROKEN_ENTRIES = 0, 1, 2, 3

_STARTED = time.monotonic()  # when the command line was imported: the "Zeit" people wait


class CommandError(Exception):
    """A problem the command reports in one line (``Fehler: …``) and exits with ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR):
        super().__init__(message)
        self.code = code


def add_kb_argument(parser) -> None:
    parser.add_argument("--kb", default=DEFAULT_KB, help=f"Ordner der Wissensbasis (Standard: {DEFAULT_KB}; $PV_AGENT_KB)")


def add_index_argument(parser) -> None:
    parser.add_argument("--index", default=DEFAULT_INDEX, help=f"Index-Datei (Standard: {DEFAULT_INDEX}; $PV_AGENT_INDEX)")
    parser.add_argument(
        "--store", default=None, metavar="postgresql://…",
        help="Index in PostgreSQL mit pgvector statt in der Datei (Standard: $PV_AGENT_STORE, sonst --index)",
    )


def index_target(args) -> str:
    """Where the index is: --store, else $PV_AGENT_STORE, else the --index file."""
    return args.store or os.environ.get("PV_AGENT_STORE") or args.index


def settings():
    """The engine's settings from the environment; an unusable Ollama URL is said once, on stderr
    (the client then treats the server as unreachable)."""
    from pv_agent.engine.config import Settings

    try:
        cfg = Settings.from_env()
    except ValueError as exc:  # PV_AGENT_TOP_K=abc and the like
        raise CommandError(str(exc), EXIT_USAGE) from None
    if cfg.ollama_url_problem:
        warn(f"{cfg.ollama_url_problem} – weiter ohne Ollama-Server.")
    return cfg


def text_argument(value: str) -> str:
    """A text from the command line as valid Unicode: bytes that are not UTF-8 (which Python
    keeps as lone surrogates) become U+FFFD, so JSON and the terminal get valid UTF-8."""
    try:
        return os.fsencode(value).decode("utf-8", errors="replace")
    except UnicodeEncodeError:  # a surrogate that did not come from undecodable bytes
        return value.encode("utf-8", errors="replace").decode("utf-8")


def print_json(data) -> None:
    text = json.dumps(data, ensure_ascii=False, indent=2)
    # a lone surrogate anywhere (a file name, a question) must not make the output invalid UTF-8
    text = text.encode("utf-8", errors="replace").decode("utf-8")
    sys.stdout.write(text + "\n")


def fail(message: str, code: int = EXIT_ERROR) -> int:
    print(f"Fehler: {message}", file=sys.stderr)
    return code


def warn(message: str) -> None:
    print(f"Warnung: {message}", file=sys.stderr)


def hint(message: str) -> None:
    print(f"Hinweis: {message}", file=sys.stderr)


def issue_location(kb: str, issue) -> str:
    """``file:line`` of a load problem, the file under the knowledge base's folder."""
    path = Path(issue.file)
    if not path.is_absolute() and str(path) != str(Path(kb)):
        path = Path(kb) / path
    return f"{path}:{issue.line}" if issue.line else str(path)


def elapsed() -> float:
    """Seconds since the command line started (imports and opening the index included)."""
    return time.monotonic() - _STARTED


def duration(seconds: float) -> str:
    """``640 ms`` below a second, else ``1.2 s``: a short command never reads ``0.0 s``."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


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
