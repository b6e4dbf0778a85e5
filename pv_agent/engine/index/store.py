"""The sqlite-vec sidecar: one SQLite file holding entries, chunks, FTS5, vectors and the
embedding cache. This module owns every SQL string of the engine.

``SidecarIndex`` is the read side used by retrieval (its methods are the store interface,
``IndexReader``, that pgstore.PgIndex implements on PostgreSQL/pgvector); ``SidecarWriter`` is
the write side used by the indexer (pgstore.PgWriter has the same methods).

Dense search reads the vectors once per index generation into a float32 matrix and searches
it with numpy (sign-bit candidates, ranked on an int8 copy, the best few hundred rescored
exactly in float32, see ``DenseMatrix``), where sqlite-vec's
``vec0`` brute force is 5–10× slower (design.md §9). ``vec0`` stays the stored vector table;
the matrix is loaded from the embedding cache's plain BLOBs (0.1 s at 16k chunks, against 5 s
through ``vec0``) and from ``vec0`` for any vector the cache lacks.

Lexical search runs on an in-memory inverted index over the folded terms (``LexicalIndex``)
that scores exactly as FTS5's ``bm25(chunks_fts, 2.0, 1.0)``, prefix terms included, at a
fraction of FTS5's cost for OR-queries of many prefix and compound terms. FTS5 stays the
stored text index, the source of that index and the reference it is tested against.

Both in-memory structures are derived once per index generation and saved as ``.npy`` files
in ``<sidecar>.arrays/<generation key>/``; every other process memory-maps them, so the
workers of one host share one copy through the page cache and a new worker starts without
reading the vectors through SQLite (``ArrayCache``).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import struct
import tempfile
from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

import numpy as np

from .sqlite_conn import connect, sqlite_module
from ..textnorm import index_text
from ..types import Chunk, Entry, QueryTerm

SCHEMA_VERSION = "1"
APPLICATION_ID = 0x50564147  # "PVAG" in the SQLite header: marks a PV-Agent index, even a damaged one
_SQLITE_MAGIC = b"SQLite format 3\x00"


class IndexReader(Protocol):
    """What retrieval, ask() and the drift check read from an index. ``SidecarIndex`` implements
    it on SQLite, ``pgstore.PgIndex`` on PostgreSQL/pgvector; index_target.open_index opens either."""

    has_vectors: bool
    embed_model: str
    dim: int
    generation: int
    built_at: str

    def refresh(self) -> bool: ...
    def stats(self) -> dict: ...
    def entry(self, entry_id: str) -> Entry | None: ...
    def entries_by_id(self, ids) -> dict[str, Entry]: ...
    def entry_ids(self) -> list[str]: ...
    def entry_hashes(self) -> dict[str, str]: ...
    def stand_years(self, entry_ids) -> dict[str, int]: ...
    def chunks_by_rowid(self, rowids) -> dict[int, "ChunkRow"]: ...
    def chunk_keys(self, rowids) -> dict[int, tuple[str, str]]: ...
    def chunks_of_entries(self, entry_ids, kind: str | None = None) -> list["ChunkRow"]: ...
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


class IndexMetaMixin:
    """What both stores derive the same way: metadata properties from ``self.meta`` and the
    compound lookup over ``self.vocabulary()`` (cached in ``self._containing``)."""

    def _meta_stats(self) -> dict:
        """The part of ``stats()`` that comes from the metadata, alike in both stores."""
        return {
            "mode": self.meta.get("mode", "lexical"),
            "embedder": self.embedder if self.has_vectors else "",
            "embed_model": self.embed_model,
            "dim": self.dim,
            "generation": self.generation,
            "built_at": self.built_at,
            "notice": self.meta.get("notice", ""),
        }

    @property
    def generation(self) -> int:
        return int(self.meta.get("generation", "0"))

    @property
    def built_at(self) -> str:
        return self.meta.get("built_at", "")

    @property
    def has_vectors(self) -> bool:
        return self.meta.get("mode") == "hybrid"

    @property
    def embed_model(self) -> str:
        return self.meta.get("embed_model", "")

    @property
    def dim(self) -> int:
        return int(self.meta.get("dim", "0"))

    @property
    def embedder(self) -> str:
        """``ollama`` or ``builtin`` (embedders.py); indexes built before this was recorded are Ollama's."""
        return self.meta.get("embedder") or "ollama"

    @property
    def cache_key(self) -> str:
        """The embedding cache's key of this index's vectors (model plus instruction prefix)."""
        return self.meta.get("cache_key") or self.embed_model

    def terms_containing(self, part: str, limit: int) -> tuple[str, ...]:
        """Corpus compounds whose last element is ``part`` (plus at most an inflection ending):
        ``urlaubsersatzleistung(en)`` for ``ersatzleistung``, but not ``beitragsgrundlage`` for
        ``grund`` — in German the last element carries a compound's meaning. Most frequent
        first; cached until the index changes.

        The expansions of one word are one group (``QueryTerm.group``) that the stores score
        as a single term, so a generic head's many compounds (``…betrag``, ``…satz``) weigh as
        little as the head is specific: each compound alone is rare and would score with a
        high IDF, and "Betrag" in a question would otherwise rank every ``…betrag`` entry
        (Pensionistenabsetzbetrag) above the ones it is about."""
        lookup = self._compound_lookup()
        found = self._containing.get((part, limit))
        if found is None:
            compounds = lookup.ending_with(part)
            found = tuple([t for t, _ in compounds][:limit])
            self._containing[(part, limit)] = found
        return found

    def _compound_lookup(self) -> "CompoundLookup":
        vocab = self.vocabulary()  # resets self._containing when the index changed
        lookup = self._containing.get("lookup")
        if lookup is None:
            lookup = self._containing["lookup"] = CompoundLookup(vocab)
        return lookup


class CompoundLookup:
    """``compound_ends_with`` over a whole vocabulary by binary search instead of a scan: each
    term is filed under its reversed forms without 0–``MAX_INFLECTION`` final letters, so the
    terms ending in ``part`` (give or take an ending) are one run of reversed keys starting with
    reversed ``part``."""

    def __init__(self, vocab: list[tuple[str, int]]):
        self.vocab = vocab
        keys = []
        for rank, (term, _) in enumerate(vocab):
            for cut in range(min(MAX_INFLECTION, len(term) - 1) + 1):
                keys.append((term[: len(term) - cut][::-1], rank))
        keys.sort()
        self.keys = [k for k, _ in keys]
        self.ranks = [r for _, r in keys]

    def ending_with(self, part: str) -> list[tuple[str, int]]:
        """(term, document count) of the compounds whose last element is ``part``, in vocabulary order."""
        if not part:
            return []
        key = part[::-1]
        lo = bisect_left(self.keys, key)
        hi = bisect_left(self.keys, key + "\U0010ffff", lo)
        ranks = sorted({self.ranks[i] for i in range(lo, hi) if len(self.keys[i]) > len(key)})
        return [self.vocab[r] for r in ranks]




ENTRY_CACHE_SIZE = 512  # decoded entries kept per process (a few MB)


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
        self._entry_cache: dict[str, Entry] = {}
        self._entry_cache_key = ""
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
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        key = self._generation_key()
        if self._entry_cache_key != key:
            self._entry_cache, self._entry_cache_key = {}, key
        found = {i: self._entry_cache[i] for i in ids if i in self._entry_cache}
        missing = [i for i in ids if i not in found]
        if missing:
            marks = ",".join("?" * len(missing))
            rows = self.conn.execute(f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE id IN ({marks})", missing).fetchall()
            if len(self._entry_cache) + len(rows) > ENTRY_CACHE_SIZE:
                self._entry_cache = {}
            for r in rows:
                found[r[0]] = self._entry_cache[r[0]] = _entry_from_row(r)
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
        worker's question waits for them: at 171k chunks the first process after an update
        otherwise spends ~10–20 s on it."""
        self.refresh()
        self.lexical_index()
        if self.has_vectors:
            self.dense_matrix()

    def _generation_key(self) -> str:
        ino, dev = self._stat_key
        stamp = "".join(ch for ch in self.built_at if ch.isdigit())
        return f"{dev}-{ino}-g{self.generation}-{stamp}"

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
            self._dense = DenseMatrix.open(self.conn, self.embed_model, self.dim, self._cache(key), key)
        return self._dense

    def vocabulary(self) -> list[tuple[str, int]]:
        """(term, document count) of the index, most frequent first, ties in byte order (as
        FTS5's vocabulary table); cached until the index changes."""
        if self._vocab is None:
            self._vocab = self.lexical_index().vocabulary()
            self._containing = {}
        return self._vocab


MAX_INFLECTION = 3  # "en", "es", "ern" …


def compound_ends_with(term: str, part: str) -> bool:
    """``term`` is a longer word whose last element is ``part`` (give or take an ending)."""
    at = term.rfind(part)
    return at > 0 and len(term) - at - len(part) <= MAX_INFLECTION


def query_phrases(terms: list[QueryTerm]) -> list[list[QueryTerm]]:
    """The scoring units of a query, in order: each ungrouped term alone, each group
    (``QueryTerm.group``) as one unit at the place of its first term."""
    phrases: list[list[QueryTerm]] = []
    groups: dict[str, list[QueryTerm]] = {}
    for term in terms:
        if not term.group:
            phrases.append([term])
        elif term.group in groups:
            groups[term.group].append(term)
        else:
            groups[term.group] = [term]
            phrases.append(groups[term.group])
    return phrases


def fts5_expression(terms: list[QueryTerm]) -> str:
    """An FTS5 OR-expression of quoted terms. Terms hold only [0-9a-z] (textnorm.tokens), and are
    quoted all the same, so no user word can become an FTS5 operator."""
    return " OR ".join(f'"{t.text}"*' if t.prefix else f'"{t.text}"' for t in terms)


class DenseMatrix:
    """Unit-normalised chunk vectors (one row each) with their chunk rowids; cosine search.

    Search is three-stage (design.md §9), so that one query touches little memory and a
    worker's resident set stays small however many queries it answers:

    1. the Hamming distance between sign bits (1 bit per dimension, 1/32 of float32) picks a
       candidate pool that grows with the corpus (``candidates()``: a fixed 1,000 kept
       recall@50 at 1.0 on 16k chunks but let it fall to 0.72 on 171k);
    2. the pool is scored on an int8 copy of the matrix (1/4 of float32, one scale per row)
       and the best ``rescored(limit)`` rows are kept;
    3. those few rows are read in float32 with ``pread`` from the saved matrix (the page
       cache, not the process, holds them) and scored exactly: the distances returned are
       exact cosine distances, as before.

    Exact scan below ``EXACT_BELOW`` rows, where the full matrix is cheaper than stages.
    """

    RESCORE_FACTOR = 8
    MIN_RESCORE = 1000
    # Share of all rows kept by the sign bits at 1024 dimensions; fewer dimensions carry fewer
    # sign bits and need proportionally more candidates. Measured on clustered synthetic
    # vectors (docs/benchmarks.md): at 1024 dims recall@50 0.97 at 2.3 %, 0.9998 at 4.7 % of 171k rows.
    RESCORE_SHARE = 0.05
    SHARE_DIM = 1024
    EXACT_BELOW = 4096
    # Rows scored exactly after the int8 stage: int8 rounding moves a cosine by ~1e-3, far
    # less than the gap between the 50th and the 200th neighbour.
    EXACT_FACTOR = 4
    MIN_EXACT = 200
    _INT8_BLOCK = 1024  # pool rows converted to float32 at once (stays in cache)
    # Folder of the saved arrays; a new name when their set changes, so that arrays saved by an
    # older version (no int8 copy) are derived anew once instead of by every process.
    ARRAYS = "dense-int8"

    def __init__(self, rowids: np.ndarray, matrix: np.ndarray, key=None, bits: np.ndarray | None = None,
                 codes: np.ndarray | None = None, scales: np.ndarray | None = None, matrix_file=None):
        self.rowids = rowids
        self.matrix = matrix
        self.key = key
        staged = _HAS_POPCOUNT and len(rowids) >= self.EXACT_BELOW
        if bits is None and staged:
            bits = _sign_bits(matrix)
        self.bits = bits if staged and bits is not None and len(bits) == len(rowids) else None
        if self.bits is not None and (codes is None or scales is None or len(codes) != len(rowids)):
            codes, scales = _int8_codes(matrix)
        self.codes = codes if self.bits is not None else None
        self.scales = scales if self.bits is not None else None
        self._reader = _RowReader(*matrix_file) if matrix_file and self.bits is not None else None

    def candidates(self, limit: int) -> int:
        """How many rows the first stage keeps for rescoring."""
        dim = self.matrix.shape[1] if self.matrix.ndim == 2 else self.SHARE_DIM
        share = min(1.0, self.RESCORE_SHARE * self.SHARE_DIM / max(dim, 1))
        return max(self.MIN_RESCORE, self.RESCORE_FACTOR * limit, math.ceil(share * len(self.rowids)))

    def rescored(self, limit: int) -> int:
        """How many rows of the pool the exact float32 stage scores."""
        return max(self.MIN_EXACT, self.EXACT_FACTOR * limit)

    @classmethod
    def open(cls, conn, model: str, dim: int, cache: "ArrayCache | None" = None, key=None) -> "DenseMatrix":
        """Memory-map the generation's saved arrays, or load the matrix from SQLite and save them."""
        names = ("rowids", "matrix", "bits", "codes", "scales")
        arrays = cache.load(cls.ARRAYS, names) if cache else None
        if arrays is not None:
            return cls(arrays["rowids"], arrays["matrix"], key, arrays["bits"], arrays["codes"], arrays["scales"],
                       cache.file_of(cls.ARRAYS, "matrix"))
        dense = cls.load(conn, model, dim, key)
        if cache:
            staged = dense.bits is not None
            saved = cache.save(cls.ARRAYS, {
                "rowids": dense.rowids, "matrix": dense.matrix,
                "bits": dense.bits if staged else np.zeros((0, 1), dtype=np.uint64),
                "codes": dense.codes if staged else np.zeros((0, 1), dtype=np.int8),
                "scales": dense.scales if staged else np.zeros(0, dtype=np.float32),
            })
            dense = cls(saved["rowids"], saved["matrix"], key, saved["bits"], saved["codes"], saved["scales"],
                        cache.file_of(cls.ARRAYS, "matrix") if saved["matrix"] is not dense.matrix else None)
        return dense

    @classmethod
    def load(cls, conn, model: str, dim: int, key=None) -> "DenseMatrix":
        """Read the vectors row by row into a preallocated matrix (peak memory ≈ the matrix)."""
        expected = conn.execute("SELECT count(*) FROM chunks WHERE has_vector = 1").fetchone()[0]
        rowids = np.empty(expected, dtype=np.int64)
        matrix = np.empty((expected, dim), dtype=np.float32)
        n = 0
        rows = conn.execute(
            "SELECT c.rowid, e.vector FROM chunks c JOIN embedding_cache e"
            " ON e.model = ? AND e.content_hash = c.content_hash WHERE c.has_vector = 1",
            (model,),
        )
        for rowid, blob in rows:
            rowids[n], matrix[n] = rowid, np.frombuffer(blob, dtype=np.float32)
            n += 1
        if n < expected:  # a vector missing from the cache: read it from vec0
            have = set(rowids[:n].tolist())
            missing = [r[0] for r in conn.execute("SELECT rowid FROM chunks WHERE has_vector = 1") if r[0] not in have]
            for start in range(0, len(missing), 500):
                part = missing[start : start + 500]
                marks = ",".join("?" * len(part))
                for rowid, blob in conn.execute(f"SELECT rowid, embedding FROM chunk_vectors WHERE rowid IN ({marks})", part):
                    rowids[n], matrix[n] = rowid, np.frombuffer(blob, dtype=np.float32)
                    n += 1
        rowids, matrix = rowids[:n], matrix[:n]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)  # cosine, as vec0's distance_metric=cosine
        return cls(rowids, matrix, key)

    def __len__(self) -> int:
        return len(self.rowids)

    def search(self, vector, limit: int) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the ``limit`` nearest rows, nearest first."""
        n = len(self.rowids)
        if n == 0 or limit <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if norm == 0.0:
            return []
        q = q / norm
        pool = self.candidates(limit) if self.bits is not None else n
        if pool >= n:  # small matrix: one exact scan
            scores = self.matrix @ q
            top = np.argpartition(scores, n - limit)[n - limit :] if limit < n else np.arange(n)
            top = top[np.argsort(-scores[top], kind="stable")]
            return list(zip(self.rowids[top].tolist(), (1.0 - scores[top]).tolist()))
        counts = np.bitwise_count(self.bits ^ _sign_bits(q[None, :]))
        hamming = counts.astype(np.float32) @ np.ones(counts.shape[1], dtype=np.float32)  # exact sums, via BLAS
        candidates = np.sort(np.argpartition(hamming, pool)[:pool])  # rows in file order: fewer pages
        approx = self._int8_scores(candidates, q)
        keep = min(self.rescored(limit), pool)
        if keep < pool:
            candidates = np.sort(candidates[np.argpartition(-approx, keep)[:keep]])
        exact = self._exact_rows(candidates) @ q
        k = min(limit, len(candidates))
        order = np.argpartition(-exact, k - 1)[:k] if k < len(candidates) else np.arange(len(candidates))
        order = order[np.argsort(-exact[order], kind="stable")]
        return list(zip(self.rowids[candidates[order]].tolist(), (1.0 - exact[order]).tolist()))

    def _int8_scores(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Approximate cosine of ``rows`` (sorted) from the int8 copy."""
        out = np.empty(len(rows), dtype=np.float32)
        block = self._INT8_BLOCK
        buf = np.empty((min(block, len(rows)), self.codes.shape[1]), dtype=np.float32)
        for start in range(0, len(rows), block):
            part = self.codes[rows[start : start + block]]
            m = len(part)
            np.copyto(buf[:m], part, casting="unsafe")
            out[start : start + m] = buf[:m] @ q
        return out * self.scales[rows]

    def _exact_rows(self, rows: np.ndarray) -> np.ndarray:
        """float32 rows of the matrix: read from the file (not mapped), or from memory."""
        if self._reader is not None:
            got = self._reader.rows(rows, self.matrix.shape[1])
            if got is not None:
                return got
        return np.asarray(self.matrix[rows], dtype=np.float32)


_HAS_POPCOUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0; older numpy scans exactly


def _sign_bits(matrix: np.ndarray) -> np.ndarray:
    """One bit per dimension (the sign), packed into uint64 words per row."""
    packed = np.packbits(matrix > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    return np.ascontiguousarray(packed).view(np.uint64)


def _int8_codes(matrix: np.ndarray, block: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """Each row as int8 codes times one float32 scale (its largest magnitude / 127)."""
    codes = np.empty(matrix.shape, dtype=np.int8)
    scales = np.empty(len(matrix), dtype=np.float32)
    for start in range(0, len(matrix), block):
        part = np.asarray(matrix[start : start + block], dtype=np.float32)
        peak = np.abs(part).max(axis=1) if part.shape[1] else np.zeros(len(part), dtype=np.float32)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        codes[start : start + len(part)] = np.rint(part / scale[:, None]).astype(np.int8)
        scales[start : start + len(part)] = scale
    return codes, scales


class _RowReader:
    """float32 rows of a saved ``.npy`` matrix read with ``pread``: the rows come from the page
    cache (one copy per host) into a short-lived buffer, so they never add to the process's
    resident set as touched pages of a memory map would."""

    def __init__(self, path: str, offset: int):
        self.offset = offset
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def rows(self, rows: np.ndarray, dim: int) -> np.ndarray | None:
        if self.fd is None:
            return None
        size = dim * 4
        out = np.empty((len(rows), dim), dtype=np.float32)
        view = memoryview(out).cast("B")
        base = self.offset
        try:
            for i, row in enumerate(rows.tolist()):
                if os.preadv(self.fd, [view[i * size : (i + 1) * size]], base + row * size) != size:
                    return None
        except OSError:
            return None
        return out

    def __del__(self):
        if getattr(self, "fd", None) is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass


class ArrayCache:
    """``.npy`` files derived from one index generation, in ``<sidecar>.arrays/<key>/``.

    The first process that needs them derives and saves them (write to a temporary folder,
    then one ``rename``: readers see all files or none); every process memory-maps them
    read-only, so the page cache holds one copy for all workers of a host. Older generations'
    folders are removed when a new one is saved (a process still mapping them keeps its
    pages: the files live on until unmapped). If the folder cannot be written (read-only
    location), the arrays simply stay in the deriving process's memory.
    """

    def __init__(self, base: str, key: str):
        self.base = base
        self.key = key
        self.folder = os.path.join(base, key)

    def load(self, kind: str, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
        """The saved arrays of ``kind`` memory-mapped, or None if they are not (all) there."""
        folder = os.path.join(self.folder, kind)
        try:
            # plain ndarray views of the maps: indexing a np.memmap costs a Python call each time
            return {name: np.load(os.path.join(folder, name + ".npy"), mmap_mode="r").view(np.ndarray) for name in names}
        except (OSError, ValueError):
            return None

    def file_of(self, kind: str, name: str) -> tuple[str, int] | None:
        """(path, offset of the data) of a saved C-ordered array, for reading rows with ``pread``."""
        path = os.path.join(self.folder, kind, name + ".npy")
        try:
            with open(path, "rb") as f:
                version = np.lib.format.read_magic(f)
                read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                _, fortran, _ = read_header(f)
                return None if fortran else (path, f.tell())
        except (OSError, ValueError):
            return None

    def save(self, kind: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Save and return the arrays memory-mapped (or as given if saving fails)."""
        final = os.path.join(self.folder, kind)
        try:
            os.makedirs(self.folder, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=f".{kind}-", dir=self.folder)
            os.chmod(tmp, 0o755)  # readable by every worker that can read the sidecar
            for name, array in arrays.items():
                np.save(os.path.join(tmp, name + ".npy"), np.ascontiguousarray(array))
            try:
                os.rename(tmp, final)
            except OSError:  # another process was faster: its files are the same
                shutil.rmtree(tmp, ignore_errors=True)
            self._drop_other_generations()
        except OSError:
            return arrays
        return self.load(kind, tuple(arrays)) or arrays

    def _drop_other_generations(self) -> None:
        """Remove the folders of older generations (the counter grows across full rebuilds too);
        a process still on an older generation never removes a newer one's."""
        mine = _generation_of(self.key)
        for name in os.listdir(self.base):
            if name != self.key and not name.startswith(".") and _generation_of(name) < mine:
                shutil.rmtree(os.path.join(self.base, name), ignore_errors=True)


def _generation_of(key: str) -> int:
    """The generation in a key ``<dev>-<ino>-g<generation>-<time>`` (-1 if none)."""
    for part in key.split("-"):
        if part.startswith("g") and part[1:].isdigit():
            return int(part[1:])
    return -1


def _pack_words(words: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(words).encode(), dtype=np.uint8)


def _unpack_words(packed: np.ndarray) -> list[str]:
    return bytes(packed).decode().split("\n")


# FTS5's bm25() constants (fts5_aux.c) and the sidecar's column weights: head 2, body 1.
BM25_K1 = 1.2
BM25_B = 0.75
HEAD_WEIGHT = 2.0
BODY_WEIGHT = 1.0


class LexicalIndex:
    """An inverted index over the folded terms of ``chunks_fts``, scoring exactly as FTS5's
    ``bm25(chunks_fts, 2.0, 1.0)``: the same IDF per query term over the whole table (a prefix
    term counts the chunks holding any word it starts), the same weighted term frequency
    (head 2, body 1), document length (both columns) and average, summed in query-term order
    in float64 as fts5_aux.c does, so the scores are the same floats and ties go by rowid.

    Arrays (chunk ``i`` in rowid order): ``rowids[i]``, ``lengths[i]`` (tokens), ``topic[i]``
    and ``source[i]`` (codes into ``labels``); the vocabulary sorted bytewise (``terms``),
    each term's postings ``offsets[t]:offsets[t+1]`` into ``post_chunk`` (chunk ``i``) and
    ``post_freq`` (weighted frequency). A prefix term is a contiguous run of terms, so its
    postings are one slice.
    """

    NAMES = ("rowids", "lengths", "topic", "source", "entry", "kind", "offsets", "post_chunk", "post_freq", "terms", "labels")

    def __init__(self, arrays: dict, key=None):
        self.key = key
        self.rowids = arrays["rowids"]
        self.lengths = np.asarray(arrays["lengths"], dtype=np.float64)
        self.topic = arrays["topic"]
        self.source = arrays["source"]
        self.entry = arrays["entry"]
        self.kind = arrays["kind"]
        self.offsets = arrays["offsets"]
        self.post_chunk = arrays["post_chunk"]
        self.post_freq = arrays["post_freq"]
        self.terms = _unpack_words(arrays["terms"]) if len(self.offsets) > 1 else []
        self.labels = _unpack_words(arrays["labels"])
        self.n_rows = len(self.rowids)
        self.avgdl = float(self.lengths.sum()) / self.n_rows if self.n_rows else 1.0
        # the length part of BM25's denominator per chunk, as fts5_aux.c forms it
        self.norm = BM25_K1 * ((1 - BM25_B) + BM25_B * self.lengths / self.avgdl) if self.n_rows else self.lengths
        self._label_code = {label: i for i, label in enumerate(self.labels)}

    @classmethod
    def open(cls, conn, cache: "ArrayCache | None" = None, key=None) -> "LexicalIndex":
        arrays = cache.load("lexical", cls.NAMES) if cache else None
        if arrays is None:
            arrays = cls.derive(conn)
            if cache:
                arrays = cache.save("lexical", arrays)
        return cls(arrays, key)

    @classmethod
    def derive(cls, conn) -> dict[str, np.ndarray]:
        """Build the arrays from the FTS5 table's stored text (folded words joined by spaces)."""
        rows = conn.execute(
            "SELECT f.rowid, f.head, f.body, c.topic, c.source, c.entry_id, c.kind FROM chunks_fts f"
            " JOIN chunks c ON c.rowid = f.rowid ORDER BY f.rowid"
        ).fetchall()
        n = len(rows)
        words: list[str] = []
        pieces = np.zeros(2 * n, dtype=np.int64)  # words in head, body, head, body …
        labels: dict[str, int] = {}
        topic = np.zeros(n, dtype=np.int32)
        source = np.zeros(n, dtype=np.int32)
        entry = np.zeros(n, dtype=np.int32)
        kind = np.zeros(n, dtype=np.int32)
        rowids = np.zeros(n, dtype=np.int64)
        for i, (rowid, head, body, t, s, e, k) in enumerate(rows):
            h, b = head.split(), body.split()
            words += h
            words += b
            pieces[2 * i], pieces[2 * i + 1] = len(h), len(b)
            rowids[i] = rowid
            topic[i] = labels.setdefault(t, len(labels))
            source[i] = labels.setdefault(s, len(labels))
            entry[i] = labels.setdefault(e, len(labels))
            kind[i] = labels.setdefault(k, len(labels))
        del rows
        terms = sorted(set(words), key=str.encode)  # FTS5 orders terms bytewise
        rank_of = {t: i for i, t in enumerate(terms)}
        word_rank = np.fromiter(map(rank_of.__getitem__, words), dtype=np.int64, count=len(words))  # a C-level loop
        del words, rank_of
        chunk = np.repeat(np.arange(n, dtype=np.int64), pieces.reshape(-1, 2).sum(axis=1)) if n else np.zeros(0, np.int64)
        weight = np.repeat(np.tile(np.array([HEAD_WEIGHT, BODY_WEIGHT]), n), pieces) if n else np.zeros(0)
        pair = word_rank * max(n, 1) + chunk
        del word_rank, chunk
        order = np.argsort(pair, kind="stable")
        pair = pair[order]
        weight = weight[order]
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if len(pair) else np.zeros(0, np.int64)
        freq = np.add.reduceat(weight, starts) if len(pair) else np.zeros(0)
        unique = pair[starts]
        post_term, post_chunk = unique // max(n, 1), unique % max(n, 1)
        offsets = np.searchsorted(post_term, np.arange(len(terms) + 1))
        return {
            "rowids": rowids, "lengths": pieces.reshape(-1, 2).sum(axis=1).astype(np.int32) if n else np.zeros(0, np.int32),
            "topic": topic, "source": source, "entry": entry, "kind": kind, "offsets": offsets.astype(np.int64),
            "post_chunk": post_chunk.astype(np.int32), "post_freq": freq.astype(np.float32),
            "terms": _pack_words(terms), "labels": _pack_words(list(labels)),
        }

    def chunk_keys(self, rowids: list[int]) -> dict[int, tuple[str, str]] | None:
        """(entry id, kind) per chunk rowid; None if a rowid is unknown."""
        wanted = np.asarray(rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.rowids, wanted), max(self.n_rows - 1, 0))
        if not self.n_rows or not np.array_equal(self.rowids[at], wanted):
            return None
        labels = self.labels
        return {r: (labels[e], labels[k]) for r, e, k in zip(rowids, self.entry[at].tolist(), self.kind[at].tolist())}

    def vocabulary(self) -> list[tuple[str, int]]:
        """(term, chunks containing it), most frequent first, ties bytewise."""
        docs = np.diff(self.offsets).tolist()
        return sorted(zip(self.terms, docs), key=lambda r: -r[1])

    def _postings(self, term: QueryTerm) -> tuple[np.ndarray, np.ndarray]:
        """(chunks, weighted frequency) of a term; for a prefix term summed over its words."""
        lo = bisect_left(self.terms, term.text)
        if term.prefix:
            hi = bisect_left(self.terms, term.text + "{", lo)  # "{" follows "z": the end of the prefix run
        else:
            hi = lo + 1 if lo < len(self.terms) and self.terms[lo] == term.text else lo
        if hi <= lo:
            return np.zeros(0, np.int32), np.zeros(0)
        a, b = int(self.offsets[lo]), int(self.offsets[hi])
        chunks, freq = self.post_chunk[a:b], self.post_freq[a:b].astype(np.float64)
        if hi - lo > 1:  # several words: one frequency per chunk (small integers: exact in any order)
            summed = np.bincount(chunks, weights=freq, minlength=self.n_rows)
            chunks = np.flatnonzero(summed)
            freq = summed[chunks]
        return chunks, freq

    def _phrase_postings(self, members: list[QueryTerm]) -> tuple[np.ndarray, np.ndarray]:
        if len(members) == 1:
            return self._postings(members[0])
        summed = np.zeros(self.n_rows)
        for term in members:
            chunks, freq = self._postings(term)
            summed[chunks] += freq
        chunks = np.flatnonzero(summed)
        return chunks, summed[chunks]

    def search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]:
        """(rowid, bm25) best first, as ``SidecarIndex.lexical_search``."""
        if not self.n_rows or limit <= 0:
            return []
        score = np.zeros(self.n_rows)
        matched = np.zeros(self.n_rows, dtype=bool)
        n = float(self.n_rows)
        for members in query_phrases(terms):
            chunks, freq = self._phrase_postings(members)
            if not len(chunks):
                continue
            hits = float(len(chunks))
            idf = math.log((n - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            score[chunks] += idf * ((freq * (BM25_K1 + 1.0)) / (freq + self.norm[chunks]))
            matched[chunks] = True
        if topics:
            matched &= np.isin(self.topic, [self._label_code.get(t, -1) for t in topics])
        if scopes:
            matched &= np.isin(self.source, [self._label_code.get(s, -1) for s in scopes])
        found = np.flatnonzero(matched)
        if not len(found):
            return []
        values = score[found]
        if len(found) > limit:  # keep every chunk that ties with the limit-th score, then sort
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            found, values = found[keep], values[keep]
        order = np.lexsort((self.rowids[found], -values))[:limit]
        return list(zip(self.rowids[found[order]].tolist(), (-values[order]).tolist()))


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
