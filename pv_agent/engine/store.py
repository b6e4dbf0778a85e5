"""The sqlite-vec sidecar: one SQLite file holding entries, chunks, FTS5, vectors and the
embedding cache. This module owns every SQL string of the engine.

``SidecarIndex`` is the read side used by retrieval (its methods are the store interface,
``IndexReader``, that pgstore.PgIndex implements on PostgreSQL/pgvector); ``SidecarWriter`` is
the write side used by the indexer (pgstore.PgWriter has the same methods).
"""
from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from typing import Protocol
from datetime import datetime, timezone

from .sqlite_conn import connect, sqlite_module
from .textnorm import index_text
from .types import Chunk, Entry, QueryTerm

SCHEMA_VERSION = "1"


class IndexReader(Protocol):
    """What retrieval, ask() and the drift check read from an index. ``SidecarIndex`` implements
    it on SQLite, ``pgstore.PgIndex`` on PostgreSQL/pgvector; index_target.open_index opens either."""

    has_vectors: bool
    embed_model: str
    dim: int
    generation: int

    def refresh(self) -> bool: ...
    def stats(self) -> dict: ...
    def entry(self, entry_id: str) -> Entry | None: ...
    def entries_by_id(self, ids) -> dict[str, Entry]: ...
    def entry_ids(self) -> list[str]: ...
    def entry_hashes(self) -> dict[str, str]: ...
    def stand_years(self, entry_ids) -> dict[str, int]: ...
    def chunks_by_rowid(self, rowids) -> dict[int, "ChunkRow"]: ...
    def chunks_of_entries(self, entry_ids) -> list["ChunkRow"]: ...
    def folded_words_of_entries(self, entry_ids) -> dict[str, set[str]]: ...
    def lexical_search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]: ...
    def dense_search(self, vector, limit: int) -> list[tuple[int, float]]: ...
    def terms_containing(self, part: str, limit: int) -> tuple[str, ...]: ...


class IndexError_(RuntimeError):
    """Base of the index errors (named with a trailing underscore: IndexError is a builtin)."""


class IndexMissing(IndexError_):
    pass


class IndexCorrupt(IndexError_):
    pass


@dataclass(frozen=True)
class ChunkRow:
    rowid: int
    chunk_id: str
    entry_id: str
    ordinal: int
    section: str
    kind: str
    header: str
    text: str
    content_hash: str
    has_vector: bool = False


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
CREATE VIRTUAL TABLE chunks_fts USING fts5(head, body, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE TABLE embedding_cache (
    model TEXT NOT NULL, content_hash TEXT NOT NULL, vector BLOB NOT NULL,
    PRIMARY KEY (model, content_hash)
);
"""


def pack_vector(vector) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


def unpack_vector(blob: bytes) -> list[float]:
    return list(struct.unpack(f"{len(blob) // 4}f", blob))


def _entry_from_row(row) -> Entry:
    (id_, title, stand, topic, source, official, tags, legal, refs, source_ref, path, body, chash) = row
    return Entry(
        id=id_, title=title, stand=stand, topic=topic, source=source, body=body, official=bool(official),
        tags=tuple(json.loads(tags)), legal_bases=tuple(json.loads(legal)), cross_refs=tuple(json.loads(refs)),
        source_ref=source_ref, path=path, content_hash=chash,
    )


_ENTRY_COLUMNS = "id, title, stand, topic, source, official, tags, legal_bases, cross_refs, source_ref, path, body, content_hash"
_CHUNK_COLUMNS = "rowid, chunk_id, entry_id, ordinal, section, kind, header, text, content_hash, has_vector"


class SidecarIndex:
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
    @property
    def generation(self) -> int:
        return int(self.meta.get("generation", "0"))

    @property
    def has_vectors(self) -> bool:
        return self.meta.get("mode") == "hybrid"

    @property
    def embed_model(self) -> str:
        return self.meta.get("embed_model", "")

    @property
    def dim(self) -> int:
        return int(self.meta.get("dim", "0"))

    def stats(self) -> dict:
        entries = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        chunks, vectors = self.conn.execute("SELECT count(*), coalesce(sum(has_vector), 0) FROM chunks").fetchone()
        return {
            "path": self.path,
            "entries": entries,
            "chunks": chunks,
            "vectors": vectors,
            "mode": self.meta.get("mode", "lexical"),
            "embed_model": self.embed_model,
            "dim": self.dim,
            "generation": self.generation,
            "built_at": self.meta.get("built_at", ""),
            "notice": self.meta.get("notice", ""),
            "size_bytes": os.path.getsize(self.path),
        }

    # -- entries and chunks -----------------------------------------------------------
    def entry(self, entry_id: str) -> Entry | None:
        row = self.conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return _entry_from_row(row) if row else None

    def entries_by_id(self, ids) -> dict[str, Entry]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id IN ({marks})", ids).fetchall()
        return {r[0]: _entry_from_row(r) for r in rows}

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

    def chunks_of_entries(self, entry_ids) -> list[ChunkRow]:
        entry_ids = list(dict.fromkeys(entry_ids))
        if not entry_ids:
            return []
        marks = ",".join("?" * len(entry_ids))
        rows = self.conn.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE entry_id IN ({marks}) ORDER BY entry_id, ordinal", entry_ids
        )
        return [ChunkRow(*r[:9], bool(r[9])) for r in rows]

    def folded_words_of_entries(self, entry_ids) -> dict[str, set[str]]:
        """The folded words each entry was indexed with (from the FTS table, not re-folded)."""
        entry_ids = list(dict.fromkeys(entry_ids))
        words: dict[str, set[str]] = {e: set() for e in entry_ids}
        if not entry_ids:
            return words
        marks = ",".join("?" * len(entry_ids))
        rows = self.conn.execute(
            f"SELECT c.entry_id, f.head, f.body FROM chunks c JOIN chunks_fts f ON f.rowid = c.rowid"
            f" WHERE c.entry_id IN ({marks})",
            entry_ids,
        )
        for entry_id, head, body in rows:
            words[entry_id].update(head.split())
            words[entry_id].update(body.split())
        return words

    # -- search -----------------------------------------------------------------------
    def lexical_search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]:
        """(chunk rowid, bm25) best first for an OR of ``terms``."""
        if not terms:
            return []
        match = fts5_expression(terms)
        sql = (
            "SELECT f.rowid, bm25(chunks_fts, 2.0, 1.0) AS score FROM chunks_fts f "
            "JOIN chunks c ON c.rowid = f.rowid WHERE chunks_fts MATCH ?"
        )
        params: list = [match]
        for column, values in (("c.topic", topics), ("c.source", scopes)):
            if values:
                sql += f" AND {column} IN ({','.join('?' * len(values))})"
                params.extend(values)
        sql += " ORDER BY score LIMIT ?"
        params.append(limit)
        return [(r[0], r[1]) for r in self.conn.execute(sql, params)]

    def dense_search(self, vector, limit: int) -> list[tuple[int, float]]:
        """(chunk rowid, cosine distance) nearest first."""
        if not self.has_vectors:
            return []
        rows = self.conn.execute(
            "SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ?",
            (pack_vector(vector), limit),
        )
        return [(r[0], r[1]) for r in rows]

    def vocabulary(self) -> list[tuple[str, int]]:
        """(term, document count) of the FTS index, most frequent first; cached until the index changes."""
        if self._vocab is None:
            rows = self.conn.execute("SELECT term, doc FROM chunks_vocab").fetchall()
            self._vocab = sorted(rows, key=lambda r: -r[1])
            self._containing = {}
        return self._vocab

    def terms_containing(self, part: str, limit: int) -> tuple[str, ...]:
        """Corpus terms with ``part`` inside, not at their start (compound heads such as
        ``urlaubsersatzleistung`` for ``ersatzleistung``), most frequent first; cached."""
        vocab = self.vocabulary()
        found = self._containing.get((part, limit))
        if found is None:
            found = tuple([t for t, _ in vocab if part in t and not t.startswith(part)][:limit])
            self._containing[(part, limit)] = found
        return found


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
            self.conn.executescript(_SCHEMA)
            self.set_meta(schema_version=SCHEMA_VERSION, generation="0", mode="lexical")
            self.conn.commit()
        else:
            version = self.get_meta().get("schema_version")
            if version != SCHEMA_VERSION:
                self.conn.close()
                raise IndexCorrupt(f"Index {self.path} hat Schema {version!r}, erwartet {SCHEMA_VERSION}")

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

    def chunk_hashes(self, entry_ids) -> set[str]:
        hashes: set[str] = set()
        ids = list(entry_ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            hashes.update(r[0] for r in self.conn.execute(f"SELECT content_hash FROM chunks WHERE entry_id IN ({marks})", part))
        return hashes

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
            cur = self.conn.execute(
                "INSERT INTO chunks(chunk_id, entry_id, ordinal, section, kind, topic, source, header, text, content_hash, has_vector)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (chunk.chunk_id, entry.id, chunk.ordinal, chunk.section, chunk.kind, entry.topic, entry.source,
                 chunk.header, chunk.text, chunk.content_hash, int(blob is not None)),
            )
            rowid = cur.lastrowid
            self.conn.execute(
                "INSERT INTO chunks_fts(rowid, head, body) VALUES (?, ?, ?)",
                (rowid, index_text(f"{head_common} {chunk.section}"), index_text(chunk.text)),
            )
            if blob is not None:
                self.conn.execute("INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)", (rowid, blob))
                with_vectors += 1
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
        self.conn.execute("INSERT INTO chunk_vectors(rowid, embedding) VALUES (?, ?)", (rowid, blob))
        self.conn.execute("UPDATE chunks SET has_vector = 1 WHERE rowid = ?", (rowid,))

    def counts(self) -> tuple[int, int, int]:
        entries = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        chunks, vectors = self.conn.execute("SELECT count(*), coalesce(sum(has_vector), 0) FROM chunks").fetchone()
        return entries, chunks, vectors

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

    def copy_cache_from(self, other_path: str) -> int:
        """Carry the embedding cache of the previous index file into this new one.

        A damaged previous file only costs its cache: the new index is built regardless.
        """
        try:
            return self._copy_cache(other_path)
        except sqlite_module().DatabaseError:
            return 0

    def _copy_cache(self, other_path: str) -> int:
        self.conn.execute("ATTACH DATABASE ? AS previous", (other_path,))
        try:
            has = self.conn.execute(
                "SELECT 1 FROM previous.sqlite_master WHERE name = 'embedding_cache'"
            ).fetchone()
            if not has:
                return 0
            cur = self.conn.execute("INSERT OR IGNORE INTO embedding_cache SELECT model, content_hash, vector FROM previous.embedding_cache")
            self.conn.commit()
            return cur.rowcount
        finally:
            self.conn.execute("DETACH DATABASE previous")
