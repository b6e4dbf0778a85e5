"""Capture the exact messages ``ask`` sends to the chat model, for goldset questions.

This is the first step of measuring the verifier on drafts written the way strong models write
them (docs/verification.md, "Realistic drafts"): a recording Ollama-API server answers every
chat request with the refusal sentence and keeps the request; the first request's messages are
what a model would have seen. A helper session that plays the model gets only these files,
never the verifier's code or tests.

    .venv/bin/python tools/capture_prompts.py --goldset wissensbasis/goldset.yaml \
        --half heldout --limit 40 --out /tmp/prompts/heldout

One JSON file per question that reached the model: {"id", "question", "split", "expected_ids",
"expect_figures", "kind", "messages", "context": {"budget", "blocks": [ContextBlock fields]}}; questions the relevance gate refused before the model are
listed on stderr. The index is the one ``ask`` would use (``--index``, default the project's).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pv_agent.engine.answer import ask as ask_module  # noqa: E402
from pv_agent.engine.answer.ask import ask  # noqa: E402
from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.engine.evaluation.retrieval import load_goldset, question_split  # noqa: E402
from pv_agent.engine.index.target import open_index  # noqa: E402
from pv_agent.engine.ollama import OllamaClient  # noqa: E402
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply  # noqa: E402

REFUSAL = "Dazu enthält die Wissensbasis keine Aussage."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goldset", default=str(ROOT / "wissensbasis" / "goldset.yaml"))
    parser.add_argument("--index", default=os.environ.get("PV_AGENT_INDEX", str(ROOT / "data" / "index.db")))
    parser.add_argument("--half", choices=("calibration", "heldout"), default=None)
    parser.add_argument("--kinds", default="answer,conflict,survey,clarify")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    kinds = set(args.kinds.split(","))
    questions = [q for q in load_goldset(args.goldset)
                 if q.kind in kinds and (args.half is None or question_split(q) == args.half)]
    if args.limit:
        questions = questions[: args.limit]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PV_AGENT_EMBEDDER", "builtin")  # the server's hashed vectors are no model
    index = open_index(args.index)
    written = 0
    contexts = []  # the Context of the last question, kept so a test can check drafts without an index
    context_step = ask_module._context_step

    def recording_context_step(*a, **kw):
        result = context_step(*a, **kw)
        contexts.append(result[3])
        return result

    ask_module._context_step = recording_context_step
    with OllamaAPIServer() as server:
        server.default_reply = Reply(content=REFUSAL)
        settings = Settings.from_env(ollama_url=server.url)
        for q in questions:
            server.requests.clear()
            contexts.clear()
            ask(q.question, index, settings, client=OllamaClient(settings))
            chats = server.requests_to("/api/chat")
            if not chats:
                print(f"{q.id}: vor dem Modell abgelehnt (kein Prompt)", file=sys.stderr)
                continue
            record = {"id": q.id, "question": q.question, "split": question_split(q),
                      "expected_ids": list(q.expected_ids), "expect_figures": list(q.expect_figures),
                      "kind": q.kind, "messages": chats[0]["messages"],
                      "context": {"budget": contexts[-1].budget,
                                  "blocks": [dataclasses.asdict(b) for b in contexts[-1].blocks]}}
            (out / f"{q.id}.json").write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
            written += 1
    index.close()
    print(json.dumps({"written": written, "asked": len(questions), "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
