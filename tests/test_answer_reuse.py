"""Reusing a verified answer (issue 31, item 3): the key covers exactly the prompt and the
checker, a hit costs no model call, and only checked verdicts are stored."""
from __future__ import annotations

import dataclasses

import pytest
from answer_helpers import KB_ENTRIES, entry_markdown, make_context, write_kb

from pv_agent.engine.answer import prompts, reuse
from pv_agent.engine.answer.ask import ask
from pv_agent.engine.answer.reuse import MemoryStore, prompt_key, storable
from pv_agent.engine.config import Settings
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply

HBGL_QUESTION = "Wie hoch ist die HBGL 2026 monatlich?"
GOOD = "Die HBGL 2026 beträgt monatlich 6.930 € und täglich 231 € (Stand 2026-01) [pv-sv-02]."
UNSUPPORTED = "Die HBGL 2026 beträgt monatlich 7.100 € (Stand 2026-01) [pv-sv-02]."


@pytest.fixture
def srv():
    with OllamaAPIServer() as server:
        yield server


@pytest.fixture
def settings(srv):
    return Settings(ollama_url=srv.url, chat_timeout=5.0, num_predict=256)


@pytest.fixture
def kb(tmp_path, srv, settings):
    """A knowledge base and its index, rebuilt by ``kb.reindex()`` after an entry file changed."""
    class KB:
        root = tmp_path / "wissensbasis"
        path = str(tmp_path / "index.db")

        def reindex(self):
            loaded = load_knowledge_base(self.root)
            assert not loaded.errors, loaded.errors
            build_index(loaded.entries, self.path, settings, embedder=OllamaClient(settings))
            srv.requests.clear()

        def write(self, entry_id, **changes):
            fields = {**KB_ENTRIES[entry_id], **changes}
            (self.root / "dokumente" / f"{entry_id}.md").write_text(entry_markdown(entry_id, **fields), encoding="utf-8")

        def open(self):
            index = SidecarIndex.open(self.path)
            opened.append(index)
            return index

    opened = []
    write_kb(KB.root)
    kb = KB()
    kb.reindex()
    yield kb
    for index in opened:
        index.close()


def chats(srv):
    return srv.requests_to("/api/chat")


# -- the key ---------------------------------------------------------------------------------
def _key(context=None, settings=None, *, question="Frage?", prompt_version=prompts.PROMPT_VERSION, year=2026,
         supported=True):
    context = context or make_context("pv-sv-02", "pv-sv-01")
    messages = [[{"role": "system", "content": prompts.system_prompt()},
                 {"role": "user", "content": prompts.text("user_message", context=context.text(), question=question)}]]
    return prompt_key(messages, context, settings or Settings(), prompt_version=prompt_version, year=year,
                      supported=supported)


def test_same_prompt_gives_the_same_key():
    assert _key() == _key()
    assert len(_key()) == 64


def test_every_input_of_the_verdict_changes_the_key():
    base = _key()
    context = make_context("pv-sv-02", "pv-sv-01")
    edited = dataclasses.replace(context, blocks=[dataclasses.replace(context.blocks[0], text=context.blocks[0].text
                                                                      .replace("6.930", "6.931"))] + context.blocks[1:])
    flagged = dataclasses.replace(context, blocks=[dataclasses.replace(context.blocks[0], conflict_marked=True)]
                                  + context.blocks[1:])
    variants = {
        "block content": _key(edited),
        "a block the verifier reads beside its text (⚠ side)": _key(flagged),
        "another entry in the context": _key(make_context("pv-sv-02")),
        "question": _key(question="Frage 2?"),
        "prompt version": _key(prompt_version="v1"),
        "chat model": _key(settings=Settings(chat_model="llama3.1:8b")),
        "API kind": _key(settings=Settings(llm_api="openai")),
        "generation options": _key(settings=Settings(num_predict=999)),
        "year checked against": _key(year=2025),
        "the relevance gate": _key(supported=False),
    }
    for what, key in variants.items():
        assert key != base, what
    assert len(set(variants.values())) == len(variants)


def test_a_new_checker_gives_new_keys(monkeypatch):
    base = _key()
    reuse.checker_digest.cache_clear()
    monkeypatch.setattr(reuse, "CHECKER_VERSION", "999")
    try:
        assert _key() != base
    finally:
        reuse.checker_digest.cache_clear()


def test_the_checker_digest_covers_the_verifier_code():
    files = {p.relative_to(reuse._ENGINE).as_posix() for pattern in reuse._CHECKER_FILES
             for p in reuse._ENGINE.glob(pattern)}
    assert {"answer/ask.py", "answer/verification/verdict.py", "figures.py"} <= files


def test_ask_carries_the_key_of_the_prompt_it_sent(srv, settings, kb):
    srv.script(GOOD, GOOD)
    index = kb.open()
    first = ask(HBGL_QUESTION, index, settings).as_dict()
    second = ask(HBGL_QUESTION, index, settings).as_dict()
    assert first["prompt_key"] == second["prompt_key"]
    assert first["reusable"] is True and storable(first)
    other = ask("Wie hoch ist die HBGL 2026 täglich?", index, settings, client=None)
    assert other.prompt_key and other.prompt_key != first["prompt_key"]


# -- a hit -----------------------------------------------------------------------------------
def test_a_stored_answer_costs_no_model_call(srv, settings, kb):
    store = MemoryStore()
    index = kb.open()
    srv.script(GOOD)
    first = ask(HBGL_QUESTION, index, settings, reuse=store)
    assert first.state == "answered" and len(chats(srv)) == 1
    assert store.remember(first.as_dict())
    second = ask(HBGL_QUESTION, index, settings, reuse=store)
    assert len(chats(srv)) == 1, "the second, identical prompt reached the model"
    assert store.hits == 1
    assert (second.state, second.answer, second.citations) == (first.state, first.answer, first.citations)
    assert second.llm_calls == 0
    assert second.reused == {"key": first.prompt_key, "from": {"key": first.prompt_key}}
    assert second.fingerprints == first.fingerprints  # its own, from this run: the drift check works
    assert not storable(second.as_dict())  # a reused answer is not stored again
    # without the store the same question goes to the model
    srv.script(GOOD)
    ask(HBGL_QUESTION, index, settings)
    assert len(chats(srv)) == 2


def test_a_changed_entry_sends_the_next_identical_question_to_the_model(srv, settings, kb):
    store = MemoryStore()
    srv.script(GOOD)
    first = ask(HBGL_QUESTION, kb.open(), settings, reuse=store)
    store.remember(first.as_dict())
    kb.write("pv-sv-02", key_values=KB_ENTRIES["pv-sv-02"]["key_values"].replace("231 €", "232 €"))
    kb.reindex()
    srv.script(GOOD.replace("231", "232"))
    again = ask(HBGL_QUESTION, kb.open(), settings, reuse=store)
    assert len(chats(srv)) == 1, "the edited entry's question was answered from the store"
    assert again.prompt_key != first.prompt_key and not again.reused
    assert store.hits == 0
    # an edit of an entry outside the context keeps the key
    store.remember(again.as_dict())
    kb.write("pv-ur-01", summary=KB_ENTRIES["pv-ur-01"]["summary"] + " Geändert.")
    kb.reindex()
    third = ask(HBGL_QUESTION, kb.open(), settings, reuse=store)
    assert third.reused and chats(srv) == []


def test_a_store_hit_for_another_key_or_state_is_ignored(srv, settings, kb):
    class Liar:
        def lookup(self, key):
            return {"answer": {"state": "uncertain", "prompt_key": key, "answer": "x"}, "from": None}

    srv.script(GOOD)
    answer = ask(HBGL_QUESTION, kb.open(), settings, reuse=Liar())
    assert answer.state == "answered" and not answer.reused and len(chats(srv)) == 1


# -- what is stored ----------------------------------------------------------------------------
def test_refusals_are_stored_and_reused(srv, settings, kb):
    store = MemoryStore()
    index = kb.open()
    srv.script(prompts.REFUSAL)
    first = ask(HBGL_QUESTION, index, settings, reuse=store)
    assert first.state == "unanswered"  # covered: the model's refusal becomes the entries, unchecked
    assert store.remember(first.as_dict())
    second = ask(HBGL_QUESTION, index, settings, reuse=store)
    assert second.state == "unanswered" and second.reused and len(chats(srv)) == 1
    assert second.drafts == [prompts.REFUSAL]  # the audit trail of the stored verdict comes along
    assert second.fingerprints == first.fingerprints


def test_refused_is_stored(srv, settings, kb):
    settings = dataclasses.replace(settings, min_coverage=0.0)
    srv.script(prompts.REFUSAL)
    answer = ask("Wieviel darf ich bei einer Lohnpfändung vom Lohn einbehalten?", kb.open(), settings)
    assert answer.state == "refused" and storable(answer.as_dict())


def test_uncertain_answers_are_not_stored(srv, settings, kb):
    srv.script(UNSUPPORTED, UNSUPPORTED)
    answer = ask(HBGL_QUESTION, kb.open(), settings)
    assert answer.state == "uncertain", answer.as_dict()
    assert answer.prompt_key and not storable(answer.as_dict())
    assert not MemoryStore().remember(answer.as_dict())


def test_without_a_model_nothing_is_stored(settings, kb):
    down = dataclasses.replace(settings, ollama_url="http://127.0.0.1:9", connect_timeout=0.5)
    answer = ask(HBGL_QUESTION, kb.open(), down)
    assert answer.state == "sources_only" and not storable(answer.as_dict())
    refused = ask("Wieviel darf ich bei einer Lohnpfändung vom Lohn einbehalten?", kb.open(),
                  dataclasses.replace(down, min_coverage=0.0))
    assert refused.state == "refused"  # no model: not a verdict, never stored
    assert not storable(refused.as_dict())


def test_answered_after_retry_is_stored(srv, settings, kb):
    srv.script(UNSUPPORTED, GOOD)
    answer = ask(HBGL_QUESTION, kb.open(), settings)
    assert answer.state == "answered_after_retry" and storable(answer.as_dict())


def test_memory_store_is_bounded(srv, settings, kb):
    store = MemoryStore(limit=2)
    index = kb.open()
    srv.default_reply = Reply(GOOD)
    for question in ("Wie hoch ist die HBGL 2026 monatlich?", "HBGL 2026 monatlich?", "Höchstbeitragsgrundlage 2026?"):
        store.remember(ask(question, index, settings).as_dict())
        assert len(store.answers) <= 2
    assert len(store.answers) == 2


def test_survey_key_covers_every_map_call(srv, settings, kb):
    """A survey's first model step is one map call per block: its key changes with any block."""
    question = "Gib mir einen Überblick über die Höchstbeitragsgrundlage"
    srv.default_reply = Reply("–")
    index = kb.open()
    first = ask(question, index, settings)
    assert first.plan["kind"] == "survey"
    maps = len(chats(srv))
    assert maps >= 2
    second = ask(question, index, settings)
    assert second.prompt_key == first.prompt_key
    blocks = [r["messages"][1]["content"] for r in chats(srv)[:maps]]
    last_entry = next(i for i in KB_ENTRIES if f"{i} ·" in blocks[-1])
    kb.write(last_entry, key_values=KB_ENTRIES[last_entry]["key_values"] + "\n- ergänzt: 1 Zeile")
    kb.reindex()
    third = ask(question, kb.open(), settings)
    assert third.prompt_key != first.prompt_key


def test_a_question_with_lone_surrogates_has_a_key():
    """Hostile input (tests/hostile.py) reaches the key too: hashing it must not fail."""
    from pv_agent.engine.answer.context import Context
    from pv_agent.engine.answer.reuse import prompt_key

    key = prompt_key([[{"role": "user", "content": "Frage \ud800 \udfff"}]], Context(blocks=[], budget=1), Settings(),
                     prompt_version="v2", year=2026, supported=True)
    assert len(key) == 64

