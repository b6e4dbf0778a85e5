"""Entry point of ``tools/pv-agent``: every module in this package is one subcommand.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
No traceback reaches the user: a known problem is one ``Fehler:`` line on stderr, anything
else too (``PV_AGENT_DEBUG=1`` shows the traceback).
"""
from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys

import tools.cli as package
from tools.cli._common import EXIT_ERROR, CommandError, fail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pv-agent", description="PV-Agent: Wissensbasis, Index und Fragen",
        epilog="Exit-Codes: 0 fertig · 1 Fehler, nichts geändert · 2 Aufruf falsch (Option, Name, Wert) · "
               "3 index: Einträge nicht ladbar, ihre letzte gültige Fassung bleibt (--allow-broken: 0).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP,
                             epilog=getattr(module, "EPILOG", None))
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    args = parser.parse_args(argv)
    try:
        return args._run(args)
    except KeyboardInterrupt:
        print("abgebrochen", file=sys.stderr)
        return 130
    except CommandError as exc:
        return fail(str(exc), exc.code)
    except Exception as exc:  # the last net: one line, never a traceback (unless asked for)
        if os.environ.get("PV_AGENT_DEBUG"):
            raise
        return fail(f"{exc} ({type(exc).__name__}; Details mit PV_AGENT_DEBUG=1)", EXIT_ERROR)


if __name__ == "__main__":
    # `pv-agent … | head` ends quietly, like other tools (only for the command, never in-process)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # valid UTF-8 on stdout whatever the locale says; stray surrogates become "?"
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="replace")
    sys.exit(main())
