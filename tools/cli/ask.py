"""``pv-agent ask QUESTION [--index FILE] [--json]``: one question through the whole engine.

While the model writes, stderr shows the sources found and each step (stdout: the answer, or
with ``--json`` the answer object alone)."""
from __future__ import annotations

import sys

from pv_agent.engine.answer import prompts
from pv_agent.engine.answer.ask import ask
from pv_agent.engine.llm_clients import make_client
from pv_agent.engine.index.target import open_index
from pv_agent.engine.index.base import IndexError_

from ._common import (
    EXIT_USAGE, add_index_argument, duration, elapsed, fail, index_target, print_json, settings, text_argument,
)

NAME = "ask"
HELP = "Eine Frage an die Wissensbasis stellen (Antwort mit Quellen)"
SUPPORT_MARKS = {True: "✓", False: "✗", None: "·"}  # belegt / nicht belegt / nur Quelle
# gates.off_topic_reason's codes, for people
OFF_TOPIC_NOTICES = {
    "greeting": "Gruß oder Dank, keine Frage",
    "chit_chat": "Plauderei, keine Frage zur Personalverrechnung",
    "outside": "Frage außerhalb der Personalverrechnung",
}


def add_arguments(parser) -> None:
    parser.add_argument("question", metavar="FRAGE", help="die Frage, in Anführungszeichen")
    add_index_argument(parser)
    parser.add_argument("--json", action="store_true", help="das Antwortobjekt als JSON ausgeben")


def print_progress(stage: str, info: dict) -> None:
    """One step of ``ask`` for people, on stderr: first the sources, then what the model does."""
    if stage == "sources":
        print("Gefundene Quellen – Antwort wird erstellt:", file=sys.stderr)
        for s in info["sources"]:
            line = f" – {s['line']}" if s.get("line") else ""
            print(f"  [{s['id']}] {s['title']} (Stand {s['stand']}){line}", file=sys.stderr)
    elif stage == "writing" and info.get("attempt", 1) == 1:
        print("Das Sprachmodell schreibt …", file=sys.stderr)
    elif stage == "checking":
        print("Wird geprüft …", file=sys.stderr)
    elif stage == "rewriting":
        reason = info.get("reason") or "zweiter Versuch"
        print(reason[:1].upper() + reason[1:] + " …", file=sys.stderr)
    sys.stderr.flush()


def run(args) -> int:
    question = text_argument(args.question)
    if not question.strip():
        return fail("leere Frage – bitte eine Frage in Anführungszeichen angeben.", EXIT_USAGE)
    cfg = settings()
    try:
        index = open_index(index_target(args))
    except IndexError_ as exc:
        return fail(str(exc))
    try:
        answer = ask(question, index, cfg, client=make_client(cfg), on_progress=print_progress)
    finally:
        index.close()
    if args.json:
        print_json(answer.as_dict())
        return 0
    print(f"Status: {prompts.state_label(answer.state)} ({answer.state})")
    checked = (answer.flags.get("checked") or {}).get("state_line")
    if checked:
        print(f"Geprüft: {checked}")
    if answer.notice:
        notice = OFF_TOPIC_NOTICES.get(answer.notice, answer.notice) if answer.state == "off_topic" else answer.notice
        print(f"Hinweis: {notice}", file=sys.stderr)
    print()
    print(answer.answer)
    if answer.citations:
        print()
        print(prompts.text("sources_label") + ":")
        for c in answer.citations:
            print(f"  {SUPPORT_MARKS[c['supported']]} [{c['id']}] {c['title']} (Stand {c['stand']}) – {c['section']}")
    t = answer.as_dict()["timings"]
    print()
    print(f"Zeit: {duration(elapsed())} (Antwort {duration(t['total_ms'] / 1000)}: Suche {duration(t['retrieve_ms'] / 1000)}, "
          f"Sprachmodell {duration(t['llm_ms'] / 1000)}) · Modus {answer.mode or '–'} · Prompt {answer.prompt_version}")
    return 0
