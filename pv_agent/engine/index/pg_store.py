"""The PostgreSQL + pgvector store: the same index as the sidecar, in a database that several
Odoo servers share (design.md §8). This module owns every SQL string of that store.

``PgIndex`` is the read side (the ``IndexReader`` protocol of base.py); ``PgTarget`` and
``PgWriter`` are the write side used by indexer.build_index when its target is a DSN.

Layout (all names start with ``pv_index_``, so they never meet Odoo's model tables):

* ``pv_index_state`` – one row: the live build, the generation and the metadata. Readers look
  only at this row to find their tables; a full build flips it in one transaction.
* ``pv_index_builds`` – every build's table set and whether it is building, live or retired.
* ``pv_index_embedding_cache`` – vectors by (model, content hash), shared by all builds.
* per build ``b``: ``pv_index_b<b>_entries``, ``pv_index_b<b>_chunks`` (metadata, a ``tsvector``
  of the folded words with a GIN index, a pgvector ``embedding`` column with an HNSW cosine
  index) and ``pv_index_b<b>_terms`` (term frequencies per chunk and column).

Lexical search ranks with the BM25 that SQLite FTS5 computes (k1 1.2, b 0.75, head weight 2,
body 1, same IDF and document lengths) from the term table, read through its covering primary
key alone – ``ts_rank`` is no BM25 and would order hits differently from the sidecar, and a
``tsvector @@ tsquery`` match in the same query only re-checks what the term table already
decided (20 ms more per question at 16k chunks). The ``tsvector`` column (GIN-indexed) holds
the same words for PostgreSQL's own full-text search and gives ``folded_words_of_entries``.
The words are those of ``textnorm.index_text``, exactly as the sidecar stores them, so
ä/ae/a and ß/ss match the same way in both stores.

Over 400 lines on purpose, like sqlite_store.py: schema, reader and writer of one store stay
together, so every SQL string of PostgreSQL is read next to the table it touches.
"""
from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from datetime import datetime, timezone

from ..textnorm import index_text
from ..types import Chunk, Entry, QueryTerm
from .base import (
    SCHEMA_VERSION, ChunkRow, EntryHead, IndexCorrupt, IndexError_, IndexMetaMixin, IndexMissing, _ENTRY_COLUMNS,
    _ENTRY_HEAD_COLUMNS, _entry_from_row, _entry_head_from_row, query_phrases, unpack_vector,
)

# FTS5's bm25() constants and the sidecar's column weights (sqlite_store.SidecarIndex.lexical_search).
BM25_K1 = 1.2
BM25_B = 0.75
HEAD_WEIGHT = 2
BODY_WEIGHT = 1
# A session-level advisory lock key ("pv_index" in hex-ish): one writer per database at a time.
WRITER_LOCK_KEY = 0x70765F696E646578
# PostgreSQL's longest lexeme; longer words live only in the term table (which ranks).
MAX_LEXEME = 2047
# hnsw.ef_search must be at least the number of neighbours asked for (pgvector's limit: 1000).
MAX_EF_SEARCH = 1000


class IndexUnreachable(IndexError_):
    """The database cannot be reached or the driver is missing."""


class PgvectorMissing(IndexError_):
    """The database server lacks the pgvector extension ('vector')."""


def _driver():
    try:
        import psycopg2
        import psycopg2.extras
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise IndexUnreachable(
            "Für den PostgreSQL-Index fehlt der Treiber psycopg2 (pip install -r requirements-pg.txt)."
        ) from exc
    return psycopg2


def describe_dsn(dsn: str) -> str:
    """The DSN for messages and reports, without its password."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", dsn)


def connect(dsn: str):
    """A psycopg2 connection, or IndexUnreachable naming the target (without its password)."""
    psycopg2 = _driver()
    try:
        return psycopg2.connect(dsn, application_name="pv_agent")
    except psycopg2.Error as exc:
        raise IndexUnreachable(f"PostgreSQL {describe_dsn(dsn)} ist nicht erreichbar ({str(exc).strip()}).") from exc


def require_pgvector(conn) -> str:
    """Create the 'vector' extension if the server has it; its version, or PgvectorMissing."""
    psycopg2 = _driver()
    with conn.cursor() as cur:
        cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cur.fetchone()
        if row:
            return row[0]
        cur.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        available = cur.fetchone()
    if not available:
        conn.rollback()
        raise PgvectorMissing(
            "Die PostgreSQL-Erweiterung pgvector (Name 'vector') ist auf dem Datenbankserver nicht installiert – "
            "der PostgreSQL-Index braucht sie. Installieren (z. B. Paket postgresql-<Version>-pgvector aus dem "
            "PGDG-Repository) und dann CREATE EXTENSION vector; siehe docs/pgstore.md."
        )
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.commit()
    except psycopg2.Error as exc:
        conn.rollback()
        raise PgvectorMissing(
            "Die PostgreSQL-Erweiterung pgvector (Name 'vector') ist installiert, aber in dieser Datenbank nicht "
            f"aktiviert, und der Benutzer darf sie nicht anlegen ({str(exc).strip()}). Als Superuser: CREATE EXTENSION vector;"
        ) from exc
    return available[0]


_SHARED_SCHEMA = """
CREATE TABLE IF NOT EXISTS pv_index_state (
    id smallint PRIMARY KEY CHECK (id = 1), build integer NOT NULL, generation integer NOT NULL, meta jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS pv_index_builds (
    build integer PRIMARY KEY, state text NOT NULL, created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS pv_index_embedding_cache (
    model text NOT NULL, content_hash text NOT NULL, vector bytea NOT NULL, PRIMARY KEY (model, content_hash)
);
CREATE SEQUENCE IF NOT EXISTS pv_index_build_seq;
"""

# Per build; {b} is the build number (an int, the only value formatted into SQL).
_BUILD_TABLES = """
CREATE TABLE pv_index_b{b}_entries (
    id text PRIMARY KEY, title text NOT NULL, stand text NOT NULL, topic text NOT NULL, source text NOT NULL,
    official boolean NOT NULL, tags text NOT NULL, legal_bases text NOT NULL, cross_refs text NOT NULL,
    source_ref text NOT NULL, path text NOT NULL, body text NOT NULL, content_hash text NOT NULL
);
CREATE TABLE pv_index_b{b}_chunks (
    rowid integer PRIMARY KEY, chunk_id text UNIQUE NOT NULL, entry_id text NOT NULL, ordinal integer NOT NULL,
    section text NOT NULL, kind text NOT NULL, topic text NOT NULL, source text NOT NULL, header text NOT NULL,
    text text NOT NULL, content_hash text NOT NULL, has_vector boolean NOT NULL DEFAULT false,
    ntokens integer NOT NULL, tsv tsvector NOT NULL
);
CREATE TABLE pv_index_b{b}_terms (
    term text COLLATE "C" NOT NULL, rowid integer NOT NULL, tf_head integer NOT NULL, tf_body integer NOT NULL,
    ntokens integer NOT NULL,  -- the chunk's length, so ranking reads this table's index alone
    PRIMARY KEY (term, rowid) INCLUDE (tf_head, tf_body, ntokens)
);
"""
# Created when a build is complete (faster than maintaining them row by row while loading).
_BUILD_INDEXES = """
CREATE INDEX pv_index_b{b}_chunks_entry ON pv_index_b{b}_chunks (entry_id);
CREATE INDEX pv_index_b{b}_chunks_tsv ON pv_index_b{b}_chunks USING gin (tsv);
CREATE INDEX pv_index_b{b}_terms_rowid ON pv_index_b{b}_terms (rowid);
"""
_VECTOR_INDEX = "CREATE INDEX pv_index_b{b}_chunks_hnsw ON pv_index_b{b}_chunks USING hnsw (embedding vector_cosine_ops)"
_DROP_BUILD = "DROP TABLE IF EXISTS pv_index_b{b}_terms, pv_index_b{b}_chunks, pv_index_b{b}_entries"


def _tables(build: int) -> dict[str, str]:
    b = int(build)
    return {"entries": f"pv_index_b{b}_entries", "chunks": f"pv_index_b{b}_chunks", "terms": f"pv_index_b{b}_terms"}


def vector_literal(vector) -> str:
    """pgvector's text form; repr() of a float32 value parses back to the same float32."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def term_ranges(terms: list[QueryTerm]) -> tuple[list[str], list[str]]:
    """[low, high) bounds in byte order for each term: a prefix term covers every word starting
    with it (``'{'`` follows ``'z'``), an exact term only itself (no word character sorts before
    ``'0'``). Terms hold only [0-9a-z] (textnorm.tokens)."""
    return [t.text for t in terms], [t.text + ("{" if t.prefix else "0") for t in terms]


# -- read side ------------------------------------------------------------------------
class PgIndex(IndexMetaMixin):
    """Read side on PostgreSQL. One instance per process and DSN; ``refresh()`` before use
    notices a flipped build or a new generation (one small query)."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.conn = None
        self.problem = ""
        self._state: tuple | None = None
        self._connect()
        if not self._load_state():
            self.close()
            raise IndexMissing(f"Index in PostgreSQL {describe_dsn(dsn)} fehlt – bitte zuerst indizieren (tools/pv-agent index).")

    @classmethod
    def open(cls, dsn: str) -> "PgIndex":
        return cls(dsn)

    def _connect(self) -> None:
        self.conn = connect(self.dsn)
        self.conn.autocommit = True

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def _query(self, sql: str, params=()) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def _load_state(self) -> bool:
        """Read the state row; True if it changed (or was read for the first time)."""
        psycopg2 = _driver()
        try:
            rows = self._query("SELECT build, generation, meta FROM pv_index_state WHERE id = 1")
        except psycopg2.errors.UndefinedTable:
            return False
        if not rows:
            return False
        build, generation, meta = rows[0]
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexCorrupt("Index in PostgreSQL hat ein anderes Schema – bitte neu indizieren (--full).")
        state = (build, generation)
        changed = state != self._state
        self._state, self.meta = state, {k: str(v) for k, v in meta.items()}
        self.build = build
        self._t = _tables(build)
        if changed:
            self._vocab = None
            self._bm25_stats = None
        return changed

    def refresh(self) -> bool:
        """Follow the state row. If the database cannot be reached, the next query will say
        so; ``problem`` says why the last refresh failed."""
        psycopg2 = _driver()
        try:
            if self.conn.closed:
                self._connect()
            changed = self._load_state()
        except psycopg2.OperationalError as exc:
            self.problem = f"PostgreSQL nicht erreichbar ({str(exc).strip()})."
            with contextlib.suppress(psycopg2.Error):
                self.conn.close()
            return False
        self.problem = ""
        return changed

    # -- metadata ---------------------------------------------------------------------
    def stats(self) -> dict:
        t = self._t
        entries = self._query(f"SELECT count(*) FROM {t['entries']}")[0][0]
        chunks, vectors = self._query(f"SELECT count(*), count(*) FILTER (WHERE has_vector) FROM {t['chunks']}")[0]
        size = self._query(
            "SELECT sum(pg_total_relation_size(to_regclass(name))) FROM unnest(%s::text[]) AS name", (list(t.values()),)
        )[0][0]
        return {
            "path": describe_dsn(self.dsn),
            "store": "postgresql",
            "build": self.build,
            "entries": entries,
            "chunks": chunks,
            "vectors": vectors,
            **self._meta_stats(),
            "size_bytes": int(size or 0),
        }

    # -- entries and chunks -----------------------------------------------------------
    def entry(self, entry_id: str) -> Entry | None:
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM {self._t['entries']} WHERE id = %s", (entry_id,))
        return _entry_from_row(rows[0]) if rows else None

    def entries_by_id(self, ids) -> dict[str, Entry]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._query(f"SELECT {_ENTRY_COLUMNS} FROM {self._t['entries']} WHERE id = ANY(%s)", (ids,))
        return {r[0]: _entry_from_row(r) for r in rows}

    def entry_heads(self, ids) -> dict[str, EntryHead]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._query(f"SELECT {_ENTRY_HEAD_COLUMNS} FROM {self._t['entries']} WHERE id = ANY(%s)", (ids,))
        found = {r[0]: _entry_head_from_row(r) for r in rows}
        return {i: found[i] for i in ids if i in found}

    def entry_tags(self, ids=None) -> dict[str, tuple[str, ...]]:
        if ids is None:  # every entry's, in id order (byte order, as the sidecar's)
            rows = self._query(f'SELECT id, tags FROM {self._t["entries"]} ORDER BY id COLLATE "C"')
            return {r[0]: tuple(json.loads(r[1])) for r in rows}
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._query(f"SELECT id, tags FROM {self._t['entries']} WHERE id = ANY(%s)", (ids,))
        found = {r[0]: tuple(json.loads(r[1])) for r in rows}
        return {i: found[i] for i in ids if i in found}

    def stand_years(self, entry_ids) -> dict[str, int]:
        rows = self._query(
            f"SELECT id, CAST(substr(stand, 1, 4) AS integer) FROM {self._t['entries']} WHERE id = ANY(%s)",
            (list(entry_ids),),
        )
        return dict(rows)

    def entry_ids(self) -> list[str]:
        return [r[0] for r in self._query(f'SELECT id FROM {self._t["entries"]} ORDER BY id COLLATE "C"')]

    def entry_hashes(self) -> dict[str, str]:
        return dict(self._query(f"SELECT id, content_hash FROM {self._t['entries']}"))

    _CHUNK_COLUMNS = "rowid, chunk_id, entry_id, ordinal, section, kind, header, text, content_hash, has_vector"

    def chunks_by_rowid(self, rowids) -> dict[int, ChunkRow]:
        rowids = list(dict.fromkeys(rowids))
        if not rowids:
            return {}
        rows = self._query(f"SELECT {self._CHUNK_COLUMNS} FROM {self._t['chunks']} WHERE rowid = ANY(%s)", (rowids,))
        return {r[0]: ChunkRow(*r) for r in rows}

    def chunks_of_entries(self, entry_ids, kind: str | None = None) -> list[ChunkRow]:
        entry_ids = list(dict.fromkeys(entry_ids))
        if not entry_ids:
            return []
        rows = self._query(
            f"SELECT {self._CHUNK_COLUMNS} FROM {self._t['chunks']} WHERE entry_id = ANY(%s)"
            " AND (%s::text IS NULL OR kind = %s)"
            ' ORDER BY entry_id COLLATE "C", ordinal',
            (entry_ids, kind, kind),
        )
        return [ChunkRow(*r) for r in rows]

    def chunk_outline(self, entry_ids) -> dict[str, tuple[tuple[int, str], ...]]:
        """(rowid, kind) of each entry's chunks in section order, without their text."""
        entry_ids = list(dict.fromkeys(entry_ids))
        if not entry_ids:
            return {}
        rows = self._query(
            f"SELECT entry_id, rowid, kind FROM {self._t['chunks']} WHERE entry_id = ANY(%s) ORDER BY entry_id, ordinal",
            (entry_ids,),
        )
        out: dict[str, list[tuple[int, str]]] = {}
        for eid, rowid, kind in rows:
            out.setdefault(eid, []).append((rowid, kind))
        return {eid: tuple(out[eid]) for eid in entry_ids if eid in out}

    def chunk_keys(self, rowids) -> dict[int, tuple[str, str]]:
        """(entry id, kind) of each chunk: all that fusion needs, without the text."""
        rowids = list(dict.fromkeys(rowids))
        if not rowids:
            return {}
        rows = self._query(f"SELECT rowid, entry_id, kind FROM {self._t['chunks']} WHERE rowid = ANY(%s)", (rowids,))
        return {r[0]: (r[1], r[2]) for r in rows}

    # -- search -----------------------------------------------------------------------
    def _bm25_totals(self) -> tuple[int, float]:
        """(rows, average tokens per row) of the whole chunk table, as FTS5 keeps them; cached per generation."""
        if self._bm25_stats is None:
            rows, tokens = self._query(f"SELECT count(*), coalesce(sum(ntokens), 0) FROM {self._t['chunks']}")[0]
            self._bm25_stats = (rows, (tokens / rows) if rows else 1.0)
        return self._bm25_stats

    def lexical_search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]:
        """(chunk rowid, bm25) best first for an OR of ``terms`` – FTS5's bm25(chunks_fts, 2.0, 1.0)."""
        if not terms:
            return []
        n_rows, avgdl = self._bm25_totals()
        if not n_rows:
            return []
        lows, highs = term_ranges(terms)
        phrase = {id(term): i for i, members in enumerate(query_phrases(terms), start=1) for term in members}
        t = self._t
        sql = f"""
            WITH q AS (  -- i: the scoring unit; the terms of one group (QueryTerm.group) share it
                SELECT * FROM unnest(%(lows)s::text[], %(highs)s::text[], %(units)s::int[]) AS q(low, high, i)
            ),
            f AS (  -- f(qi, D): weighted instances of each query term (or group) in each chunk
                SELECT t.rowid, q.i, sum({HEAD_WEIGHT} * t.tf_head + {BODY_WEIGHT} * t.tf_body)::float8 AS freq,
                       min(t.ntokens) AS ntokens
                FROM q JOIN {t['terms']} t ON t.term >= q.low COLLATE "C" AND t.term < q.high COLLATE "C"
                GROUP BY t.rowid, q.i
            ),
            idf0 AS (  -- over the whole table, before any filter, as FTS5 does (all in float8, as in C)
                SELECT i, ln((%(n)s::float8 - count(*) + 0.5::float8) / (count(*) + 0.5::float8)) AS idf FROM f GROUP BY i
            ),
            idf AS (SELECT i, CASE WHEN idf <= 0 THEN 1e-6::float8 ELSE idf END AS idf FROM idf0)
            SELECT f.rowid,  -- summed in query-term order, as FTS5 does: the same float, bit for bit
                   -sum(idf.idf * ((f.freq * {BM25_K1 + 1.0}::float8)
                        / (f.freq + {BM25_K1}::float8 * ({1.0 - BM25_B}::float8 + {BM25_B}::float8 * f.ntokens / %(avgdl)s::float8)))
                        ORDER BY f.i) AS score
            FROM f JOIN idf USING (i)
            WHERE true
        """
        params = {"lows": lows, "highs": highs, "units": [phrase[id(term)] for term in terms], "n": float(n_rows), "avgdl": avgdl, "limit": limit}
        if topics or scopes:
            sql = sql.replace("FROM f JOIN idf USING (i)", f"FROM f JOIN idf USING (i) JOIN {t['chunks']} c ON c.rowid = f.rowid")
        if topics:
            sql += " AND c.topic = ANY(%(topics)s)"
            params["topics"] = list(topics)
        if scopes:
            sql += " AND c.source = ANY(%(scopes)s)"
            params["scopes"] = list(scopes)
        sql += " GROUP BY f.rowid ORDER BY score, f.rowid LIMIT %(limit)s"
        return [(r[0], r[1]) for r in self._query(sql, params)]

    def dense_search(self, vector, limit: int) -> list[tuple[int, float]]:
        """(chunk rowid, cosine distance) nearest first, through the HNSW index."""
        if not self.has_vectors:
            return []
        ef = min(max(40, int(limit)), MAX_EF_SEARCH)
        literal = vector_literal(vector)
        # One implicit transaction for the three statements, so SET LOCAL holds for the query:
        # the planner underrates the cost of distances on 4 kB vectors and would scan the table.
        rows = self._query(
            "SET LOCAL enable_seqscan = off; SELECT set_config('hnsw.ef_search', %s, true);"
            f" SELECT rowid, embedding <=> %s::vector AS distance FROM {self._t['chunks']}"
            f" ORDER BY embedding <=> %s::vector LIMIT %s",  # no WHERE: it would keep the planner off the HNSW index
            (str(ef), literal, literal, limit),
        )
        return [(r[0], r[1]) for r in rows if r[1] is not None]  # chunks without a vector (never in the index)

    def _entries_holding(self, words: list[str]) -> int:
        rows = self._query(
            f"SELECT count(DISTINCT c.entry_id) FROM {self._t['terms']} t JOIN {self._t['chunks']} c ON c.rowid = t.rowid"
            " WHERE t.term = ANY(%s)",
            (list(words),),
        )
        return rows[0][0]

    def _count_entries(self) -> int:
        return self._query(f"SELECT count(*) FROM {self._t['entries']}")[0][0]

    def vocabulary(self) -> list[tuple[str, int]]:
        """(term, number of chunks containing it), most frequent first, ties in byte order like
        FTS5's vocabulary table; cached until the index changes."""
        if self._vocab is None:
            rows = self._query(f'SELECT term, count(*) FROM {self._t["terms"]} GROUP BY term ORDER BY term COLLATE "C"')
            self._vocab = sorted(rows, key=lambda r: -r[1])
            self._containing = {}
        return self._vocab



# -- write side -----------------------------------------------------------------------
class PgTarget:
    """The write side's handle on a database: one connection, holding the writers' advisory
    lock while ``exclusive()`` runs, so two Odoo servers never build at the same time."""

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.name = describe_dsn(dsn)
        self.conn = connect(dsn)

    @contextlib.contextmanager
    def exclusive(self):
        try:
            self._execute("SELECT pg_advisory_lock(%s)", (WRITER_LOCK_KEY,))
            self.conn.commit()
            require_pgvector(self.conn)
            self._execute(_SHARED_SCHEMA)
            self.conn.commit()
            yield self
        finally:
            psycopg2 = _driver()
            with contextlib.suppress(psycopg2.Error):
                self.conn.rollback()
                self._execute("SELECT pg_advisory_unlock(%s)", (WRITER_LOCK_KEY,))
                self.conn.commit()
            self.conn.close()

    def _execute(self, sql: str, params=None) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def live_state(self) -> tuple[int, int, dict] | None:
        rows = self._execute("SELECT build, generation, meta FROM pv_index_state WHERE id = 1")
        return rows[0] if rows else None

    def open_for_update(self) -> "PgWriter | None":
        """The live build for an in-place update, or None when a full build is needed."""
        state = self.live_state()
        self.conn.commit()
        if state is None or state[2].get("schema_version") != SCHEMA_VERSION:
            return None
        build, generation, meta = state
        return PgWriter(self, build, {k: str(v) for k, v in meta.items()} | {"generation": str(generation)}, live=True)

    def new_build(self) -> "PgWriter":
        """An empty, invisible build; readers keep the live one until ``publish``."""
        self._drop_builds("building")  # left by a killed build: we hold the writers' lock, so it is dead
        build = self._execute("SELECT nextval('pv_index_build_seq')")[0][0]
        self._execute(_BUILD_TABLES.format(b=int(build)))
        self._execute("INSERT INTO pv_index_builds (build, state) VALUES (%s, 'building')", (build,))
        self.conn.commit()
        state = self.live_state()
        generation = state[1] if state else 0
        self.conn.commit()
        return PgWriter(self, build, {"schema_version": SCHEMA_VERSION, "generation": str(generation), "mode": "lexical"}, live=False)

    def publish(self, writer: "PgWriter") -> None:
        """Index the new build, then flip the state row to it in one transaction."""
        b = int(writer.build)
        self._execute("SET LOCAL maintenance_work_mem = '256MB'")  # an HNSW graph that fits builds much faster
        self._execute(_BUILD_INDEXES.format(b=b))
        if writer.dim:
            self._execute(_VECTOR_INDEX.format(b=b))
        self.conn.commit()
        self.conn.autocommit = True  # VACUUM: the visibility map lets ranking read the term index alone
        try:
            for table in _tables(b).values():
                self._execute(f"VACUUM (ANALYZE) {table}")
        finally:
            self.conn.autocommit = False
        generation = int(writer.meta["generation"])
        meta = json.dumps(writer.meta)
        self._execute("UPDATE pv_index_builds SET state = 'retired' WHERE state = 'live'")
        self._execute("UPDATE pv_index_builds SET state = 'live' WHERE build = %s", (b,))
        self._execute(
            "INSERT INTO pv_index_state (id, build, generation, meta) VALUES (1, %s, %s, %s)"
            " ON CONFLICT (id) DO UPDATE SET build = excluded.build, generation = excluded.generation, meta = excluded.meta",
            (b, generation, meta),
        )
        self.conn.commit()  # the flip: readers see the old build or the new one, never a mix
        # Keep the build just retired: a reader may be in the middle of a question on it.
        self._drop_builds("retired", keep_latest=True)

    def discard(self, writer: "PgWriter") -> None:
        psycopg2 = _driver()
        try:
            self.conn.rollback()
            self._drop_build(writer.build)
            self.conn.commit()
        except psycopg2.Error:  # connection gone: the next build drops what is left
            pass

    def _drop_builds(self, state: str, keep_latest: bool = False) -> None:
        builds = [r[0] for r in self._execute("SELECT build FROM pv_index_builds WHERE state = %s ORDER BY build DESC", (state,))]
        for build in builds[1:] if keep_latest else builds:
            self._drop_build(build)
        self.conn.commit()

    def _drop_build(self, build: int) -> None:
        self._execute(_DROP_BUILD.format(b=int(build)))
        self._execute("DELETE FROM pv_index_builds WHERE build = %s", (build,))


class PgWriter:
    """Write side on one build: a new one (full build) or the live one (in-place update).
    The methods are those of sqlite_store.SidecarWriter; nothing is visible to readers before
    ``commit()`` of an update or ``PgTarget.publish`` of a new build."""

    def __init__(self, target: PgTarget, build: int, meta: dict, *, live: bool):
        self.target, self.conn, self.build, self.meta, self.live = target, target.conn, int(build), meta, live
        self.path = target.name
        self._t = _tables(self.build)
        self.dim = int(meta.get("dim", "0") or 0)
        self._next_rowid = self._one(f"SELECT coalesce(max(rowid), 0) + 1 FROM {self._t['chunks']}")

    def close(self) -> None:
        pass  # the connection belongs to the PgTarget

    def _execute(self, sql: str, params=None) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def _one(self, sql: str, params=None):
        return self._execute(sql, params)[0][0]

    def commit(self) -> None:
        self.conn.commit()

    @contextlib.contextmanager
    def transaction(self):
        """All of the block or none of it."""
        try:
            yield
        except BaseException:
            self.conn.rollback()
            raise
        self.conn.commit()

    # meta
    def get_meta(self) -> dict:
        return dict(self.meta)

    def set_meta(self, **values) -> None:
        self.meta.update({k: str(v) for k, v in values.items()})
        if self.live:
            self._execute(
                "UPDATE pv_index_state SET generation = %s, meta = %s WHERE id = 1",
                (int(self.meta.get("generation", "0")), json.dumps(self.meta)),
            )

    def bump_generation(self, **values) -> int:
        generation = int(self.meta.get("generation", "0")) + 1
        self.set_meta(generation=generation, built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), **values)
        return generation

    # entries and chunks
    def entry_hashes(self) -> dict[str, str]:
        return dict(self._execute(f"SELECT id, content_hash FROM {self._t['entries']}"))

    def insert_entry(self, entry: Entry, chunks: list[Chunk], vectors: dict[str, bytes]) -> int:
        """Insert an entry with its chunks; ``vectors`` maps content hash → packed vector."""
        psycopg2 = _driver()
        self._execute(
            f"INSERT INTO {self._t['entries']} ({_ENTRY_COLUMNS}) VALUES ({','.join(['%s'] * 13)})",
            (
                entry.id, entry.title, entry.stand, entry.topic, entry.source, bool(entry.official),
                json.dumps(list(entry.tags), ensure_ascii=False), json.dumps(list(entry.legal_bases), ensure_ascii=False),
                json.dumps(list(entry.cross_refs)), entry.source_ref, entry.path, entry.body, entry.content_hash,
            ),
        )
        head_common = " ".join([entry.title, *entry.tags, *entry.legal_bases])
        chunk_rows, term_rows, with_vectors = [], [], 0
        for chunk in chunks:
            rowid = self._next_rowid
            self._next_rowid += 1
            head = index_text(f"{head_common} {chunk.section}").split()
            body = index_text(chunk.text).split()
            blob = vectors.get(chunk.content_hash) if self.dim else None
            with_vectors += blob is not None
            chunk_rows.append((
                rowid, chunk.chunk_id, entry.id, chunk.ordinal, chunk.section, chunk.kind, entry.topic, entry.source,
                chunk.header, chunk.text, chunk.content_hash, blob is not None, len(head) + len(body),
                sorted(w for w in set(head) | set(body) if len(w) <= MAX_LEXEME), vector_literal(unpack_vector(blob)) if blob is not None else None,
            ))
            head_tf, body_tf = Counter(head), Counter(body)
            term_rows.extend((term, rowid, head_tf[term], body_tf[term], len(head) + len(body)) for term in head_tf.keys() | body_tf.keys())
        if chunk_rows:
            columns = "rowid, chunk_id, entry_id, ordinal, section, kind, topic, source, header, text, content_hash, has_vector, ntokens, tsv"
            if self.dim:
                template = "(" + ",".join(["%s"] * 13) + ", array_to_tsvector(%s::text[]), %s::vector)"
                columns += ", embedding"
            else:
                template = "(" + ",".join(["%s"] * 13) + ", array_to_tsvector(%s::text[]))"
                chunk_rows = [r[:-1] for r in chunk_rows]
            with self.conn.cursor() as cur:
                psycopg2.extras.execute_values(cur, f"INSERT INTO {self._t['chunks']} ({columns}) VALUES %s", chunk_rows, template=template)
                psycopg2.extras.execute_values(cur, f"INSERT INTO {self._t['terms']} (term, rowid, tf_head, tf_body, ntokens) VALUES %s", term_rows, page_size=1000)
        return with_vectors

    def delete_entry(self, entry_id: str) -> None:
        t = self._t
        self._execute(f"DELETE FROM {t['terms']} WHERE rowid IN (SELECT rowid FROM {t['chunks']} WHERE entry_id = %s)", (entry_id,))
        self._execute(f"DELETE FROM {t['chunks']} WHERE entry_id = %s", (entry_id,))
        self._execute(f"DELETE FROM {t['entries']} WHERE id = %s", (entry_id,))

    def has_vector_table(self) -> bool:
        return bool(self.dim)

    def create_vector_table(self, dim: int) -> None:
        self.dim = int(dim)  # the dimension is part of the column type; its HNSW index comes with publish
        self._execute(f"ALTER TABLE {self._t['chunks']} ADD COLUMN embedding vector({self.dim})")

    def chunks_without_vectors(self) -> list[tuple[int, str, str]]:
        """(rowid, content hash, text to embed) of chunks lacking a vector."""
        rows = self._execute(f"SELECT rowid, content_hash, header, text FROM {self._t['chunks']} WHERE NOT has_vector ORDER BY rowid")
        return [(r[0], r[1], f"{r[2]}\n{r[3]}") for r in rows]

    def set_chunk_vector(self, rowid: int, blob: bytes) -> None:
        self._execute(
            f"UPDATE {self._t['chunks']} SET embedding = %s::vector, has_vector = true WHERE rowid = %s",
            (vector_literal(unpack_vector(blob)), rowid),
        )

    def counts(self) -> tuple[int, int, int]:
        entries = self._one(f"SELECT count(*) FROM {self._t['entries']}")
        chunks, vectors = self._execute(f"SELECT count(*), count(*) FILTER (WHERE has_vector) FROM {self._t['chunks']}")[0]
        return entries, chunks, vectors

    # embedding cache (shared by all builds: a full build finds its predecessor's vectors there)
    def cached_vectors(self, model: str, hashes) -> dict[str, bytes]:
        rows = self._execute(
            "SELECT content_hash, vector FROM pv_index_embedding_cache WHERE model = %s AND content_hash = ANY(%s)",
            (model, list(hashes)),
        )
        return {h: bytes(v) for h, v in rows}

    def cache_vectors(self, model: str, vectors: dict[str, bytes]) -> None:
        psycopg2 = _driver()
        if not vectors:
            return
        with self.conn.cursor() as cur:
            psycopg2.extras.execute_values(
                cur,
                "INSERT INTO pv_index_embedding_cache (model, content_hash, vector) VALUES %s"
                " ON CONFLICT (model, content_hash) DO UPDATE SET vector = excluded.vector",
                [(model, h, psycopg2.Binary(v)) for h, v in vectors.items()],
            )
