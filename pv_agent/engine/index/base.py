"""What every index store shares: the reader interface (``IndexReader``) that retrieval uses,
the errors, the chunk row, vector packing, the meta-table properties and compound-term lookup.

``sqlite_store.SidecarIndex`` and ``pg_store.PgIndex`` implement the interface; the column lists
here are the one definition of the entry and chunk rows both stores select.
"""
from __future__ import annotations

import itertools
import json
import struct
from bisect import bisect_left, bisect_right
from typing import NamedTuple, Protocol

from ..types import Entry, QueryTerm


SCHEMA_VERSION = "1"


class IndexReader(Protocol):
    """What retrieval, ask() and the drift check read from an index. ``SidecarIndex`` implements
    it on SQLite, ``pg_store.PgIndex`` on PostgreSQL/pgvector; target.open_index opens either."""

    has_vectors: bool
    embed_model: str
    dim: int
    generation: int
    built_at: str

    def refresh(self) -> bool: ...
    def stats(self) -> dict: ...
    def entry(self, entry_id: str) -> Entry | None: ...
    def entries_by_id(self, ids) -> dict[str, Entry]: ...
    def entry_heads(self, ids) -> dict[str, "EntryHead"]: ...
    def entry_tags(self, ids=None) -> dict[str, tuple[str, ...]]: ...
    def entry_ids(self) -> list[str]: ...
    def entry_hashes(self) -> dict[str, str]: ...
    def stand_years(self, entry_ids) -> dict[str, int]: ...
    def chunks_by_rowid(self, rowids) -> dict[int, "ChunkRow"]: ...
    def chunk_keys(self, rowids) -> dict[int, tuple[str, str]]: ...
    def chunks_of_entries(self, entry_ids, kind: str | None = None) -> list["ChunkRow"]: ...
    def chunk_outline(self, entry_ids) -> dict[str, tuple[tuple[int, str], ...]]: ...
    def lexical_search(self, terms: list[QueryTerm], limit: int, topics=None, scopes=None) -> list[tuple[int, float]]: ...
    def dense_search(self, vector, limit: int) -> list[tuple[int, float]]: ...
    def terms_containing(self, part: str, limit: int) -> tuple[str, ...]: ...
    def entry_count(self) -> int: ...
    def entry_frequencies(self, roots) -> dict[str, int]: ...


class IndexError_(RuntimeError):
    """Base of the index errors (named with a trailing underscore: IndexError is a builtin)."""


class IndexMissing(IndexError_):
    pass


class IndexCorrupt(IndexError_):
    pass


class ChunkRow(NamedTuple):
    """A stored chunk (a named tuple: a retrieval reads a dozen or more, and building one costs
    a third of a frozen dataclass's)."""

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


class EntryHead(NamedTuple):
    """An entry without its body: what a hit shows and fusion reads (tags, stand, topic), at a
    fraction of a whole entry's reading and decoding cost."""

    id: str
    title: str
    stand: str
    topic: str
    source: str
    official: bool
    tags: tuple[str, ...]
    legal_bases: tuple[str, ...]
    cross_refs: tuple[str, ...]


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


def _entry_head_from_row(row) -> EntryHead:
    (id_, title, stand, topic, source, official, tags, legal, refs) = row
    return EntryHead(id_, title, stand, topic, source, bool(official), tuple(json.loads(tags)), tuple(json.loads(legal)),
                     tuple(json.loads(refs)))


_ENTRY_HEAD_COLUMNS = "id, title, stand, topic, source, official, tags, legal_bases, cross_refs"

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

    def entry_frequencies(self, roots) -> dict[str, int]:
        """Per root, the number of entries with a word that contains it (roots of five letters
        or more, inside compounds too) or starts with it (shorter roots), in their titles, tags,
        legal bases, headings or text: the document frequencies of the refusal's topic coverage
        (gates.topic_coverage). Read from the lexical postings, so no process folds every
        entry's text; cached until the index changes."""
        lookup = self._compound_lookup()  # resets self._containing when the index changed
        known = self._containing.setdefault("entry_df", {})
        for root in dict.fromkeys(roots):
            if root not in known:
                words = lookup.words_containing(root) if len(root) >= 5 else lookup.words_starting(root)
                known[root] = self._entries_holding(words) if words else 0
        return {root: known[root] for root in roots}

    def entry_count(self) -> int:
        """The number of entries; cached until the index changes."""
        self._compound_lookup()
        if "entry_count" not in self._containing:
            self._containing["entry_count"] = self._count_entries()
        return self._containing["entry_count"]

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
        self._words: list[str] | None = None  # sorted, for words_starting / words_containing
        self._joined: str | None = None
        self._starts: list[int] = []

    def words_starting(self, part: str) -> list[str]:
        """The vocabulary's words that start with ``part``."""
        words = self._sorted_words()
        lo = bisect_left(words, part)
        return words[lo : bisect_left(words, part + "\U0010ffff", lo)]

    def words_containing(self, part: str) -> list[str]:
        """The vocabulary's words that contain ``part`` anywhere: one scan of the words joined
        by newlines (terms hold no whitespace), jumping to the next word after each find."""
        if self._joined is None:
            words = self._sorted_words()
            self._joined = "\n".join(words)
            self._starts = list(itertools.accumulate((len(w) + 1 for w in words), initial=0))
        words, joined, starts = self._sorted_words(), self._joined, self._starts
        found, at = [], joined.find(part)
        while at >= 0:
            word = bisect_right(starts, at) - 1
            found.append(words[word])
            at = joined.find(part, starts[word + 1]) if word + 1 < len(words) else -1
        return found

    def _sorted_words(self) -> list[str]:
        if self._words is None:
            self._words = sorted(t for t, _ in self.vocab)
        return self._words

    def ending_with(self, part: str) -> list[tuple[str, int]]:
        """(term, document count) of the compounds whose last element is ``part``, in vocabulary order."""
        if not part:
            return []
        key = part[::-1]
        lo = bisect_left(self.keys, key)
        hi = bisect_left(self.keys, key + "\U0010ffff", lo)
        ranks = sorted({self.ranks[i] for i in range(lo, hi) if len(self.keys[i]) > len(key)})
        return [self.vocab[r] for r in ranks]


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
