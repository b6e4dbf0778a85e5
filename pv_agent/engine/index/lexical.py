"""Lexical search in memory: an inverted index over the folded terms (``LexicalIndex``) that
scores exactly as FTS5's ``bm25(chunks_fts, 2.0, 1.0)``, prefix terms included, at a fraction of
FTS5's cost for OR-queries of many prefix and compound terms. FTS5 stays the stored text index,
the source of this index (read in ``LexicalIndex.derive``) and the reference it is tested against.
"""
from __future__ import annotations

import math
import threading
from bisect import bisect_left

import numpy as np

from ..types import QueryTerm
from .base import query_phrases
from .dense import ArrayCache, _RowReader, dead_rows


def _pack_words(words: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(words).encode(), dtype=np.uint8)


def _unpack_words(packed: np.ndarray) -> list[str]:
    return bytes(packed).decode().split("\n")


def _compact(freq: np.ndarray) -> np.ndarray:
    """The weighted frequencies (head 2, body 1: small integers) in the smallest unsigned type
    that holds them exactly — one byte a posting at 171k chunks instead of four."""
    if len(freq) and freq.min() >= 0 and np.array_equal(freq, np.rint(freq)):
        return freq.astype(np.min_scalar_type(int(freq.max())))
    return freq.astype(np.float32)


def _files(cache) -> dict:
    return {name: cache.file_of("lexical", name) for name in ("post_chunk", "post_freq")}


def _slice(postings, readers, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """(chunks, frequencies as float64) of postings ``a:b``: read from the files if ``readers``,
    else (or if a read fails) from the arrays."""
    chunk_array, freq_array = postings
    if readers:
        chunks = readers["post_chunk"].span(a, b, chunk_array.dtype)
        freq = readers["post_freq"].span(a, b, freq_array.dtype)
        if chunks is not None and freq is not None:
            return chunks, freq.astype(np.float64)
    return chunk_array[a:b], freq_array[a:b].astype(np.float64)


def _terms_of(dead: np.ndarray, base: dict) -> tuple[np.ndarray, np.ndarray]:
    """(base term, number of ``dead`` chunks holding it): one pass over the base's postings."""
    if not len(dead):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    gone = np.zeros(len(base["rowids"]), dtype=bool)
    gone[dead] = True
    at = np.flatnonzero(gone[base["post_chunk"]])
    terms = np.searchsorted(base["offsets"], at, side="right") - 1
    found, docs = np.unique(terms, return_counts=True)
    return found.astype(np.int64), docs.astype(np.int64)


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
    # An update's delta: the same arrays for the chunks added since the base generation (their
    # codes continue the base's ``labels``; ``labels`` holds only the new ones), plus ``dead``,
    # the base's chunks deleted since.
    # ``dead_terms``/``dead_docs``: how many of the deleted chunks held each base term (so the
    # vocabulary's document counts need no pass over the base's postings in every worker).
    DELTA_NAMES = NAMES + ("dead", "dead_terms", "dead_docs")
    # Above this share of the base's chunks changed, an update derives the arrays anew.
    DELTA_SHARE = 0.05

    def __init__(self, arrays: dict, key=None, delta: dict | None = None, files: dict | None = None):
        """``files``: (path, data offset) of the saved ``post_chunk`` and ``post_freq``: the
        postings a query needs are then read with ``pread`` (a slice per term) rather than
        through the memory map, where every slice ever read would stay in the worker's RSS."""
        self.key = key
        self._files = {name: _RowReader(*files[name]) for name in ("post_chunk", "post_freq")} \
            if files and files.get("post_chunk") and files.get("post_freq") else None
        self.n_base = len(arrays["rowids"])
        self.offsets = arrays["offsets"]
        self.post_chunk = arrays["post_chunk"]
        self.post_freq = arrays["post_freq"]
        self.terms = _unpack_words(arrays["terms"]) if len(self.offsets) > 1 else []
        self.labels = _unpack_words(arrays["labels"]) if len(arrays["labels"]) else []
        self.delta = None
        self.alive = None  # chunks not deleted since the base (None: all)
        per_chunk = ("rowids", "lengths", "topic", "source", "entry", "kind")
        if delta is not None:
            # chunk i < n_base is the base's, the rest the delta's; the per-chunk arrays are
            # small (8 bytes a chunk), the postings stay in their two parts
            for name in per_chunk:
                setattr(self, name, np.concatenate([arrays[name], delta[name]]))
            self.labels += _unpack_words(delta["labels"]) if len(delta["labels"]) else []
            self.delta = (delta["offsets"], delta["post_chunk"], delta["post_freq"],
                          _unpack_words(delta["terms"]) if len(delta["offsets"]) > 1 else [])
            self._dead_docs = (delta["dead_terms"], delta["dead_docs"])
            self.alive = np.ones(len(self.rowids), dtype=bool)
            self.alive[np.asarray(delta["dead"], dtype=np.int64)] = False
        else:
            for name in per_chunk:
                setattr(self, name, arrays[name])
        self.lengths = np.asarray(self.lengths, dtype=np.float64)
        self.n_rows = len(self.rowids)  # the size of the chunk index space, dead chunks included
        self.n_live = self.n_rows if self.alive is None else int(self.alive.sum())
        live_lengths = self.lengths if self.alive is None else self.lengths[self.alive]
        self.avgdl = float(live_lengths.sum()) / self.n_live if self.n_live else 1.0
        # the length part of BM25's denominator per chunk, as fts5_aux.c forms it
        self.norm = BM25_K1 * ((1 - BM25_B) + BM25_B * self.lengths / self.avgdl) if self.n_rows else self.lengths
        self._label_code = {label: i for i, label in enumerate(self.labels)}
        self._by_entry: tuple[np.ndarray, np.ndarray] | None = None  # see entry_chunks

    @classmethod
    def open(cls, conn, cache: "ArrayCache | None" = None, key=None) -> "LexicalIndex":
        """The generation's arrays memory-mapped: saved whole, or as a delta on an older
        generation's (an update); derived and saved if neither is there."""
        if cache is None:
            return cls(cls.derive(conn), key)
        arrays = cache.load("lexical", cls.NAMES)
        if arrays is not None:
            return cls(arrays, key, files=_files(cache))
        layered = cache.load_layered("lexical", cls.NAMES, cls.DELTA_NAMES)
        if layered is not None:
            return cls(layered[0], key, layered[1], _files(cache.of_base(layered[1])))
        previous = cache.previous("lexical", cls.NAMES)
        if previous is not None:
            delta = cls.derive_delta(conn, previous[1])
            if delta is not None:
                saved = cache.save_delta("lexical", previous[0], delta)
                return cls(previous[1], key, saved, _files(cache.of_base(saved)))
        arrays = cache.save("lexical", cls.derive(conn))
        return cls(arrays, key, files=_files(cache) if isinstance(arrays["post_chunk"].base, np.memmap) else None)

    @classmethod
    def derive_delta(cls, conn, base: dict) -> dict[str, np.ndarray] | None:
        """The delta of the current chunks against ``base`` (an older generation's full arrays),
        or None when so much changed that deriving anew is the better choice. Chunk rowids are
        never reused (``SidecarWriter``), so the chunks added since are those above the base's last."""
        base_rowids = base["rowids"]
        last = int(base_rowids[-1]) if len(base_rowids) else 0
        dead = dead_rows(conn, base_rowids)
        added = conn.execute("SELECT count(*) FROM chunks WHERE rowid > ?", (last,)).fetchone()[0]
        if added + len(dead) > max(cls.DELTA_SHARE * len(base_rowids), 16):
            return None
        delta = cls.derive(conn, after=last, labels=_unpack_words(base["labels"]) if len(base["labels"]) else [])
        delta["dead"] = dead
        delta["dead_terms"], delta["dead_docs"] = _terms_of(dead, base)
        return delta

    @classmethod
    def derive(cls, conn, after: int | None = None, labels: list[str] | None = None) -> dict[str, np.ndarray]:
        """Build the arrays from the FTS5 table's stored text (folded words joined by spaces);
        with ``after``, only of the chunks above that rowid, their label codes continuing
        ``labels`` (such a delta's ``labels`` are only the new ones)."""
        sql = ("SELECT f.rowid, f.head, f.body, c.topic, c.source, c.entry_id, c.kind FROM chunks_fts f"
               " JOIN chunks c ON c.rowid = f.rowid")
        if after is None:
            rows = conn.execute(sql + " ORDER BY f.rowid").fetchall()
        else:
            rows = conn.execute(sql + " WHERE f.rowid > ? ORDER BY f.rowid", (after,)).fetchall()
        n = len(rows)
        words: list[str] = []
        pieces = np.zeros(2 * n, dtype=np.int64)  # words in head, body, head, body …
        known = len(labels or ())
        labels: dict[str, int] = {label: i for i, label in enumerate(labels or ())}
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
            "post_chunk": post_chunk.astype(np.int32), "post_freq": _compact(freq),
            "terms": _pack_words(terms), "labels": _pack_words(list(labels)[known:]),
        }

    def chunk_keys(self, rowids: list[int]) -> dict[int, tuple[str, str]] | None:
        """(entry id, kind) per chunk rowid; None if a rowid is unknown (or deleted)."""
        wanted = np.asarray(rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.rowids, wanted), max(self.n_rows - 1, 0))
        if not self.n_rows or not np.array_equal(self.rowids[at], wanted):
            return None
        if self.alive is not None and not self.alive[at].all():
            return None
        labels = self.labels
        return {r: (labels[e], labels[k]) for r, e, k in zip(rowids, self.entry[at].tolist(), self.kind[at].tolist())}

    def entry_chunks(self, entry_ids) -> dict[str, tuple[tuple[int, str], ...]]:
        """(rowid, kind) of each entry's chunks in rowid order, which is their section order
        (the writers insert an entry's chunks in that order); entries without chunks are left out."""
        if self._by_entry is None:  # chunk positions grouped by entry code, once per generation
            order = np.argsort(self.entry, kind="stable").astype(np.int32)
            self._by_entry = (order, np.searchsorted(self.entry[order], np.arange(len(self.labels) + 1)).tolist())
        order, starts = self._by_entry
        spans = []
        for eid in entry_ids:
            code = self._label_code.get(eid)
            if code is not None and starts[code] < starts[code + 1]:
                spans.append((eid, starts[code], starts[code + 1]))
        if not spans:
            return {}
        at = np.concatenate([order[a:b] for _, a, b in spans])  # one gather for all entries
        rowids, kinds, labels = self.rowids[at].tolist(), self.kind[at].tolist(), self.labels
        alive = getattr(self, "alive", None)  # where arrays mark chunks deleted since they were derived
        live = alive[at].tolist() if alive is not None else None
        out, i = {}, 0
        for eid, a, b in spans:
            j = i + b - a
            if live is None:
                chunks = tuple(zip(rowids[i:j], [labels[k] for k in kinds[i:j]]))
            else:
                chunks = tuple((rowids[n], labels[kinds[n]]) for n in range(i, j) if live[n])
            if chunks:
                out[eid] = chunks
            i = j
        return out

    def entries_holding(self, words: list[str]) -> int:
        """How many entries have a (live) chunk holding any of ``words``."""
        chunks = [self._postings(QueryTerm(word))[0] for word in words]
        return len(np.unique(self.entry[np.concatenate(chunks)])) if chunks else 0

    def vocabulary(self) -> list[tuple[str, int]]:
        """(term, chunks containing it), most frequent first, ties bytewise."""
        if self.delta is None:
            docs = np.diff(self.offsets).tolist()
            return sorted(zip(self.terms, docs), key=lambda r: -r[1])
        docs = np.diff(self.offsets)
        np.subtract.at(docs, *self._dead_docs)
        counts = dict(zip(self.terms, docs.tolist()))
        offsets, post_chunk, _, terms = self.delta
        for term, docs in zip(terms, np.diff(offsets).tolist()):
            counts[term] = counts.get(term, 0) + docs
        ordered = sorted((t for t, d in counts.items() if d), key=str.encode)
        return sorted(((t, counts[t]) for t in ordered), key=lambda r: -r[1])

    def _postings(self, term: QueryTerm) -> tuple[np.ndarray, np.ndarray]:
        """(chunks, weighted frequency) of a term; for a prefix term summed over its words."""
        chunks, freq = self._run(term, self.terms, self.offsets, (self.post_chunk, self.post_freq), 0, self._files)
        if self.delta is None:
            return chunks, freq
        keep = self.alive[chunks]
        offsets, post_chunk, post_freq, terms = self.delta
        more, more_freq = self._run(term, terms, offsets, (post_chunk, post_freq), self.n_base, None)
        return np.concatenate([chunks[keep], more]), np.concatenate([freq[keep], more_freq])

    def _run(self, term: QueryTerm, terms, offsets, postings, first: int, readers) -> tuple[np.ndarray, np.ndarray]:
        """The postings of ``term`` in one part of the index (chunk numbers from ``first``):
        ``postings`` the arrays (chunk, frequency), ``readers`` their files (or None)."""
        lo = bisect_left(terms, term.text)
        if term.prefix:
            hi = bisect_left(terms, term.text + "{", lo)  # "{" follows "z": the end of the prefix run
        else:
            hi = lo + 1 if lo < len(terms) and terms[lo] == term.text else lo
        if hi <= lo:
            return np.zeros(0, np.int64), np.zeros(0)
        a, b = int(offsets[lo]), int(offsets[hi])
        chunks, freq = _slice(postings, readers, a, b)
        if hi - lo > 1:  # several words: one frequency per chunk (small integers: exact in any order)
            summed = np.bincount(chunks, weights=freq)
            chunks = np.flatnonzero(summed != 0)  # nonzero() of a float array: several times slower than of a mask
            freq = summed[chunks]
        return (chunks + first if first else chunks), freq

    def _buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This thread's zeroed score, phrase-sum and match arrays, one slot per chunk. Kept
        between queries and cleared only where a query wrote: a fresh array the size of the
        chunk table per query costs more than the search itself in a new process (the
        allocator hands the pages back and zeroes them again)."""
        local = self.__dict__.setdefault("_local", threading.local())
        buffers = getattr(local, "buffers", None)
        if buffers is None:
            buffers = local.buffers = (np.zeros(self.n_rows), np.zeros(self.n_rows), np.zeros(self.n_rows, dtype=bool))
        return buffers

    def _phrase_postings(self, members: list[QueryTerm], summed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(chunks, summed frequency) of a compound group; ``summed`` is a zeroed scratch array,
        left zeroed."""
        if len(members) == 1:
            return self._postings(members[0])
        touched = []
        try:
            for term in members:
                chunks, freq = self._postings(term)
                summed[chunks] += freq
                touched.append(chunks)
            chunks = np.flatnonzero(summed != 0)  # nonzero() of a float array: several times slower than of a mask
            return chunks, summed[chunks]
        finally:
            for chunks in touched:
                summed[chunks] = 0.0

    def search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]:
        """(rowid, bm25) best first, as ``SidecarIndex.lexical_search``."""
        if not self.n_rows or limit <= 0:
            return []
        score, summed, matched = self._buffers()
        touched = []
        try:
            return self._score(terms, limit, topics, scopes, score, summed, matched, touched)
        finally:  # leave the buffers zeroed for the next query of this thread
            for chunks in touched:
                score[chunks] = 0.0
                matched[chunks] = False

    def _score(self, terms, limit, topics, scopes, score, summed, matched, touched) -> list[tuple[int, float]]:
        n = float(self.n_live)
        for members in query_phrases(terms):
            chunks, freq = self._phrase_postings(members, summed)
            if not len(chunks):
                continue
            touched.append(chunks)
            hits = float(len(chunks))
            idf = math.log((n - hits + 0.5) / (hits + 0.5))
            if idf <= 0.0:
                idf = 1e-6
            score[chunks] += idf * ((freq * (BM25_K1 + 1.0)) / (freq + self.norm[chunks]))
            matched[chunks] = True
        if not touched:
            return []
        found = np.flatnonzero(matched)
        touched[:] = [found]  # every chunk written to: one array for search() to clear, not one per phrase
        if topics:
            found = found[np.isin(self.topic[found], [self._label_code.get(t, -1) for t in topics])]
        if scopes:
            found = found[np.isin(self.source[found], [self._label_code.get(s, -1) for s in scopes])]
        if not len(found):
            return []
        values = score[found]
        if len(found) > limit:  # keep every chunk that ties with the limit-th score, then sort
            kth = np.partition(values, len(values) - limit)[len(values) - limit]
            keep = values >= kth
            found, values = found[keep], values[keep]
        order = np.lexsort((self.rowids[found], -values))[:limit]
        return list(zip(self.rowids[found[order]].tolist(), (-values[order]).tolist()))
