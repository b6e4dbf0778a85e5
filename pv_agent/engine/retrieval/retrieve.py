"""Hybrid retrieval (design.md §3): BM25 over folded German text + dense KNN, fused by
Reciprocal Rank Fusion, one best content section per entry, ``cross_refs`` expansion.

User text is data, never query syntax: the question is reduced to folded word tokens
(``QueryTerm``), and the store quotes each one in its own query language, so ``§ 67``, quotes,
``AND``/``NEAR``, ``*``, ``^``, parentheses or emoji cannot change the query's meaning or break it.
"""
from __future__ import annotations

import bisect
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from operator import itemgetter

from ..config import Settings
from ..index.embedders import OllamaEmbedder, as_embedder, index_embedder_kind
from ..llm_clients import ModelClient
from ..ollama import OllamaError
from ..index.base import ChunkRow, EntryHead
from ..index.sqlite_store import SidecarIndex
from ..textnorm import fold, glossed, place_states, query_terms, stem, tokens
from ..types import Hit, QueryTerm, RetrievalResult

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
# An entry one of whose curated tags of two words or more ("Zuschlag zum DB") the
# question says word for word counts more: a phrase pins the topic that its single words,
# each common across the knowledge base, do not. Chosen on the goldset's calibration half.
TAG_PHRASE_BOOST = 1.2


# An in-place update (same file, same generation number) can commit between two of a
# retrieval's reads, which then see two states of the index: an entry ranked from the first
# is gone in the second (KeyError). Such a retrieval reads again on the new state.
READS_WHILE_CHANGING = 3


def retrieve(
    index: SidecarIndex,
    question: str,
    settings: Settings,
    *,
    embedder=None,
    embedder_notice: str = "",
    topics: list[str] | None = None,
    scopes: list[str] | None = None,
    k: int | None = None,
    year: int | None = None,
) -> RetrievalResult:
    """Entry-level hits for ``question``; ``year`` (see timeframe.asked_year) steers towards
    entries whose ``stand`` describes that year. ``embedder``: an Embedder (embedders.py,
    e.g. from ``query_embedder``), a model client (llm_clients), or None (lexical; ``embedder_notice`` says why).
    ``k`` ranked hits; cross-references come after them with ``via="cross_ref"``."""
    args = dict(embedder=embedder, embedder_notice=embedder_notice, topics=topics, scopes=scopes, k=k, year=year)
    for _ in range(READS_WHILE_CHANGING - 1):
        try:
            return _retrieve_once(index, question, settings, **args)
        except KeyError:
            if not index.refresh():  # the index did not change: a real error
                raise
    return _retrieve_once(index, question, settings, **args)


def _retrieve_once(index, question: str, settings: Settings, *, embedder, embedder_notice: str, topics, scopes,
                   k, year) -> RetrievalResult:
    started = time.monotonic()
    index.refresh()
    k = k or settings.top_k
    terms = query_terms(question or "")
    timings: dict = {}
    mode, notice = ("hybrid", "") if index.has_vectors else ("lexical", "Index ohne Vektoren – nur lexikalische Suche (BM25).")

    # a town's Bundesland is searched too; the signals below keep the question's own terms
    states = [t for state in place_states(question or "") for t in tokens(state) if t not in terms]
    lexical = _lexical_ranking(index, terms + states, settings.candidate_pool, topics, scopes)
    timings["lexical_ms"] = _ms(started)

    dense: list[tuple[int, float]] = []
    if mode == "hybrid" and question.strip():
        if embedder is None:
            mode, notice = "lexical", embedder_notice or "Kein Embedding-Modell angebunden – nur lexikalische Suche (BM25)."
        elif not _fits_index(embedder := _query_embedder(embedder, index, settings), index):
            mode, notice = "lexical", (f"Index-Vektoren von {index_embedder_kind(index)}:{index.embed_model}, Anfrage mit "
                                       f"{embedder.kind}:{embedder.model} – nur lexikalische Suche (BM25).")
        else:
            t = time.monotonic()
            try:
                vector = embedder.embed_query(glossed(question))  # abbreviations etc. spelled out
            except OllamaError as exc:
                mode, notice = "lexical", f"{exc.reason} – nur lexikalische Suche (BM25)."
            else:
                if len(vector) != index.dim:
                    mode, notice = "lexical", "Embedding-Dimension passt nicht zum Index – nur lexikalische Suche."
                else:
                    dense = index.dense_search(vector, settings.candidate_pool)
                    timings["embed_dense_ms"] = _ms(t)

    keys = index.chunk_keys([r for r, _ in lexical] + [r for r, _ in dense])
    if topics or scopes:  # the dense scan cannot pre-filter; drop what the filters exclude
        allowed = _allowed_entries(index, {eid for eid, _ in keys.values()}, topics, scopes)
        dense = [(r, d) for r, d in dense if keys[r][0] in allowed]
    fused = _fuse(index, keys, lexical, dense, settings, k, year, tuple(stem(t) for t in tokens(question or "")))
    hits = _hits(index, fused, terms, settings)
    unknown = unknown_terms(index, terms)
    timings["total_ms"] = _ms(started)
    return RetrievalResult(question=question, mode=mode, hits=hits, notice=notice, terms=tuple(terms),
                           timings_ms=timings, unknown_terms=unknown, unknown_share=_unknown_noun_share(question, unknown),
                           dense_z=dense_z(dense))


def dense_z(dense: list[tuple[int, float]]) -> float | None:
    """How far the best dense similarity stands above the candidate pool's: (best − mean) / sd.
    Raw cosines of one model crowd into a narrow band (e5: 0.82–0.93 for on- and off-topic
    questions alike); a question the knowledge base covers has a few chunks standing out."""
    if len(dense) < 10:
        return None
    sims = [1.0 - d for _, d in dense]
    sd = population_sd(sims)
    return (max(sims) - statistics.fmean(sims)) / sd if sd > 0 else None


def population_sd(values: list[float]) -> float:
    """``statistics.pstdev(values)`` — the float nearest to the square root of the exact
    population variance — computed on integers instead of Fractions (a third of the time).
    Every finite float is an integer over a power of two, so all are scaled to one power."""
    try:
        ratios = [v.as_integer_ratio() for v in values]
    except (OverflowError, ValueError):  # inf or nan: statistics says what that gives
        return statistics.pstdev(values)
    scale = max(d for _, d in ratios).bit_length() - 1
    ints = [n << (scale - d.bit_length() + 1) for n, d in ratios]
    count = len(ints)
    return _sqrt_of_fraction(count * sum(i * i for i in ints) - sum(ints) ** 2, count * count << 2 * scale)


_ROOT_BITS = 2 * sys.float_info.mant_dig + 3  # enough for one rounding to odd, then one to a float


def _sqrt_of_fraction(num: int, den: int) -> float:
    """The float nearest to sqrt(num / den), num >= 0, den > 0: an integer root of at least
    ``_ROOT_BITS`` bits with its last bit set when inexact (round to odd) is rounded correctly
    when converted to a float."""
    shift = (num.bit_length() - den.bit_length() - _ROOT_BITS) // 2
    if shift >= 0:
        den <<= 2 * shift
    else:
        num <<= -2 * shift
    root = math.isqrt(num // den)
    root |= root * root * den != num
    return root * 2.0 ** shift if shift >= 0 else root / (1 << -shift)


_WORD = re.compile(r"[^\W\d_][\w-]*")


def _unknown_noun_share(question: str, unknown: tuple[str, ...]) -> float:
    """Share of the question's nouns (capitalised words after the first, five letters or more)
    that the index does not contain: German capitalises nouns, and an unknown noun is a topic
    ("Lohnpfändung"), an unknown verb mostly just wording ("rauskommen")."""
    words = _WORD.findall(question or "")[1:]
    nouns = {t for w in words if w[:1].isupper() and not w.isupper() for t in tokens(w) if len(t) >= MIN_UNKNOWN_LENGTH}
    if not nouns:
        return 0.0
    return len(nouns & set(unknown)) / len(nouns)


# Shorter words are too often abbreviations or colloquial to say anything by being absent.
MIN_UNKNOWN_LENGTH = 5


def unknown_terms(index, terms: list[str]) -> tuple[str, ...]:
    """The question's significant words (five letters or more) that occur nowhere in the index,
    neither as a word's beginning nor inside a compound: "Lohnpfändung" in a knowledge base
    without it. A relevance signal for gates.supported, independent of any ranking."""
    candidates = [t for t in terms if len(t) >= MIN_UNKNOWN_LENGTH and not t.isdigit()]
    if not candidates:
        return ()
    vocab = _sorted_vocabulary(index)
    unknown = []
    for term in candidates:
        root = stem(term)
        at = bisect.bisect_left(vocab, root)
        if at < len(vocab) and vocab[at].startswith(root):
            continue
        if root in _joined_vocabulary(index):  # inside a word: the words are joined by "\n"
            continue
        unknown.append(term)
    return tuple(unknown)


def _joined_vocabulary(index) -> str:
    cached = getattr(index, "_pv_joined_vocab", None)
    if cached is None or cached[0] != index.generation:
        cached = (index.generation, "\n".join(_sorted_vocabulary(index)))
        index._pv_joined_vocab = cached
    return cached[1]


def _sorted_vocabulary(index) -> list[str]:
    cached = getattr(index, "_pv_sorted_vocab", None)
    if cached is None or cached[0] != index.generation:
        cached = (index.generation, sorted(t for t, _ in index.vocabulary()))
        index._pv_sorted_vocab = cached
    return cached[1]


def _query_embedder(embedder, index, settings):
    if isinstance(embedder, ModelClient):  # a bare client embeds with the index's model
        return OllamaEmbedder(embedder, settings, model=index.embed_model or settings.embed_model)
    return as_embedder(embedder, settings)


def _fits_index(embedder, index) -> bool:
    """Vectors of one embedder and model only: never a query vector from another model."""
    return embedder.kind == index_embedder_kind(index) and (not index.embed_model or embedder.model == index.embed_model)


# -- lexical ---------------------------------------------------------------------------
def lexical_terms(terms: list[str], compounds_containing=lambda root: ()) -> list[QueryTerm]:
    """Search terms for the question's words: stem prefixes (words of four letters and more;
    shorter ones such as UEL, SZ, DZ match exactly) plus the corpus words that contain a term
    inside a compound (``compounds_containing(root)``)."""
    out: list[QueryTerm] = []
    for term in terms:
        root = stem(term)
        out.append(QueryTerm(root, prefix=len(root) >= 4))
        if len(root) >= MIN_INFIX_LENGTH and not root.isdigit():
            out.extend(QueryTerm(t, group=root) for t in compounds_containing(root))
    return list(dict.fromkeys(out))


def _lexical_ranking(index, terms, limit, topics, scopes) -> list[tuple[int, float]]:
    if not terms:
        return []
    query = lexical_terms(terms, lambda root: index.terms_containing(root, MAX_INFIX_EXPANSIONS))
    return index.lexical_search(query, limit, topics, scopes)


# -- fusion ----------------------------------------------------------------------------
@dataclass
class _Fused:
    """The fused ranking: the k best entries, their scores and ranks, and the chunk each shows."""

    ranked: list[str]
    score: dict[str, float]
    best_content: dict[str, int]  # entry → its best non-"references" chunk, if it has one among the candidates
    lexical_rank: dict[str, int]
    dense_rank: dict[str, int]
    cosine: dict[str, float]


def _fuse(index, keys: dict[int, tuple[str, str]], lexical, dense, settings: Settings, k: int, year=None,
          question_stems: tuple[str, ...] = ()) -> _Fused:
    """Reciprocal Rank Fusion over chunks, then the best chunk per entry.

    ``keys`` maps each candidate chunk to (entry id, kind); no chunk text is read here.
    """
    chunk_score: dict[int, float] = defaultdict(float)
    for rank, (rowid, _) in enumerate(lexical, start=1):
        chunk_score[rowid] += 1.0 / (settings.rrf_k + rank)
    cosine: dict[int, float] = {}
    for rank, (rowid, distance) in enumerate(dense, start=1):
        chunk_score[rowid] += settings.dense_weight / (settings.rrf_k + rank)
        cosine[rowid] = 1.0 - distance
    for rowid in chunk_score:
        if keys[rowid][1] == "references":
            chunk_score[rowid] *= REFERENCES_WEIGHT

    entry_score: dict[str, float] = {}
    best_content: dict[str, int] = {}
    for rowid, score in sorted(chunk_score.items(), key=itemgetter(1), reverse=True):  # stable: ties in pool order
        eid, kind = keys[rowid]
        if eid not in entry_score:  # best first: an entry's first chunk has its highest score
            entry_score[eid] = max(0.0, score)
        if kind != "references" and eid not in best_content:
            best_content[eid] = rowid
    lexical_rank = _entry_ranks(lexical, keys)
    dense_rank = _entry_ranks(dense, keys)
    entry_cosine: dict[str, float] = {}
    for rowid, c in cosine.items():
        eid = keys[rowid][0]
        entry_cosine[eid] = max(entry_cosine.get(eid, -1.0), c)

    if TAG_PHRASE_BOOST != 1.0:
        for eid in _tag_phrase_entries(index, question_stems, entry_score):
            entry_score[eid] *= TAG_PHRASE_BOOST
    if year is not None:
        stands = index.stand_years(list(entry_score))
        for eid, stand in stands.items():
            if stand == year:
                entry_score[eid] *= SAME_YEAR_BOOST
            elif stand > year:
                entry_score[eid] *= LATER_YEAR_DAMPING
    ranked = sorted(entry_score, key=lambda e: (-entry_score[e], e))[:k]
    return _Fused(ranked, entry_score, best_content, lexical_rank, dense_rank, entry_cosine)


def _hits(index, fused: _Fused, terms: list[str], settings: Settings) -> list[Hit]:
    """The ranked hits (with their coverage), then the entries their cross_refs point to
    (``via="cross_ref"``), from one read of the chunks they show.

    Each ranked hit shows its best content chunk; an entry ranked only through its references,
    and every cross_ref, shows its first key-values chunk, else its first section. Beside any other
    section a hit carries the entry's key values ("Kernwerte & Fristen")."""
    ranked = fused.ranked
    heads = index.entry_heads(ranked)
    wanted = _cross_ref_targets([heads[eid] for eid in ranked], settings)
    wanted_heads = index.entry_heads(wanted)
    outline = index.chunk_outline(ranked + wanted)
    key_value_rows = {eid: [r for r, kind in chunks if kind == "key_values"] for eid, chunks in outline.items()}
    shown = {eid: fused.best_content[eid] for eid in ranked if eid in fused.best_content}
    for eid in ranked + wanted:
        if eid in shown:
            continue
        if key_value_rows.get(eid):
            shown[eid] = key_value_rows[eid][0]
        elif eid in outline:
            shown[eid] = outline[eid][0][0]
    rows = index.chunks_by_rowid([*shown.values(), *(r for eid in ranked + wanted for r in key_value_rows.get(eid, ()))])
    key_values = {eid: "\n\n".join(rows[r].text for r in found) for eid, found in key_value_rows.items() if found}

    hits = []
    for eid in ranked:
        row = rows[shown[eid]]
        hit = _hit(heads[eid], row, fused.score[eid], fused.lexical_rank.get(eid), fused.dense_rank.get(eid),
                   fused.cosine.get(eid))
        hit.key_values = "" if row.kind == "key_values" else key_values.get(eid, "")
        hits.append(hit)
    _add_coverage(hits, terms)
    for eid in wanted:
        if eid in wanted_heads and eid in shown:
            row = rows[shown[eid]]
            hit = _hit(wanted_heads[eid], row, 0.0, None, None, None, via="cross_ref")
            hit.key_values = "" if row.kind == "key_values" else key_values.get(eid, "")
            hits.append(hit)
    return hits


def _cross_ref_targets(heads, settings: Settings) -> list[str]:
    """The entries the first ``cross_ref_sources`` hits point to that are not hits themselves."""
    present = {h.id for h in heads}
    wanted: list[str] = []
    for head in heads[: settings.cross_ref_sources]:
        for ref in head.cross_refs:
            if ref not in present and ref not in wanted:
                wanted.append(ref)
    return wanted[: settings.cross_ref_expand]


def _tag_phrase_entries(index, question_stems: tuple[str, ...], candidates) -> list[str]:
    """The candidate entries with a tag of two words or more that occurs in the question as a
    contiguous run of words (compared by stem)."""
    if len(question_stems) < 2:
        return []
    phrases = _tag_phrases(index)
    if not phrases.entries:
        return []
    n = len(question_stems)
    runs = (" ".join(question_stems[i:j]) for i in range(n - 1) for j in range(i + 2, min(n, i + phrases.longest) + 1))
    marked = {eid for run in runs for eid in phrases.entries.get(run, ())}
    return [eid for eid in candidates if eid in marked]


@dataclass(frozen=True)
class _TagPhrases:
    """Every entry's multi-word tags as stem sequences ("zuschlag zum db"): the entries tagged
    with each, and the most words one has (the longest run of question words to look up)."""

    entries: dict[str, tuple[str, ...]]
    longest: int


def _tag_phrases(index) -> _TagPhrases:
    """The index's tag phrases, from one read of all entries' tags per index generation: read
    for the candidates of each question instead, they cost a query per question until every
    entry had been a candidate once."""
    cached = getattr(index, "_pv_tag_phrases", None)
    if cached is None or cached[0] != index.generation:
        tagged: dict[str, list[str]] = defaultdict(list)
        for eid, tags in index.entry_tags(None).items():
            # words separated by spaces: a hyphenated compound ("Homeoffice-Pauschale") or a
            # figure with its unit ("3 €", "100 Tage") is no phrase, it matches the single words
            multi = (tag for tag in tags if len(tag.split()) >= 2 and not any(c.isdigit() for c in tag))
            runs = (tuple(stem(t) for t in tokens(tag)) for tag in multi)
            for phrase in dict.fromkeys(" ".join(r) for r in runs if len(r) >= 2):
                tagged[phrase].append(eid)
        entries = {phrase: tuple(eids) for phrase, eids in tagged.items()}
        cached = (index.generation, _TagPhrases(entries, max((p.count(" ") + 1 for p in entries), default=0)))
        index._pv_tag_phrases = cached
    return cached[1]


def _entry_ranks(ranking, keys) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rowid, _ in ranking:
        eid = keys[rowid][0]
        if eid not in ranks:
            ranks[eid] = len(ranks) + 1
    return ranks


def _hit(entry: EntryHead, row: ChunkRow, score, lexical_rank, dense_rank, cosine, via="retrieval") -> Hit:
    return Hit(
        entry_id=entry.id, title=entry.title, stand=entry.stand, topic=entry.topic, source=entry.source,
        official=entry.official, section=row.section, chunk_id=row.chunk_id, chunk_hash=row.content_hash,
        text=row.text, header=row.header, score=score, cross_refs=entry.cross_refs,
        lexical_rank=lexical_rank, dense_rank=dense_rank, cosine=cosine, via=via,
        tags=entry.tags + entry.legal_bases,
    )


def _add_coverage(hits: list[Hit], terms: list[str]) -> None:
    """Share of the question's terms found in what a hit shows the model (title, tags, legal
    bases, the chosen section, its key values): a relevance signal that, unlike RRF, means
    the same on every index. A term counts when a word of that text contains it (five letters
    or more) or begins with it (shorter ones)."""
    if not hits or not terms:
        return
    roots = [stem(t) for t in terms]
    for hit in hits:
        # the folded text, not its tokens: a root holds only token letters, so it occurs in the
        # text exactly where it occurs in a token (one C-level search per term)
        text = fold(f"{hit.header} {' '.join(hit.tags)} {hit.block_text}")
        found = sum(1 for r in roots if (r in text if len(r) >= MIN_INFIX_LENGTH else _begins_a_word(text, r)))
        hit.coverage = found / len(roots)


def _begins_a_word(text: str, part: str) -> bool:
    """``part`` occurs in folded ``text`` at the start of a token (a run of ``[0-9a-z]``)."""
    at = text.find(part)
    while at > 0 and text[at - 1] in _TOKEN_CHARACTERS:
        at = text.find(part, at + 1)
    return at >= 0


_TOKEN_CHARACTERS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")  # textnorm's tokens


def _allowed_entries(index, entry_ids, topics, scopes) -> set[str]:
    entries = index.entry_heads(entry_ids)
    return {
        eid for eid, e in entries.items()
        if (not topics or e.topic in topics) and (not scopes or e.source in scopes)
    }


def _ms(since: float) -> float:
    return round((time.monotonic() - since) * 1000, 3)

