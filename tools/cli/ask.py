"""``pv-agent ask QUESTION [--index FILE] [--json]``: one question through the whole engine."""
from __future__ import annotations

import argparse
import json
import sys

NAME = "ask"
HELP = "Eine Frage an die Wissensbasis stellen (Antwort mit Quellen)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question", metavar="FRAGE", help="die Frage, in Anführungszeichen")
    parser.add_argument("--index", default="data/index.db", help="Indexdatei (Standard: data/index.db)")
    parser.add_argument("--json", action="store_true", help="das Antwortobjekt als JSON ausgeben")


def run(args: argparse.Namespace) -> int:
    from pv_agent.engine import prompts
    from pv_agent.engine.ask import ask
    from pv_agent.engine.config import Settings
    from pv_agent.engine.store import IndexError_, SidecarIndex

    settings = Settings.from_env()
    try:
        index = SidecarIndex.open(args.index)
    except IndexError_ as exc:
        print(f"pv-agent ask: {exc}", file=sys.stderr)
        return 2
    try:
        answer = ask(args.question, index, settings)
    finally:
        index.close()
    if args.json:
        json.dump(answer.as_dict(), sys.stdout, ensure_ascii=False, indent=2)
        print()
        return 0
    print(f"Status: {prompts.state_label(answer.state)} ({answer.state})")
    if answer.notice:
        print(f"Hinweis: {answer.notice}")
    print()
    print(answer.answer)
    if answer.citations:
        print()
        print(prompts.text("sources_label") + ":")
        for c in answer.citations:
            mark = {True: "✓", False: "✗", None: "·"}[c["supported"]]
            print(f"  {mark} [{c['id']}] {c['title']} (Stand {c['stand']}) – {c['section']}")
    t = answer.as_dict()["timings"]
    print()
    print(f"Zeit: {t['total_ms'] / 1000:.1f} s (Suche {t['retrieve_ms']:.0f} ms, Sprachmodell {t['llm_ms'] / 1000:.1f} s)"
          f" · Modus {answer.mode or '–'} · Prompt {answer.prompt_version}")
    return 0
