"""Lexical search in memory: an inverted index over the folded terms (``LexicalIndex``) that
scores exactly as FTS5's ``bm25(chunks_fts, 2.0, 1.0)``, prefix terms included, at a fraction of
FTS5's cost for OR-queries of many prefix and compound terms. FTS5 stays the stored text index,
the source of this index (read in ``LexicalIndex.derive``) and the reference it is tested against.
"""
from __future__ import annotations

import math
from bisect import bisect_left

import numpy as np

from ..types import QueryTerm
from .base import query_phrases
from .dense import ArrayCache


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
        self._by_entry: tuple[np.ndarray, np.ndarray] | None = None  # see entry_chunks

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
