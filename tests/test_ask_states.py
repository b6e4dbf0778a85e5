"""End to end: a real index over a small knowledge base, the Ollama-API test server with
scripted replies, and ``ask`` ending in the right state for each situation."""
from __future__ import annotations

import dataclasses

import pytest
from answer_helpers import build_test_index

from pv_agent.engine.answer import prompts
from pv_agent.engine.answer.ask import ask
from pv_agent.engine.config import Settings
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply

HBGL_QUESTION = "Wie hoch ist die HBGL 2026 monatlich?"
GOOD = "Die HBGL 2026 beträgt monatlich 6.930 € und täglich 231 € (Stand 2026-01) [pv-sv-02]."


@pytest.fixture(scope="module")
def index_path(tmp_path_factory):
    return build_test_index(tmp_path_factory.mktemp("kb"))


@pytest.fixture
def srv():
    with OllamaAPIServer() as server:
        yield server


@pytest.fixture
def settings(srv):
    return Settings(ollama_url=srv.url, chat_timeout=5.0, num_predict=256)


@pytest.fixture
def index(index_path):
    idx = SidecarIndex.open(index_path)
    yield idx
    idx.close()


def chats(srv):
    return srv.requests_to("/api/chat")


def test_good_sourced_answer_is_answered(srv, settings, index):
    srv.script(GOOD)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "answered", answer.as_dict()
    assert answer.answer == GOOD
    assert [c["id"] for c in answer.citations] == ["pv-sv-02"]
    assert answer.citations[0]["supported"] is True
    assert answer.citations[0]["stand"] == "2026-01"
    [request] = chats(srv)
    assert request["think"] is False and request["options"]["num_ctx"] == settings.num_ctx
    assert request["options"]["num_predict"] == 256 and request["options"]["temperature"] == settings.temperature
    assert request["messages"][0]["content"] == prompts.system_prompt()
    assert "pv-sv-02 · Höchstbeitragsgrundlage 2026 · Stand 2026-01" in request["messages"][1]["content"]


@pytest.mark.parametrize("draft", [
    "Dazu enthalten die Kontextblöcke keine Aussage.",
    "Das geht aus den Blöcken nicht hervor.",
    "Die Wissensbasis enthält dazu keine Aussage.",
    "Hallo! Wie kann ich helfen?",
    "Rückfrage: Für welches Jahr?",
])
def test_a_draft_citing_nothing_and_claiming_nothing_is_no_answer(srv, settings, index, draft):
    """No citation and no claim (a gap sentence, a refusal in other words, a greeting, a bare
    question back – a real 0.5B model's reply ended ``answered`` without a citation in CI): the
    verifier lets such text stand, but an ``answered`` always cites its sources – the gate
    decides, as for a refusal; the draft stays in the audit trail. Each ended ``answered``
    before."""
    srv.script(draft)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state in ("unanswered", "refused"), answer.as_dict()
    assert answer.drafts == [draft]


def test_citing_an_id_not_retrieved_is_regenerated_with_that_id_named(srv, settings, index):
    srv.script("Die HBGL 2026 beträgt 6.930 € (Stand 2026-01) [pv-sv-99].", GOOD)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "answered_after_retry"
    first, retry = chats(srv)
    instruction = retry["messages"][-1]["content"]
    assert retry["messages"][-2] == {"role": "assistant", "content": "Die HBGL 2026 beträgt 6.930 € (Stand 2026-01) [pv-sv-99]."}
    assert "[pv-sv-99]" in instruction and "steht in keinem Kontextblock" in instruction
    assert answer.first_attempt["flags"]["unknown_citations"] == ["pv-sv-99"]


def test_a_figure_in_no_block_twice_ends_uncertain_and_marked(srv, settings, index):
    bad = "Die HBGL 2026 beträgt monatlich 7.070 € (Stand 2026-01) [pv-sv-02]."
    srv.script(bad, bad)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "uncertain"
    assert "7.070 € **⟨nicht belegt: steht in keinem zitierten Eintrag⟩**" in answer.answer
    assert answer.answer.startswith("> ⚠ **Nicht vollständig belegt.**")
    assert answer.flags["unsupported_figures"][0]["figure"] == "7.070 €"
    assert answer.citations[0]["supported"] is False
    assert "„7.070 €“" in chats(srv)[1]["messages"][-1]["content"]


def test_citing_a_block_whose_figure_is_in_another_block(srv, settings, index):
    wrong = "Die HBGL 2026 beträgt monatlich 6.450 € (Stand 2026-01) [pv-sv-02]."
    srv.script(wrong, GOOD)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "answered_after_retry"
    instruction = chats(srv)[1]["messages"][-1]["content"]
    assert "„6.450 €“" in instruction and "Die Zahl steht in [pv-sv-01]" in instruction


def test_conflict_answered_with_one_side_then_both(srv, settings, index):
    question = "Wie hoch war die Freigrenze für Sonderzahlungen 2024?"
    one_side = "Die Freigrenze 2024 betrug 2.100 € (Stand 2024-01) [pv-sz-03]."
    both = ("⚠ Die Quellen widersprechen sich: 2.100 € laut [pv-sz-03], ⚠ 2.447 € laut der nicht amtlichen "
            "Quelle [pv-sz-04] (Stand 2024-01).")
    srv.script(one_side, both)
    answer = ask(question, index, settings)
    assert answer.state == "answered_after_retry", answer.as_dict()
    instruction = chats(srv)[1]["messages"][-1]["content"]
    assert "widersprechen sich; du zitierst nur [pv-sz-03]" in instruction
    assert answer.first_attempt["flags"]["conflicts"][0]["one_sided"] is True
    assert answer.flags["conflicts"][0]["ids"] == ["pv-sz-03", "pv-sz-04"]


def test_conflict_answered_with_one_side_twice_is_uncertain(srv, settings, index):
    one_side = "Die Freigrenze 2024 betrug 2.100 € (Stand 2024-01) [pv-sz-03]."
    srv.script(one_side, one_side)
    answer = ask("Wie hoch war die Freigrenze für Sonderzahlungen 2024?", index, settings)
    assert answer.state == "uncertain"
    assert "die Antwort zitiert nur [pv-sz-03], nicht: [pv-sz-04]" in answer.answer


def test_reply_cut_for_length_is_retried_with_twice_the_budget(srv, settings, index):
    srv.script(Reply("Die HBGL 2026 beträgt", done_reason="length"), GOOD)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "answered"
    budgets = [r["options"]["num_predict"] for r in chats(srv)]
    assert budgets == [256, 512]
    assert answer.llm_calls == 2


def test_reply_cut_for_length_twice_is_regenerated_shorter_then_uncertain(srv, settings, index):
    cut = Reply("Die HBGL 2026 beträgt monatlich 6.930 € [pv-sv-02] und", done_reason="length")
    srv.script(cut, cut, cut, cut)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "uncertain"
    assert [r["options"]["num_predict"] for r in chats(srv)] == [256, 512, 256, 512]
    assert "Antworte deutlich kürzer" in chats(srv)[2]["messages"][-1]["content"]
    assert answer.flags["truncated"] is True and "Antwort unvollständig" in answer.answer


@pytest.mark.parametrize(
    "reply, reason",
    [
        (Reply("Die HBGL beträgt 6.930 € laut", error_line="CUDA out of memory"), "Sprachmodell-Fehler"),
        (Reply(status=500, error="llama runner crashed"), "Sprachmodell-Fehler"),
        (Reply("Die HBGL beträgt 6.930 € laut Eintrag", garbage=True), "Sprachmodell-Fehler"),
        (Reply("Die HBGL beträgt 6.930 € laut Eintrag", cut=True), "Sprachmodell"),
    ],
    ids=["error-line-mid-stream", "http-500", "non-json-garbage", "cut-stream"],
)
def test_broken_model_replies_give_sources_only(srv, settings, index, reply, reason):
    srv.script(reply)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "sources_only", answer.as_dict()
    assert answer.answer.startswith("**Keine Antwort – nur Quellen.**")
    assert reason in answer.notice
    assert "6.930 €" in answer.answer  # the Kernwerte section of the best entry
    assert answer.citations[0]["id"] == "pv-sv-02" and answer.citations[0]["section"] == "Kernwerte & Fristen"


def test_unknown_chat_model_gives_sources_only(srv, settings, index):
    answer = ask(HBGL_QUESTION, index, settings.replace(chat_model="gibtsnicht:7b"))
    assert answer.state == "sources_only"
    assert "Modell auf dem Ollama-Server nicht vorhanden" in answer.notice
    assert answer.mode == "hybrid"  # the embedding model is there


def test_timeout_gives_sources_only(srv, settings, index):
    srv.script(Reply(GOOD, delay=1.5))
    answer = ask(HBGL_QUESTION, index, settings.replace(chat_timeout=0.5))
    assert answer.state == "sources_only"
    assert "rechtzeitig" in answer.notice


def test_no_ollama_at_all_gives_sources_only_from_lexical_search(index):
    settings = Settings(ollama_url="http://127.0.0.1:9", connect_timeout=0.5)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "sources_only"
    assert answer.mode == "lexical"
    assert "Sprachmodell nicht erreichbar" in answer.notice
    assert answer.citations and answer.citations[0]["id"] == "pv-sv-02"


@pytest.mark.parametrize("question", ["Hallo!", "Servus, wie geht's dir?", "Danke!"])
def test_greeting_is_off_topic_without_retrieval_or_model(srv, settings, index, question):
    answer = ask(question, index, settings)
    assert answer.state == "off_topic"
    assert answer.answer == prompts.text("off_topic")
    assert srv.requests == []


def test_outside_question_is_off_topic_without_model(srv, settings, index):
    answer = ask("Wie wird das Wetter morgen in Wien?", index, settings)
    assert answer.state == "off_topic"
    assert srv.requests == []


def test_nothing_relevant_retrieved_is_refused_without_model(srv, settings, index):
    answer = ask("Wie mache ich die Umsatzsteuervoranmeldung für das Quartal?", index, settings)
    assert answer.state == "refused", answer.as_dict()
    assert answer.answer == "Dazu enthält die Wissensbasis keine Aussage."
    assert chats(srv) == []


UNCOVERED_QUESTION = "Wieviel darf ich bei einer Lohnpfändung vom Lohn einbehalten?"  # retrieved, but not covered


def _past_the_first_gate(settings):
    """Settings whose pre-model gate (gates.nothing_relevant) lets every retrieved entry through,
    so that an uncovered question reaches the model and the refusal check after it."""
    return dataclasses.replace(settings, min_coverage=0.0)


def test_model_refusal_of_an_uncovered_question_is_refused(srv, settings, index):
    srv.script(prompts.REFUSAL)
    answer = ask(UNCOVERED_QUESTION, index, _past_the_first_gate(settings))
    assert len(chats(srv)) == 1
    assert answer.state == "refused", answer.as_dict()
    assert answer.citations == [] and answer.answer == prompts.REFUSAL
    assert answer.as_dict()["drafts"] == [prompts.REFUSAL]


def test_model_refusal_of_a_covered_question_shows_the_entries_unchecked(srv, settings, index):
    """Issue 28: the model's "nothing in the knowledge base" is checked by the gate; the HBGL
    entries exist, so the clerk gets them (unanswered), not a false refusal."""
    srv.script(prompts.REFUSAL)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "unanswered", answer.as_dict()
    assert answer.answer.startswith(prompts.text("unanswered_heading"))
    assert prompts.REFUSAL not in answer.answer
    assert "pv-sv-02" in [c["id"] for c in answer.citations]
    assert all(c["supported"] is None for c in answer.citations)  # nothing of it was checked
    assert "6.930 €" in answer.answer  # the key values, as sources_only shows them
    d = answer.as_dict()
    assert d["drafts"] == [prompts.REFUSAL]  # the audit trail keeps the model's text
    assert d["fingerprints"] and {f["id"] for f in d["fingerprints"]} <= {c["id"] for c in answer.citations}
    assert len(chats(srv)) == 1  # a refusal is not regenerated


def test_model_refusal_after_the_regeneration_is_checked_too(srv, settings, index):
    srv.script("Die HBGL beträgt 551,10 €.", prompts.REFUSAL)  # uncited figure, then the refusal sentence
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "unanswered", answer.as_dict()
    assert answer.as_dict()["drafts"] == ["Die HBGL beträgt 551,10 €.", prompts.REFUSAL]
    assert "551,10" not in answer.answer and answer.first_attempt


def test_regenerated_answer_without_valid_citation_shows_the_entries_unchecked(srv, settings, index):
    srv.script("Die HBGL ist 7.000 € [pv-xx-01].", "Die HBGL ist 7.000 € [pv-xx-02].")
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "unanswered", answer.as_dict()
    assert "7.000" not in answer.answer and "pv-xx" not in answer.answer
    assert "pv-sv-02" in [c["id"] for c in answer.citations]


def test_regenerated_answer_without_valid_citation_on_an_uncovered_question_is_refused(srv, settings, index):
    srv.script("Es sind 500 € [pv-xx-01].", "Es sind 500 € [pv-xx-02].")
    answer = ask(UNCOVERED_QUESTION, index, _past_the_first_gate(settings))
    assert len(chats(srv)) == 2
    assert answer.state == "refused"
    assert answer.answer == prompts.REFUSAL
    assert answer.flags["unknown_citations"] == ["pv-xx-02"]


def test_answer_object_has_the_audit_fields(srv, settings, index):
    srv.script(GOOD)
    d = ask(HBGL_QUESTION, index, settings).as_dict()
    assert set(d) >= {"state", "answer", "citations", "retrieved", "flags", "timings", "models", "prompt_version",
                      "question", "mode", "notice"}
    assert set(d["flags"]) >= {"unknown_citations", "unsupported_figures", "conflicts"}
    assert set(d["timings"]) == {"retrieve_ms", "context_ms", "llm_ms", "verify_ms", "total_ms"}
    assert sum(d["timings"][k] for k in ("retrieve_ms", "context_ms", "llm_ms", "verify_ms")) <= d["timings"]["total_ms"] + 0.5
    assert set(d["citations"][0]) == {"id", "title", "stand", "section", "supported"}
    assert d["retrieved"][0]["id"] == "pv-sv-02" and "score" in d["retrieved"][0]
    assert d["models"] == {"chat": settings.chat_model, "embed": settings.embed_model}
    assert d["prompt_version"] == prompts.PROMPT_VERSION


def test_survey_question_goes_map_reduce_and_is_verified_against_the_blocks(srv, settings, index):
    from pv_agent.engine.retrieval.retrieve import retrieve

    question = "Gib mir einen Überblick über die Höchstbeitragsgrundlage"
    hits = retrieve(index, question, settings, embedder=OllamaClient(settings), k=settings.survey_blocks).hits
    distil = {
        "pv-sv-02": "- HBGL 2026 monatlich 6.930 € (Stand 2026-01) [pv-sv-02]",
        "pv-sv-01": "- HBGL 2025 monatlich 6.450 € (Stand 2025-01) [pv-sv-01]",
    }
    srv.script(*[distil.get(h.entry_id, "–") for h in hits])
    synthesis = ("Die HBGL beträgt monatlich 6.930 € (Stand 2026-01) [pv-sv-02]; "
                 "2025 waren es 6.450 € (Stand 2025-01) [pv-sv-01].")
    srv.script(synthesis)
    answer = ask(question, index, settings)
    assert answer.state == "answered", answer.as_dict()
    assert answer.plan["kind"] == "survey"
    requests = chats(srv)
    assert len(requests) == len(hits) + 1 and answer.llm_calls == len(hits) + 1
    assert "Fasse aus dem folgenden Kontextblock" in requests[0]["messages"][1]["content"]
    reduce_prompt = requests[-1]["messages"][1]["content"]
    assert prompts.text("reduce_note") in reduce_prompt
    assert "[pv-sv-02]" in reduce_prompt and "pv-ur-01 ·" not in reduce_prompt


def test_question_with_two_years_is_planned_as_two_sub_queries(srv, settings, index):
    srv.script("2025: 6.450 € (Stand 2025-01) [pv-sv-01]; 2026: 6.930 € (Stand 2026-01) [pv-sv-02].")
    answer = ask("HBGL 2025 und 2026 monatlich?", index, settings)
    assert answer.state == "answered", answer.as_dict()
    assert [q["year"] for q in answer.plan["queries"]] == [2025, 2026]
    assert {r["id"] for r in answer.retrieved} >= {"pv-sv-01", "pv-sv-02"}
    embeds = srv.requests_to("/api/embed")
    # one embedding per sub-query, each with its year; the model reads abbreviations spelled out
    # (textnorm.glossed)
    assert [e["input"] for e in embeds] == [["HBGL (Höchstbeitragsgrundlage) und monatlich? 2025"],
                                            ["HBGL (Höchstbeitragsgrundlage) und monatlich? 2026"]]


def test_answer_keeps_a_fingerprint_of_every_cited_section(srv, settings, index):
    srv.script(GOOD)
    answer = ask(HBGL_QUESTION, index, settings).as_dict()
    # Every section shown of the cited entry: its best section and, beside it, its key values
    # (with the query glosses the test server's hash embeddings rank the summary first; before,
    # the key-values section itself, one fingerprint).
    fingerprints = answer["fingerprints"]
    assert {f["id"] for f in fingerprints} == {"pv-sv-02"} and all(len(f["chunk_hash"]) == 64 for f in fingerprints)
    assert len({f["chunk_hash"] for f in fingerprints}) == len(fingerprints)
    assert any(f["section"] == "Kernwerte & Fristen" and "6.930 €" in f["text"] for f in fingerprints)
    rows = index.chunks_of_entries(["pv-sv-02"])
    assert {f["chunk_hash"] for f in fingerprints} <= {r.content_hash for r in rows}


def test_answer_from_another_years_entry_says_so(srv, settings, index):
    old = "Die HBGL beträgt monatlich 6.450 € (Stand 2025-01) [pv-sv-01]."
    srv.script(old)
    answer = ask("Wie hoch ist die HBGL 2027 monatlich?", index, settings)
    assert answer.state == "answered"
    assert answer.answer.startswith("_Die Wissensbasis enthält dazu nur den Stand 2025-01._")
    assert answer.flags["other_year"] == {"asked": 2027, "stands": ["2025-01"]}
    srv.script(GOOD)
    same_year = ask(HBGL_QUESTION, index, settings)
    assert "nur den Stand" not in same_year.answer and "other_year" not in same_year.flags
