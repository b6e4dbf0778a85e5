"""``pv-agent drift``: which stored answers cite sections that changed or disappeared."""
from __future__ import annotations

import json
import time

from pv_agent.engine.drift import CHANGED, REMOVED, check_answers
from pv_agent.engine.index.target import open_index
from pv_agent.engine.index.base import IndexError_

from ._common import fail, print_json

NAME = "drift"
HELP = "Antworten prüfen, deren zitierte Abschnitte sich geändert haben oder entfernt wurden"


def add_arguments(parser) -> None:
    parser.add_argument("--old", help="Index, gegen den die Antworten gegeben wurden (für Diffs ohne gespeicherten Text)")
    parser.add_argument("--new", required=True, help="aktueller Index (Datei oder postgresql://…)")
    parser.add_argument("--answers", required=True, help="Antworten als JSON Lines (ask --json, mit fingerprints)")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")


def run(args) -> int:
    try:
        new = open_index(args.new)
        old = open_index(args.old) if args.old else None
    except IndexError_ as exc:
        return fail(str(exc))
    try:
        answers = _read_answers(args.answers)
    except ValueError as exc:
        return fail(str(exc))
    started = time.monotonic()
    results = check_answers(answers, new, old)
    seconds = time.monotonic() - started
    drifted = [r for r in results if r.status in (CHANGED, REMOVED)]
    if args.json:
        print_json({"answers": len(results), "drifted": len(drifted), "seconds": round(seconds, 4),
                    "results": [r.as_dict() for r in drifted]})
        return 0
    print(f"{len(results)} Antworten geprüft in {seconds * 1000:.1f} ms, {len(drifted)} betroffen.")
    for result in drifted:
        for v in result.verdicts:
            if v.status != "unchanged":
                print(f"- Antwort {result.answer_id}: [{v.fingerprint.entry_id}] {v.fingerprint.section}: {v.label}")
                if v.diff:
                    print("    " + v.diff.replace("\n", "\n    "))
    return 0


def _read_answers(path: str) -> list[dict]:
    """The answers of a JSON Lines file; ValueError with ``file:line`` for the first bad line."""
    answers = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    answer = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"{path}:{n}: kein JSON ({exc.msg})") from None
                if not isinstance(answer, dict):
                    raise ValueError(f"{path}:{n}: kein Antwortobjekt")
                answers.append(answer)
    except OSError as exc:
        raise ValueError(f"Antworten {path} nicht lesbar: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: kein gültiges UTF-8") from None
    return answers
