"""The OpenAI-compatible client (vLLM, llama-server, …) against a scripted ``/v1`` server: what it
sends, what it makes of each reply, and that it fails with the same German reasons as
``OllamaClient`` — then ``ask`` end to end through it, in the same states as over Ollama."""
from __future__ import annotations

import math

import pytest
from answer_helpers import build_test_index

from pv_agent.engine.answer.ask import ask
from pv_agent.engine.config import Settings
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.llm_clients import make_client, url_is_local
from pv_agent.engine.llm_clients.ollama import OllamaClient
from pv_agent.engine.llm_clients.openai import OpenAIClient
from pv_agent.engine.ollama import OllamaError, OllamaModelMissing, OllamaTimeout, OllamaUnavailable
from pv_agent.tests.ollama_api_server import embed_text
from pv_agent.tests.openai_api_server import OpenAIAPIServer, Reply

HBGL_QUESTION = "Wie hoch ist die HBGL 2026 monatlich?"
GOOD = "Die HBGL 2026 beträgt monatlich 6.930 € und täglich 231 € (Stand 2026-01) [pv-sv-02]."


@pytest.fixture
def srv():
    with OpenAIAPIServer() as server:
        yield server


@pytest.fixture
def settings(srv):
    return Settings(llm_api="openai", ollama_url=srv.url, chat_timeout=5.0, num_predict=256)


def chats(srv):
    return srv.requests_to("/v1/chat/completions")


# -- choosing the client ----------------------------------------------------------------------
def test_make_client_follows_the_api_setting(settings):
    assert isinstance(make_client(settings), OpenAIClient)
    assert isinstance(make_client(settings.replace(llm_api="ollama")), OllamaClient)
    with pytest.raises(ValueError, match="erlaubt sind ollama, openai"):
        make_client(settings.replace(llm_api="grpc"))


def test_environment_selects_the_openai_api_and_its_url():
    env = {"PV_AGENT_LLM_API": "OpenAI", "OLLAMA_URL": "http://a:11434", "PV_AGENT_LLM_URL": "http://b:8000/v1",
           "PV_AGENT_LLM_API_KEY": "sk-geheim", "PV_AGENT_SEED": "42"}
    cfg = Settings.from_env(env)
    assert (cfg.llm_api, cfg.ollama_url, cfg.llm_api_key, cfg.seed) == ("openai", "http://b:8000/v1", "sk-geheim", 42)
    assert "sk-geheim" not in repr(cfg)  # a logged Settings never shows the key
    assert Settings.from_env({"OLLAMA_URL": "http://a:11434"}).ollama_url == "http://a:11434"
    with pytest.raises(ValueError, match="PV_AGENT_LLM_API='vllm'"):
        Settings.from_env({"PV_AGENT_LLM_API": "vllm"})


# -- chat -------------------------------------------------------------------------------------
def test_streamed_chat_sends_max_tokens_temperature_seed_and_joins_the_deltas(srv, settings):
    srv.script(GOOD)
    result = make_client(settings.replace(seed=7, llm_api_key="sk-test")).chat([{"role": "user", "content": "Frage"}])
    assert (result.content, result.done_reason, result.model) == (GOOD, "stop", settings.chat_model)
    [sent] = srv.requests
    body = sent["json"]
    assert body["stream"] is True and body["max_tokens"] == 256 and body["temperature"] == settings.temperature
    assert body["seed"] == 7 and body["model"] == settings.chat_model
    assert body["messages"] == [{"role": "user", "content": "Frage"}]
    assert sent["headers"]["Authorization"] == "Bearer sk-test"


def test_no_key_no_seed_sends_neither(srv, settings):
    srv.script(GOOD)
    make_client(settings).chat([{"role": "user", "content": "Frage"}], num_predict=99)
    [sent] = srv.requests
    assert "Authorization" not in sent["headers"] and "seed" not in sent["json"]
    assert sent["json"]["max_tokens"] == 99


def test_non_streamed_chat_and_length_stop(srv, settings):
    srv.script(Reply("halb", done_reason="length"))
    result = make_client(settings).chat([{"role": "user", "content": "x"}], stream=False)
    assert (result.content, result.done_reason) == ("halb", "length")
    assert chats(srv)[0]["stream"] is False


def test_json_schema_format_becomes_response_format(srv, settings):
    srv.script('{"a": 1}')
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    make_client(settings).chat([{"role": "user", "content": "x"}], format=schema)
    assert chats(srv)[0]["response_format"] == {"type": "json_schema", "json_schema": {"name": "antwort", "schema": schema}}


def test_a_thinking_block_is_not_part_of_the_answer(srv, settings):
    srv.script("<think>Die Frage betrifft die HBGL.</think>\n" + GOOD)
    assert make_client(settings).chat([{"role": "user", "content": "x"}]).content == GOOD


def test_server_url_may_end_in_v1(srv, settings):
    srv.script(GOOD)
    client = make_client(settings.replace(ollama_url=srv.url + "/v1/"))
    assert client.chat([{"role": "user", "content": "x"}]).content == GOOD


@pytest.mark.parametrize(
    "reply, error, text",
    [
        (Reply("Die HBGL beträgt", error_line="CUDA out of memory"), OllamaError, "mitten in der Antwort: CUDA out of memory"),
        (Reply("Die HBGL beträgt 6.930 €", garbage=True), OllamaError, "kein JSON"),
        (Reply("Die HBGL beträgt 6.930 €", cut=True), OllamaError, None),
        (Reply(status=500, error="llama runner crashed"), OllamaError, "HTTP 500: llama runner crashed"),
        (Reply(status=400, error="the request exceeds the available context size"), OllamaError, "context size"),
    ],
    ids=["error-mid-stream", "garbage", "cut", "http-500", "context-too-long"],
)
def test_broken_replies_raise_a_model_error(srv, settings, reply, error, text):
    srv.script(reply)
    with pytest.raises(error, match=text) as caught:
        make_client(settings).chat([{"role": "user", "content": "x"}])
    assert caught.value.reason.startswith("Sprachmodell")


def test_failures_carry_the_same_german_reasons_as_ollama(srv, settings):
    with pytest.raises(OllamaModelMissing) as missing:
        make_client(settings.replace(chat_model="gibtsnicht:7b")).chat([{"role": "user", "content": "x"}])
    assert missing.value.reason == OllamaModelMissing.reason and "gibtsnicht:7b" in str(missing.value)

    srv.script(Reply(GOOD, delay=1.5))
    with pytest.raises(OllamaTimeout) as late:
        make_client(settings.replace(chat_timeout=0.5)).chat([{"role": "user", "content": "x"}])
    assert late.value.reason == "Sprachmodell antwortet nicht rechtzeitig"

    srv.loading = True
    with pytest.raises(OllamaUnavailable, match="HTTP 503"):
        make_client(settings).chat([{"role": "user", "content": "x"}])


def test_a_wrong_or_missing_key_is_named(settings):
    with OpenAIAPIServer(api_key="sk-richtig") as guarded:
        cfg = settings.replace(ollama_url=guarded.url)
        for key in ("", "sk-falsch"):
            with pytest.raises(OllamaError, match="HTTP 401.*API-Schlüssel prüfen"):
                make_client(cfg.replace(llm_api_key=key)).list_models()
        assert make_client(cfg.replace(llm_api_key="sk-richtig")).list_models() == ["bge-m3", "qwen3.8:27b"]


def test_unreachable_and_unusable_urls():
    dead = Settings(llm_api="openai", ollama_url="http://127.0.0.1:9", connect_timeout=0.5)
    with pytest.raises(OllamaUnavailable) as caught:
        make_client(dead).chat([{"role": "user", "content": "x"}])
    assert caught.value.reason == "Sprachmodell nicht erreichbar"
    with pytest.raises(OllamaUnavailable, match="muss mit http:// oder https:// beginnen"):
        make_client(dead.replace(ollama_url="ftp://server")).list_models()


# -- models and embeddings --------------------------------------------------------------------
def test_model_list_comes_from_v1_models(srv, settings):
    assert make_client(settings).list_models() == ["bge-m3", "qwen3.8:27b"]
    assert srv.requests[0]["path"] == "/v1/models"


def test_embeddings_are_in_input_order_unit_length_and_batched(srv, settings):
    texts = [f"Sonderzahlung {n}" for n in range(5)]
    vectors = make_client(settings.replace(embed_batch_size=2)).embed(texts)
    assert len(srv.requests_to("/v1/embeddings")) == 3  # 2 + 2 + 1
    for text, vector in zip(texts, vectors):
        assert math.isclose(sum(x * x for x in vector), 1.0, rel_tol=1e-6)
        assert vector == pytest.approx(embed_text(text, srv.dim), abs=1e-6)  # the server sent them reversed, scaled


def test_embedding_failures_say_embedding_model(srv, settings):
    with pytest.raises(OllamaModelMissing) as caught:
        make_client(settings.replace(embed_model="gibtsnicht")).embed(["x"])
    assert caught.value.reason == "Embedding-Modell auf dem Ollama-Server nicht vorhanden"


def test_local_network_urls():
    local = ["http://localhost:11434", "http://127.0.0.1:8080", "http://10.0.0.5:8000/v1", "http://192.168.1.20",
             "http://[::1]:8080", "http://ollama:11434", "http://gpu01.lan:8000", "http://vllm.internal"]
    remote = ["https://api.openai.com/v1", "http://8.8.8.8:8000", "https://vllm.example.com", "kein-url", ""]
    assert [u for u in local if not url_is_local(u)] == []
    assert [u for u in remote if url_is_local(u)] == []


# -- ask end to end over the OpenAI-compatible API ----------------------------------------------
@pytest.fixture(scope="module")
def index_path(tmp_path_factory):
    return build_test_index(tmp_path_factory.mktemp("kb"))


@pytest.fixture
def index(index_path):
    idx = SidecarIndex.open(index_path)
    yield idx
    idx.close()


def test_ask_answers_through_the_openai_api(srv, settings, index):
    srv.script(GOOD)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "answered", answer.as_dict()
    assert [c["id"] for c in answer.citations] == ["pv-sv-02"] and answer.citations[0]["supported"] is True
    assert answer.mode == "hybrid"  # the question was embedded through /v1/embeddings
    assert srv.requests_to("/v1/embeddings") and len(chats(srv)) == 1


@pytest.mark.parametrize("reply", [Reply(status=500, error="kaputt"), Reply("Die HBGL beträgt", cut=True)],
                         ids=["http-500", "cut"])
def test_ask_falls_back_to_sources_like_over_ollama(srv, settings, index, reply):
    srv.script(reply)
    answer = ask(HBGL_QUESTION, index, settings)
    assert answer.state == "sources_only" and "Sprachmodell" in answer.notice
    assert answer.citations[0]["id"] == "pv-sv-02"


# -- the command line ---------------------------------------------------------------------------
def test_cli_asks_through_the_openai_api(srv, index_path, capsys, monkeypatch):
    from tools.cli.__main__ import main

    monkeypatch.setenv("PV_AGENT_LLM_API", "openai")
    monkeypatch.setenv("PV_AGENT_LLM_URL", srv.url + "/v1")
    srv.script(GOOD)
    assert main(["ask", HBGL_QUESTION, "--index", index_path, "--json"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "answered" and out["citations"][0]["id"] == "pv-sv-02"
    assert len(chats(srv)) == 1
    monkeypatch.setenv("PV_AGENT_LLM_API", "grpc")
    assert main(["ask", HBGL_QUESTION, "--index", index_path]) == 2  # a usage error, said on stderr
    assert "PV_AGENT_LLM_API='grpc'" in capsys.readouterr().err


def test_eval_sample_spreads_over_the_goldset():
    from tools.cli.eval import spread_sample

    questions = list(range(204))
    picked = spread_sample(questions, 12)
    assert len(picked) == 12 and picked[0] == 0 and picked[-1] > 180 and picked == sorted(set(picked))
    assert spread_sample(questions, 500) == questions
