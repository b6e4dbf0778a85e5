"""Every goldset question through ``ask`` against a scripted model that refuses everything (issue 28).

Usage (from the repository root, indexes built as in docs/retrieval.md):

    .venv/bin/python tools/refuse_everything.py --index /tmp/hyb.db
    .venv/bin/python tools/refuse_everything.py --index /tmp/hyb.db --goldset wissensbasis/goldset-fresh.yaml

A model that answers every question with "Dazu enthält die Wissensbasis keine Aussage." must not
turn covered questions into refusals: the refusal check (gates.supported) decides, and a covered
question ends ``unanswered`` with the matching entries. Per half and group (covered / uncovered):
how many end ``refused``, and of the covered ones not refused how many show an expected entry
(among the entries shown in detail or listed). The model is the Ollama-API test server
(pv_agent/tests/ollama_api_server.py); nothing leaves the machine.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pv_agent.engine.answer import prompts  # noqa: E402
from pv_agent.engine.answer.ask import ask  # noqa: E402
from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.engine.evaluation.retrieval import GOLDSET_TODAY, SPLITS, load_goldset, question_split  # noqa: E402
from pv_agent.engine.ollama import OllamaClient  # noqa: E402
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply  # noqa: E402


def group_of(q) -> str:
    """covered / uncovered (in-domain refusal questions) / other_refuse (answer-level refusals)."""
    if q.kind != "refuse":
        return "covered"
    return "uncovered" if q.split else "other_refuse"


def shown_ids(answer) -> list[str]:
    """The entries an answer puts in front of the clerk: its citations and the entries it lists."""
    return [c["id"] for c in answer.citations] + list(answer.flags.get("related") or [])


def refuse_everything(index, questions, settings: Settings | None = None, embedder=None) -> list[dict]:
    """One row per question: its half, group, final state, whether an expected entry is shown,
    and how many chat calls the scripted model got."""
    rows = []
    with OllamaAPIServer() as srv:
        srv.default_reply = Reply(content=prompts.REFUSAL)
        cfg = (settings or Settings()).replace(ollama_url=srv.url)
        client = OllamaClient(cfg)
        for q in questions:
            before = len(srv.requests_to("/api/chat"))
            answer = ask(q.question, index, cfg, client=client, now=GOLDSET_TODAY, embedder=embedder)
            shown = shown_ids(answer)
            rows.append({
                "id": q.id, "split": question_split(q), "group": group_of(q), "state": answer.state,
                "expected_shown": bool(set(q.expected_ids) & set(shown)) if q.expected_ids else None,
                "chat_calls": len(srv.requests_to("/api/chat")) - before,
            })
    return rows


def summary(rows: list[dict]) -> dict:
    """Per half and group: n, refused, unanswered, and (covered) expected entry shown among those not refused."""
    out: dict = defaultdict(dict)
    for half in SPLITS:
        for group in ("covered", "uncovered", "other_refuse"):
            part = [r for r in rows if r["split"] == half and r["group"] == group]
            if not part:
                continue
            kept = [r for r in part if r["state"] != "refused"]
            entry = {"n": len(part), "refused": sum(r["state"] == "refused" for r in part),
                     "unanswered": sum(r["state"] == "unanswered" for r in part)}
            if group == "covered":
                entry["expected_shown"] = sum(bool(r["expected_shown"]) for r in kept)
                entry["refused_ids"] = [r["id"] for r in part if r["state"] == "refused"]
            out[half][group] = entry
    return dict(out)


def main(argv=None) -> int:
    from pv_agent.engine.index.target import open_index

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--goldset", default="wissensbasis/goldset.yaml")
    parser.add_argument("--half", choices=SPLITS, help="one half only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    questions = [q for q in load_goldset(args.goldset) if args.half in (None, question_split(q))]
    index = open_index(args.index)
    try:
        result = summary(refuse_everything(index, questions))
    finally:
        index.close()
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    for half, groups in result.items():
        for group, e in groups.items():
            line = f"{half:<12} {group:<13} n={e['n']:<4} refused {e['refused']:<4} unanswered {e['unanswered']:<4}"
            if group == "covered":
                line += f" expected entry shown {e['expected_shown']}/{e['n'] - e['refused']}"
                if e["refused_ids"] and half == "calibration":  # held-out questions are never named one by one
                    line += f"  refused: {', '.join(e['refused_ids'])}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
