"""The sqlite-vec sidecar: one SQLite file holding entries, chunks, FTS5, vectors and the
embedding cache. This module owns the sidecar's schema and queries (``pg_store`` those of
PostgreSQL; ``dense`` and ``lexical`` read the vectors and terms they load into memory).

``SidecarIndex`` is the read side used by retrieval (its methods are the store interface,
``base.IndexReader``, that pg_store.PgIndex implements on PostgreSQL/pgvector); ``SidecarWriter``
is the write side used by the indexer (pg_store.PgWriter has the same methods). Search runs in
memory: ``dense.DenseMatrix`` and ``lexical.LexicalIndex``.

Over 400 lines on purpose: the schema, the reader and the writer of one file format stay
together, so every SQL string of the sidecar is read next to the table it touches.
"""
from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timezone

from ..textnorm import index_text
from ..types import Chunk, Entry, QueryTerm
from .base import (
    _CHUNK_COLUMNS, _ENTRY_COLUMNS, _ENTRY_HEAD_COLUMNS, SCHEMA_VERSION, ChunkRow, EntryHead, IndexCorrupt, IndexError_,
    IndexMetaMixin, IndexMissing, _entry_from_row, _entry_head_from_row, pack_vector,
)
from .dense import ArrayCache, DenseMatrix
from .lexical import LexicalIndex
from .sqlite_conn import connect, sqlite_module


APPLICATION_ID = 0x50564147  # "PVAG" in the SQLite header: marks a PV-Agent index, even a damaged one

_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE entries (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, stand TEXT NOT NULL, topic TEXT NOT NULL,
    source TEXT NOT NULL, official INTEGER NOT NULL, tags TEXT NOT NULL, legal_bases TEXT NOT NULL,
    cross_refs TEXT NOT NULL, source_ref TEXT NOT NULL, path TEXT NOT NULL, body TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
CREATE TABLE chunks (
    rowid INTEGER PRIMARY KEY, chunk_id TEXT UNIQUE NOT NULL, entry_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL, section TEXT NOT NULL, kind TEXT NOT NULL, topic TEXT NOT NULL,
    source TEXT NOT NULL, header TEXT NOT NULL, text TEXT NOT NULL, content_hash TEXT NOT NULL,
    has_vector INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX chunks_entry ON chunks(entry_id);
{_INDEXES}CREATE VIRTUAL TABLE chunks_fts USING fts5(head, body, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE embedding_cache (
    model TEXT NOT NULL, content_hash TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, content_hash)
);
"""

# Indexes an update's look-ups need (the hashes of all entries, the chunks still without a
# vector), and the one a reader's read of all entries' tags needs (once per generation, for
# the tag-phrase check): without them each is a scan of a table full of text, ~0.06 s apiece
# at 171k chunks (tags: 21 → 9 ms at 16k entries). Created on older files by the writer too
# (IF NOT EXISTS; no schema change).
_INDEXES = """
CREATE INDEX IF NOT EXISTS entries_hash ON entries(id, content_hash);
CREATE INDEX IF NOT EXISTS entries_tags ON entries(id, tags);
CREATE INDEX IF NOT EXISTS chunks_without_vector ON chunks(rowid) WHERE has_vector = 0;
"""
_SCHEMA = _SCHEMA.replace("{_INDEXES}", _INDEXES)

ENTRY_CACHE_SIZE = 512  # decoded entries kept per process (a few MB)
ENTRY_HEAD_CACHE_SIZE = 2048  # decoded entry heads (no body) kept per process (about 1 KB each)


class SidecarIndex(IndexMetaMixin):
    """Read side of the sidecar. One instance per process and file; ``refresh()`` before use
    notices an atomic swap (new file) or an in-place update (new generation)."""

    def __init__(self, path: str):
        self.path = str(path)
        self._open()

    @classmethod
    def open(cls, path: str) -> "SidecarIndex":
        return cls(path)

    def _open(self) -> None:
        self.conn, self.meta, self._stat_key = _open_readonly(self.path)
        self._data_version = self._read_data_version()
        self._vocab: list[tuple[str, int]] | None = None
        self._dense: DenseMatrix | None = None
        self._lexical: LexicalIndex | None = None
        # "entries"/"heads": (generation key, decoded rows, whether they are all the index's)
        self._row_caches: dict[str, tuple[str, dict, bool]] = {}
        self._key_made_from: tuple | None = None  # see _generation_key
        self.problem = ""  # why the last refresh kept the previous file, if it did

    def close(self) -> None:
        self.conn.close()

    def _read_data_version(self) -> int:
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def refresh(self) -> bool:
        """Reopen after a swap, reload metadata after an in-place update. True if anything changed.

        If the file on disk vanished or was replaced by something unreadable, the open
        connection keeps serving the last good index and ``problem`` says why.
        """
        try:
            key = _stat_key(self.path)
        except FileNotFoundError:
            self.problem = f"Index-Datei {self.path} fehlt – der zuletzt geladene Index wird weiter verwendet."
            return False
        if key != self._stat_key:
            try:
                conn, meta, stat_key = _open_readonly(self.path)
            except IndexError_ as exc:
                self.problem = f"{exc} Der zuletzt geladene Index wird weiter verwendet."
                return False
            old, self.conn, self.meta, self._stat_key = self.conn, conn, meta, stat_key
            old.close()
            self._data_version = self._read_data_version()
            self._vocab = None
            self.problem = ""
            return True
        if self._read_data_version() != self._data_version:
            self.meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
            self._data_version = self._read_data_version()
            self._vocab = None
            return True
        return False

    # -- metadata ---------------------------------------------------------------------
    def stats(self) -> dict:
        entries = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        chunks, vectors = self.conn.execute("SELECT count(*), coalesce(sum(has_vector), 0) FROM chunks").fetchone()
        return {
            "path": self.path,
            "entries": entries,
            "chunks": chunks,
            "vectors": vectors,
            **self._meta_stats(),
            "size_bytes": os.path.getsize(self.path),
        }

    # -- entries and chunks -----------------------------------------------------------
    def entry(self, entry_id: str) -> Entry | None:
        row = self.conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return _entry_from_row(row) if row else None

    def entries_by_id(self, ids) -> dict[str, Entry]:
        """Entries by id; the recently read ones from a small per-generation cache (an entry
        is immutable within a generation, and decoding one costs more than the look-up)."""
        return self._cached_entry_rows("entries", ids, _ENTRY_COLUMNS, _entry_from_row, ENTRY_CACHE_SIZE)

    def entry_heads(self, ids) -> dict[str, EntryHead]:
        """The entries without their bodies (what hits and fusion read), from a per-generation
        cache like ``entries_by_id``'s. When all the index's entries fit that cache, they are
        read in one query at the generation's first call: read as questions ask for them (a
        dozen a question), each question paid a query and the decoding until most had been."""
        return self._cached_entry_rows("heads", ids, _ENTRY_HEAD_COLUMNS, _entry_head_from_row, ENTRY_HEAD_CACHE_SIZE,
                                       read_all=True)

    def _cached_entry_rows(self, cache_name: str, ids, columns: str, decode, size: int, read_all: bool = False) -> dict:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        key = self._generation_key()
        cache_key, cache, complete = self._row_caches.get(cache_name, ("", {}, False))
        if cache_key != key:
            cache, complete = {}, False
            if read_all and self.conn.execute("SELECT count(*) FROM entries").fetchone()[0] <= size:
                cache = {r[0]: decode(r) for r in self.conn.execute(f"SELECT {columns} FROM entries")}
                complete = True
        found = {i: cache[i] for i in ids if i in cache}
        missing = [] if complete else [i for i in ids if i not in found]  # complete: the others do not exist
        if missing:
            marks = ",".join("?" * len(missing))
            rows = self.conn.execute(f"SELECT {columns} FROM entries WHERE id IN ({marks})", missing).fetchall()
            if len(cache) + len(rows) > size:  # start afresh rather than track an order
                cache = {}
            for r in rows:
                found[r[0]] = cache[r[0]] = decode(r)
        self._row_caches[cache_name] = (key, cache, complete)
        return {i: found[i] for i in ids if i in found}

    def entry_tags(self, ids=None) -> dict[str, tuple[str, ...]]:
        """The entries' tags alone; with ``ids`` None every entry's, in id order (what fusion's
        tag-phrase check reads once per generation)."""
        if ids is None:
            rows = self.conn.execute("SELECT id, tags FROM entries ORDER BY id")
            return {r[0]: tuple(json.loads(r[1])) for r in rows}
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(f"SELECT id, tags FROM entries WHERE id IN ({marks})", ids)
        found = {r[0]: tuple(json.loads(r[1])) for r in rows}
        return {i: found[i] for i in ids if i in found}

    def stand_years(self, entry_ids) -> dict[str, int]:
        entry_ids = list(entry_ids)
        years: dict[str, int] = {}
        for start in range(0, len(entry_ids), 500):
            part = entry_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(f"SELECT id, CAST(substr(stand, 1, 4) AS INTEGER) FROM entries WHERE id IN ({marks})", part)
            years.update(rows.fetchall())
        return years

    def entry_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT id FROM entries ORDER BY id")]

    def entry_hashes(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT id, content_hash FROM entries").fetchall())

    def chunks_by_rowid(self, rowids) -> dict[int, ChunkRow]:
        rowids = list(dict.fromkeys(rowids))
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self.conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE rowid IN ({marks})", rowids)
        return {r[0]: ChunkRow(*r[:9], bool(r[9])) for r in rows}

    def chunks_of_entries(self, entry_ids, kind: str | None = None) -> list[ChunkRow]:
        """All chunks of the entries (or only those of one kind), in entry and section order."""
        entry_ids = list(dict.fromkeys(entry_ids))
        if not entry_ids:
            return []
        marks = ",".join("?" * len(entry_ids))
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE entry_id IN ({marks})"
        params = list(entry_ids)
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = self.conn.execute(sql + " ORDER BY entry_id, ordinal", params)
        return [ChunkRow(*r[:9], bool(r[9])) for r in rows]

    def chunk_outline(self, entry_ids) -> dict[str, tuple[tuple[int, str], ...]]:
        """(rowid, kind) of each entry's chunks in section order, without their text: which
        chunks to read; from the in-memory index. Entries without chunks are left out."""
        entry_ids = list(dict.fromkeys(entry_ids))
        if not entry_ids:
            return {}
        return self.lexical_index().entry_chunks(entry_ids)

    def chunk_keys(self, rowids) -> dict[int, tuple[str, str]]:
        """(entry id, kind) of each chunk: all that fusion needs, without the text; from the
        in-memory index (the same generation as the connection after ``refresh()``)."""
        rowids = list(dict.fromkeys(rowids))
        if not rowids:
            return {}
        keys = self.lexical_index().chunk_keys(rowids)
        if keys is not None:
            return keys
        marks = ",".join("?" * len(rowids))
        rows = self.conn.execute(f"SELECT rowid, entry_id, kind FROM chunks WHERE rowid IN ({marks})", rowids)
        return {r[0]: (r[1], r[2]) for r in rows}

    # -- search -----------------------------------------------------------------------
    def lexical_search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]:
        """(chunk rowid, bm25) best first for an OR of ``terms``: FTS5's bm25(chunks_fts, 2.0, 1.0)
        (negative, lower is better), computed on the in-memory index; ties by rowid."""
        if not terms:
            return []
        return self.lexical_index().search(terms, limit, topics, scopes)

    def lexical_search_fts5(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]:
        """The same search as an FTS5 query (the reference ``lexical_search`` is tested against).
        FTS5 has no term groups: grouped terms score here each on its own."""
        if not terms:
            return []
        match = fts5_expression(terms)
        if not (topics or scopes):  # the join costs a third of the query; only filters need it
            rows = self.conn.execute(
                "SELECT rowid, bm25(chunks_fts, 2.0, 1.0) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
                " ORDER BY score, rowid LIMIT ?",
                (match, limit),
            )
            return [(r[0], r[1]) for r in rows]
        sql = (
            "SELECT f.rowid, bm25(chunks_fts, 2.0, 1.0) AS score FROM chunks_fts f "
            "JOIN chunks c ON c.rowid = f.rowid WHERE chunks_fts MATCH ?"
        )
        params: list = [match]
        for column, values in (("c.topic", topics), ("c.source", scopes)):
            if values:
                sql += f" AND {column} IN ({','.join('?' * len(values))})"
                params.extend(values)
        sql += " ORDER BY score, f.rowid LIMIT ?"
        params.append(limit)
        return [(r[0], r[1]) for r in self.conn.execute(sql, params)]

    def lexical_index(self) -> "LexicalIndex":
        """The in-memory inverted index, derived once per generation (see ``ArrayCache``)."""
        key = self._generation_key()
        if self._lexical is None or self._lexical.key != key:
            self._lexical = None
            self._lexical = LexicalIndex.open(self.conn, self._cache(key), key)
        return self._lexical

    def prepare(self) -> None:
        """Derive and save the current generation's arrays now (after indexing), so that no
        worker's question waits for them. After an update that is a delta on an older
        generation's arrays (~0.05 s at 171k chunks, see ``ArrayCache``); derived whole, at
        171k chunks, ~10–20 s."""
        self.refresh()
        self.lexical_index()
        if self.has_vectors:
            self.dense_matrix()

    def _generation_key(self) -> str:
        # formed once per file and metadata (``refresh`` replaces ``meta`` on every change)
        made_from = self._key_made_from
        if made_from is None or made_from[0] is not self.meta or made_from[1] != self._stat_key:
            ino, dev = self._stat_key
            stamp = "".join(ch for ch in self.built_at if ch.isdigit())
            file_id = self.meta.get("file_id", "")
            self._key = f"{dev}-{ino}{'-' + file_id if file_id else ''}-g{self.generation}-{stamp}"
            self._key_made_from = (self.meta, self._stat_key)
        return self._key

    def _cache(self, key: str) -> "ArrayCache":
        return ArrayCache(self.path + ".arrays", key)

    def dense_search(self, vector, limit: int) -> list[tuple[int, float]]:
        """(chunk rowid, cosine distance) nearest first: exact search over the in-memory matrix."""
        if not self.has_vectors:
            return []
        return self.dense_matrix().search(vector, limit)

    def dense_search_vec0(self, vector, limit: int) -> list[tuple[int, float]]:
        """The same search through sqlite-vec's ``vec0`` brute force (kept for comparison and checks)."""
        if not self.has_vectors:
            return []
        rows = self.conn.execute(
            "SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ?",
            (pack_vector(vector), limit),
        )
        return [(r[0], r[1]) for r in rows]

    def dense_matrix(self) -> "DenseMatrix":
        """The chunk vectors as one float32 matrix, derived once per index generation (a new
        file or an update; ``refresh()`` notices both) and memory-mapped from ``ArrayCache``."""
        key = self._generation_key()
        if self._dense is None or self._dense.key != key:
            self._dense = None  # let the old matrix go before the new one is read
            self._dense = DenseMatrix.open(self.conn, self.embed_model, self.dim, self._cache(key), key,
                                           in_place_since=int(self.meta.get("vectors_attached_at", "0")))
        return self._dense

    def _entries_holding(self, words: list[str]) -> int:
        return self.lexical_index().entries_holding(words)

    def _count_entries(self) -> int:
        return self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]

    def vocabulary(self) -> list[tuple[str, int]]:
        """(term, document count) of the index, most frequent first, ties in byte order (as
        FTS5's vocabulary table); cached until the index changes."""
        if self._vocab is None:
            self._vocab = self.lexical_index().vocabulary()
            self._containing = {}
        return self._vocab


def fts5_expression(terms: list[QueryTerm]) -> str:
    """An FTS5 OR-expression of quoted terms. Terms hold only [0-9a-z] (textnorm.tokens), and are
    quoted all the same, so no user word can become an FTS5 operator."""
    return " OR ".join(f'"{t.text}"*' if t.prefix else f'"{t.text}"' for t in terms)


def _open_readonly(path: str):
    """(connection, meta, file identity) of a readable index, or IndexMissing / IndexCorrupt."""
    if not os.path.exists(path):
        raise IndexMissing(f"Index {path} fehlt – bitte zuerst indizieren (tools/pv-agent index).")
    stat_key = _stat_key(path)
    database_error = sqlite_module().DatabaseError
    try:
        conn = connect(path, readonly=True)
    except database_error as exc:
        raise IndexCorrupt(f"Index {path} lässt sich nicht öffnen ({exc}).") from exc
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except database_error as exc:
        conn.close()
        raise IndexCorrupt(f"Index {path} ist beschädigt oder kein PV-Agent-Index ({exc}).") from exc
    if meta.get("schema_version") != SCHEMA_VERSION:
        conn.close()
        raise IndexCorrupt(f"Index {path} hat ein anderes Schema – bitte neu indizieren (--full).")
    return conn, meta, stat_key


def _stat_key(path: str) -> tuple:
    st = os.stat(path)
    return (st.st_ino, st.st_dev)


class SidecarWriter:
    """Write side: used by the indexer on a new file (full build) or the live one (update)."""

    def __init__(self, path: str, *, create: bool):
        self.path = str(path)
        self.conn = connect(self.path)
        if create:
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # a constant int: PRAGMA takes no parameters
            self.conn.executescript(_SCHEMA)
            self.set_meta(schema_version=SCHEMA_VERSION, generation="0", mode="lexical")
            self.conn.commit()
        else:
            version = self.get_meta().get("schema_version")
            if version != SCHEMA_VERSION:
                self.conn.close()
                raise IndexCorrupt(f"Index {self.path} hat Schema {version!r}, erwartet {SCHEMA_VERSION}")
            self.conn.executescript(_INDEXES)
        # Chunk rowids are never reused, not even the last one's after its entry is deleted: the
        # search arrays of an update are a delta on an older generation's, and tell the chunks
        # added since by their rowid (dense.ArrayCache). Read before any deletion.
        meta = self.get_meta()
        last = self.conn.execute("SELECT max(rowid) FROM chunks").fetchone()[0] if not create else 0
        self._last_rowid = max(int(meta.get("last_rowid", "0")), last or 0)
        if not meta.get("file_id"):  # names this file's arrays: an inode number may be reused by the next file
            self.set_meta(file_id=secrets.token_hex(8))
            if create:
                self.conn.commit()

    def close(self) -> None:
        self.conn.close()

    def commit(self) -> None:
        self.conn.commit()

    def transaction(self):
        """``with writer.transaction():`` all of the block or none of it."""
        return self.conn

    # meta
    def get_meta(self) -> dict:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def set_meta(self, **values) -> None:
        self.conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, str(v)) for k, v in values.items()],
        )

    def bump_generation(self, **values) -> int:
        generation = int(self.get_meta().get("generation", "0")) + 1
        self.set_meta(generation=generation, built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), **values)
        return generation

    # entries and chunks
    def entry_hashes(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT id, content_hash FROM entries").fetchall())

    def insert_entry(self, entry: Entry, chunks: list[Chunk], vectors: dict[str, bytes]) -> int:
        """Insert an entry with its chunks; ``vectors`` maps content hash → packed vector."""
        self.conn.execute(
            f"INSERT INTO entries({_ENTRY_COLUMNS}) VALUES ({','.join('?' * 13)})",
            (
                entry.id, entry.title, entry.stand, entry.topic, entry.source, int(entry.official),
                json.dumps(list(entry.tags), ensure_ascii=False), json.dumps(list(entry.legal_bases), ensure_ascii=False),
                json.dumps(list(entry.cross_refs)), entry.source_ref, entry.path, entry.body, entry.content_hash,
            ),
        )
        head_common = " ".join([entry.title, *entry.tags, *entry.legal_bases])
        with_vectors = 0
        for chunk in chunks:
            blob = vectors.get(chunk.content_hash)
            self._last_rowid += 1
            rowid = self._last_rowid
            self.conn.execute(
                "INSERT INTO chunks(rowid, chunk_id, entry_id, ordinal, section, kind, topic, source, header, text, content_hash,"
                " has_vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (rowid, chunk.chunk_id, entry.id, chunk.ordinal, chunk.section, chunk.kind, entry.topic, entry.source,
                 chunk.header, chunk.text, chunk.content_hash, int(blob is not None)),
            )
            self.conn.execute(
                "INSERT INTO chunks_fts(rowid, head, body) VALUES (?, ?, ?)",
                (rowid, index_text(f"{head_common} {chunk.section}"), index_text(chunk.text)),
            )
            if blob is not None:
                self.conn.execute("INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)", (rowid, blob))
                with_vectors += 1
        self.set_meta(last_rowid=self._last_rowid)
        return with_vectors

    def delete_entry(self, entry_id: str) -> None:
        rowids = [r[0] for r in self.conn.execute("SELECT rowid FROM chunks WHERE entry_id = ?", (entry_id,))]
        for rowid in rowids:
            self.conn.execute("DELETE FROM chunks_fts WHERE rowid = ?", (rowid,))
        if rowids and self.has_vector_table():
            self.conn.executemany("DELETE FROM chunk_vectors WHERE rowid = ?", [(r,) for r in rowids])
        self.conn.execute("DELETE FROM chunks WHERE entry_id = ?", (entry_id,))
        self.conn.execute("DELETE FROM entries WHERE id = ?", (entry_id,))

    def has_vector_table(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunk_vectors'").fetchone() is not None

    def create_vector_table(self, dim: int) -> None:
        dim = int(dim)  # the only value formatted into SQL: vec0 takes the dimension in its declaration
        self.conn.execute(f"CREATE VIRTUAL TABLE chunk_vectors USING vec0(embedding float[{dim}] distance_metric=cosine)")

    def chunks_without_vectors(self) -> list[tuple[int, str, str]]:
        """(rowid, content hash, text to embed) of chunks lacking a vector."""
        return [
            (r[0], r[1], f"{r[2]}\n{r[3]}")
            for r in self.conn.execute("SELECT rowid, content_hash, header, text FROM chunks WHERE has_vector = 0")
        ]

    def set_chunk_vector(self, rowid: int, blob: bytes) -> None:
        """Give an existing chunk its vector; marks the coming generation as one whose dense
        arrays are derived anew (the chunk's rowid does not say it changed)."""
        self.conn.execute("INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)", (rowid, blob))
        self.conn.execute("UPDATE chunks SET has_vector = 1 WHERE rowid = ?", (rowid,))
        self.set_meta(vectors_attached_at=int(self.get_meta().get("generation", "0")) + 1)

    def counts(self) -> tuple[int, int, int]:
        entries = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        chunks = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        without = self.conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 0").fetchone()[0]
        return entries, chunks, chunks - without

    # embedding cache
    def cached_vectors(self, model: str, hashes) -> dict[str, bytes]:
        hashes = list(hashes)
        found: dict[str, bytes] = {}
        for start in range(0, len(hashes), 500):
            part = hashes[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(
                self.conn.execute(
                    f"SELECT content_hash, vector FROM embedding_cache WHERE model = ? AND content_hash IN ({marks})",
                    [model, *part],
                ).fetchall()
            )
        return found

    def cache_vectors(self, model: str, vectors: dict[str, bytes]) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO embedding_cache(model, content_hash, vector) VALUES (?, ?, ?)",
            [(model, h, v) for h, v in vectors.items()],
        )

    def carry_over_from(self, other_path: str) -> int:
        """Carry the previous index file's embedding cache and generation counter into this new one.

        A damaged previous file only costs its cache: the new index is built regardless.
        Returns how many cached vectors were carried over.
        """
        try:
            return self._carry_over(other_path)
        except sqlite_module().DatabaseError:
            return 0

    def _carry_over(self, other_path: str) -> int:
        self.conn.execute("ATTACH DATABASE ? AS previous", (other_path,))
        try:
            tables = {r[0] for r in self.conn.execute("SELECT name FROM previous.sqlite_master")}
            if "meta" in tables:
                row = self.conn.execute("SELECT value FROM previous.meta WHERE key = 'generation'").fetchone()
                if row and str(row[0]).isdigit():
                    self.set_meta(generation=row[0])
            copied = 0
            if "embedding_cache" in tables:
                cur = self.conn.execute(
                    "INSERT OR IGNORE INTO embedding_cache SELECT model, content_hash, vector FROM previous.embedding_cache"
                )
                copied = cur.rowcount
            self.conn.commit()
            return copied
        finally:
            self.conn.execute("DETACH DATABASE previous")


def is_sidecar_file(path: str) -> bool:
    """True when the regular file at ``path`` is a PV-Agent index: marked as one in its SQLite
    header (so also when damaged further in), or an index from before the mark whose metadata
    names a schema version. A text file, another SQLite database or an empty file is not."""
    with open(path, "rb") as fh:
        head = fh.read(100)
    if head[:16] != _SQLITE_MAGIC:
        return False
    if len(head) >= 72 and int.from_bytes(head[68:72], "big") == APPLICATION_ID:
        return True
    database_error = sqlite_module().DatabaseError
    try:
        conn = connect(path, readonly=True)
    except database_error:
        return False
    try:
        return conn.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
    except database_error:
        return False
    finally:
        conn.close()
