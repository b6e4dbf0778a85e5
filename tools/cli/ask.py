"""``pv-agent ask QUESTION [--index FILE] [--json]``: one question through the whole engine."""
from __future__ import annotations

from pv_agent.engine import prompts
from pv_agent.engine.ask import ask
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.index_target import open_index
from pv_agent.engine.store import IndexError_

from ._common import add_index_argument, index_target, fail, print_json, settings

NAME = "ask"
HELP = "Eine Frage an die Wissensbasis stellen (Antwort mit Quellen)"
SUPPORT_MARKS = {True: "✓", False: "✗", None: "·"}  # belegt / nicht belegt / nur Quelle


def add_arguments(parser) -> None:
    parser.add_argument("question", metavar="FRAGE", help="die Frage, in Anführungszeichen")
    add_index_argument(parser)
    parser.add_argument("--json", action="store_true", help="das Antwortobjekt als JSON ausgeben")


def run(args) -> int:
    cfg = settings()
    try:
        index = open_index(index_target(args))
    except IndexError_ as exc:
        return fail(str(exc))
    try:
        answer = ask(args.question, index, cfg, client=OllamaClient(cfg))
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
        print(f"Hinweis: {answer.notice}")
    print()
    print(answer.answer)
    if answer.citations:
        print()
        print(prompts.text("sources_label") + ":")
        for c in answer.citations:
            print(f"  {SUPPORT_MARKS[c['supported']]} [{c['id']}] {c['title']} (Stand {c['stand']}) – {c['section']}")
    t = answer.as_dict()["timings"]
    print()
    print(f"Zeit: {t['total_ms'] / 1000:.1f} s (Suche {t['retrieve_ms']:.0f} ms, Sprachmodell {t['llm_ms'] / 1000:.1f} s)"
          f" · Modus {answer.mode or '–'} · Prompt {answer.prompt_version}")
    return 0
