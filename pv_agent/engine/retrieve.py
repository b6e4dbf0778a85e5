"""Hybrid retrieval (design.md §3): BM25 over folded German text + dense KNN, fused by
Reciprocal Rank Fusion, one best content section per entry, ``cross_refs`` expansion.

User text is data, never FTS5 syntax: the question is reduced to folded word tokens and the
FTS5 expression is built from quoted terms only, so ``§ 67``, quotes, ``AND``/``NEAR``, ``*``,
``^``, parentheses or emoji cannot change the query's meaning or break it.
"""
from __future__ import annotations

import time
from collections import defaultdict

from .config import Settings
from .ollama import OllamaClient, OllamaError
from .store import ChunkRow, SidecarIndex
from .textnorm import query_terms, stem
from .types import Hit, RetrievalResult

# How many corpus terms one query word may expand to when it is found inside compounds
# ("ersatzleistung" → "urlaubsersatzleistung"); the most frequent ones win.
MAX_INFIX_EXPANSIONS = 12
MIN_INFIX_LENGTH = 5
# A "Verweise" section only lists other entries' titles: it may find an entry, but counts less.
REFERENCES_WEIGHT = 0.5
# Year steering: an entry whose stand is the year asked about counts more, one describing a
# later year less (its values may not have applied yet). Older entries stay neutral: a value
# may have stayed unchanged since.
SAME_YEAR_BOOST = 1.3
LATER_YEAR_DAMPING = 0.8


def retrieve(
    index: SidecarIndex,
    question: str,
    settings: Settings,
    *,
    embedder: OllamaClient | None = None,
    topics: list[str] | None = None,
    scopes: list[str] | None = None,
    k: int | None = None,
    year: int | None = None,
) -> RetrievalResult:
    """Entry-level hits for ``question``; ``year`` (see timeframe.asked_year) steers towards
    entries whose ``stand`` describes that year."""
    started = time.monotonic()
    index.refresh()
    k = k or settings.top_k
    terms = query_terms(question or "")
    timings: dict = {}
    mode, notice = ("hybrid", "") if index.has_vectors else ("lexical", "Index ohne Vektoren – nur lexikalische Suche (BM25).")

    lexical = _lexical_ranking(index, terms, settings.candidate_pool, topics, scopes)
    timings["lexical_ms"] = _ms(started)

    dense: list[tuple[int, float]] = []
    if mode == "hybrid" and question.strip():
        if embedder is None:
            mode, notice = "lexical", "Kein Embedding-Modell angebunden – nur lexikalische Suche (BM25)."
        else:
            t = time.monotonic()
            try:
                vector = embedder.embed([question], model=index.embed_model or settings.embed_model)[0]
            except OllamaError as exc:
                mode, notice = "lexical", f"{exc.reason} – nur lexikalische Suche (BM25)."
            else:
                if len(vector) != index.dim:
                    mode, notice = "lexical", "Embedding-Dimension passt nicht zum Index – nur lexikalische Suche."
                else:
                    dense = index.dense_search(vector, settings.candidate_pool)
                    timings["embed_dense_ms"] = _ms(t)

    chunk_rows = index.chunks_by_rowid([r for r, _ in lexical] + [r for r, _ in dense])
    if topics or scopes:  # dense KNN cannot pre-filter in vec0 here; drop what the filters exclude
        allowed = _allowed_entries(index, {c.entry_id for c in chunk_rows.values()}, topics, scopes)
        dense = [(r, d) for r, d in dense if chunk_rows[r].entry_id in allowed]
    hits = _fuse(index, chunk_rows, lexical, dense, settings, k, year)
    _add_coverage(index, hits, terms)
    hits.extend(_cross_ref_hits(index, hits, settings))
    timings["total_ms"] = _ms(started)
    return RetrievalResult(question=question, mode=mode, hits=hits, notice=notice, terms=tuple(terms), timings_ms=timings)


# -- lexical ---------------------------------------------------------------------------
def fts_expression(terms: list[str], compounds_containing=lambda root: ()) -> str:
    """An FTS5 OR-expression of quoted terms: stem prefixes plus the corpus words that
    contain a term inside a compound (``compounds_containing(root)``)."""
    parts: list[str] = []
    for term in terms:
        root = stem(term)
        # Prefix search for words of four letters and more; shorter ones (UEL, SZ, DZ) match exactly.
        parts.append(f'"{root}"*' if len(root) >= 4 else f'"{root}"')
        if len(root) >= MIN_INFIX_LENGTH and not root.isdigit():
            parts.extend(f'"{t}"' for t in compounds_containing(root))
    return " OR ".join(dict.fromkeys(parts))


def _lexical_ranking(index, terms, limit, topics, scopes) -> list[tuple[int, float]]:
    if not terms:
        return []
    expression = fts_expression(terms, lambda root: index.terms_containing(root, MAX_INFIX_EXPANSIONS))
    return index.lexical_search(expression, limit, topics, scopes)


# -- fusion ----------------------------------------------------------------------------
def _fuse(index, chunk_rows: dict[int, ChunkRow], lexical, dense, settings: Settings, k: int, year=None) -> list[Hit]:
    """Reciprocal Rank Fusion over chunks, then the best chunk per entry."""
    chunk_score: dict[int, float] = defaultdict(float)
    for rank, (rowid, _) in enumerate(lexical, start=1):
        chunk_score[rowid] += 1.0 / (settings.rrf_k + rank)
    cosine: dict[int, float] = {}
    for rank, (rowid, distance) in enumerate(dense, start=1):
        chunk_score[rowid] += settings.dense_weight / (settings.rrf_k + rank)
        cosine[rowid] = 1.0 - distance
    for rowid in chunk_score:
        if chunk_rows[rowid].kind == "references":
            chunk_score[rowid] *= REFERENCES_WEIGHT

    entry_score: dict[str, float] = defaultdict(float)
    best_content: dict[str, int] = {}
    for rowid, score in sorted(chunk_score.items(), key=lambda kv: -kv[1]):
        row = chunk_rows[rowid]
        entry_score[row.entry_id] = max(entry_score[row.entry_id], score)
        if row.kind != "references" and row.entry_id not in best_content:
            best_content[row.entry_id] = rowid
    lexical_rank = _entry_ranks(lexical, chunk_rows)
    dense_rank = _entry_ranks(dense, chunk_rows)
    entry_cosine: dict[str, float] = {}
    for rowid, c in cosine.items():
        eid = chunk_rows[rowid].entry_id
        entry_cosine[eid] = max(entry_cosine.get(eid, -1.0), c)

    if year is not None:
        stands = index.stand_years(list(entry_score))
        for eid, stand in stands.items():
            if stand == year:
                entry_score[eid] *= SAME_YEAR_BOOST
            elif stand > year:
                entry_score[eid] *= LATER_YEAR_DAMPING
    ranked = sorted(entry_score, key=lambda e: (-entry_score[e], e))[:k]
    entries = index.entries_by_id(ranked)
    sections = _sections_by_entry(index, ranked)
    hits = []
    for eid in ranked:
        row = chunk_rows[best_content[eid]] if eid in best_content else _fallback_section(sections[eid])
        hit = _hit(entries[eid], row, entry_score[eid], lexical_rank.get(eid), dense_rank.get(eid), entry_cosine.get(eid))
        hit.key_values = _key_values_text(sections[eid], row)
        hits.append(hit)
    return hits


def _entry_ranks(ranking, chunk_rows) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rowid, _ in ranking:
        eid = chunk_rows[rowid].entry_id
        if eid not in ranks:
            ranks[eid] = len(ranks) + 1
    return ranks


def _sections_by_entry(index, entry_ids) -> dict[str, list[ChunkRow]]:
    sections: dict[str, list[ChunkRow]] = defaultdict(list)
    for row in index.chunks_of_entries(entry_ids):
        sections[row.entry_id].append(row)
    return sections


def _fallback_section(rows: list[ChunkRow]) -> ChunkRow:
    """For an entry found only through its references or a cross_ref: the key values, else the first section."""
    return next((r for r in rows if r.kind == "key_values"), rows[0])


def _key_values_text(rows: list[ChunkRow], chosen: ChunkRow) -> str:
    """The entry's Kernwerte section when another section was chosen: questions on numbers need it."""
    if chosen.kind == "key_values":
        return ""
    return "\n\n".join(r.text for r in rows if r.kind == "key_values")


def _hit(entry, row: ChunkRow, score, lexical_rank, dense_rank, cosine, via="retrieval") -> Hit:
    return Hit(
        entry_id=entry.id, title=entry.title, stand=entry.stand, topic=entry.topic, source=entry.source,
        official=entry.official, section=row.section, chunk_id=row.chunk_id, chunk_hash=row.content_hash,
        text=row.text, header=row.header, score=score, cross_refs=entry.cross_refs,
        lexical_rank=lexical_rank, dense_rank=dense_rank, cosine=cosine, via=via,
    )


def _add_coverage(index, hits: list[Hit], terms: list[str]) -> None:
    """Share of the question's terms that occur in each hit's entry (a relevance signal
    that, unlike RRF, means the same on every index)."""
    if not hits or not terms:
        return
    words = index.folded_words_of_entries([h.entry_id for h in hits])
    roots = [stem(t) for t in terms]
    for hit in hits:
        text = " " + " ".join(words[hit.entry_id])  # " word word …": one C-level search per term
        found = sum(1 for r in roots if (r in text if len(r) >= MIN_INFIX_LENGTH else f" {r}" in text))
        hit.coverage = found / len(roots)


def _cross_ref_hits(index, hits: list[Hit], settings: Settings) -> list[Hit]:
    present = {h.entry_id for h in hits}
    wanted: list[str] = []
    for hit in hits[: settings.cross_ref_sources]:
        for ref in hit.cross_refs:
            if ref not in present and ref not in wanted:
                wanted.append(ref)
    wanted = wanted[: settings.cross_ref_expand]
    if not wanted:
        return []
    entries = index.entries_by_id(wanted)
    sections = _sections_by_entry(index, wanted)
    hits = []
    for eid in wanted:
        if eid in entries and sections.get(eid):
            row = _fallback_section(sections[eid])
            hit = _hit(entries[eid], row, 0.0, None, None, None, via="cross_ref")
            hit.key_values = _key_values_text(sections[eid], row)
            hits.append(hit)
    return hits


def _allowed_entries(index, entry_ids, topics, scopes) -> set[str]:
    entries = index.entries_by_id(entry_ids)
    return {
        eid for eid, e in entries.items()
        if (not topics or e.topic in topics) and (not scopes or e.source in scopes)
    }


def _ms(since: float) -> float:
    return round((time.monotonic() - since) * 1000, 3)

