"""Entry point of ``tools/pv-agent``: every module in this package is one subcommand.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import signal
import sys

import tools.cli as package


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pv-agent", description="PV-Agent: Wissensbasis, Index und Fragen")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    args = parser.parse_args(argv)
    try:
        return args._run(args)
    except KeyboardInterrupt:
        print("abgebrochen", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # `pv-agent … | head` ends quietly, like other tools (only for the command, never in-process)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
