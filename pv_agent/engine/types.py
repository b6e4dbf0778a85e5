"""Plain data passed between the engine's stages: load → chunk → index → retrieve → generate → verify."""
from __future__ import annotations

from dataclasses import dataclass, field

SOURCE_FAMILIES = ("briefing", "gesetz", "kv", "rechtsprechung", "wiku")

# Fixed H2 layout of a briefing entry (design.md §1).
SECTION_SUMMARY = "Zusammenfassung"
SECTION_KEY_VALUES = "Kernwerte & Fristen"
SECTION_LEGAL = "Rechtsgrundlagen"
SECTION_PAYROLL = "Payroll-Relevanz (Odoo)"
SECTION_REFERENCES = "Verweise"
BRIEFING_SECTIONS = (SECTION_SUMMARY, SECTION_KEY_VALUES, SECTION_LEGAL, SECTION_PAYROLL, SECTION_REFERENCES)


@dataclass(frozen=True)
class Entry:
    """One knowledge-base entry: frontmatter fields plus the markdown body."""

    id: str
    title: str
    stand: str  # YYYY-MM: the legal state the entry describes
    topic: str
    source: str
    body: str
    official: bool = True
    tags: tuple[str, ...] = ()
    legal_bases: tuple[str, ...] = ()
    cross_refs: tuple[str, ...] = ()
    source_ref: str = ""
    path: str = ""  # file it came from, relative to the knowledge-base folder
    content_hash: str = ""  # of frontmatter + body as loaded

    def metadata(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "stand": self.stand,
            "topic": self.topic,
            "source": self.source,
            "official": self.official,
            "tags": list(self.tags),
            "legal_bases": list(self.legal_bases),
            "cross_refs": list(self.cross_refs),
            "source_ref": self.source_ref,
        }


@dataclass(frozen=True)
class LoadIssue:
    """A problem with one file, reported as ``file:line: message``."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass
class LoadResult:
    entries: list[Entry]
    errors: list[LoadIssue] = field(default_factory=list)

    @property
    def clusters(self) -> list[str]:
        return sorted({e.topic for e in self.entries})


@dataclass(frozen=True)
class Chunk:
    """One retrieval unit: an H2 section (or a paragraph-bounded part of a long one)."""

    chunk_id: str  # "<entry id>#<ordinal>"
    entry_id: str
    ordinal: int
    section: str  # H2 heading without "## "
    kind: str  # "content" | "key_values" | "references"
    header: str  # metadata line shown to the model and indexed with the text
    text: str  # the section's markdown (without header)
    content_hash: str  # sha256 of header + text: the embedding cache key

    @property
    def embed_text(self) -> str:
        return f"{self.header}\n{self.text}"


@dataclass(frozen=True)
class QueryTerm:
    """One folded search term for the lexical index: matched as a word prefix or exactly.

    Retrieval decides the terms; each store turns them into its own query language
    (FTS5 for the sidecar), so user text never reaches a query parser.
    """

    text: str  # folded, only [0-9a-z]
    prefix: bool = False
    # Terms with the same non-empty group score as one term (one IDF over the chunks holding
    # any of them, their frequencies summed): the compounds one word was expanded to.
    group: str = ""


@dataclass
class Hit:
    """One entry found for a question, represented by its best content section."""

    entry_id: str
    title: str
    stand: str
    topic: str
    source: str
    official: bool
    section: str
    chunk_id: str
    chunk_hash: str
    text: str  # the chosen section's markdown
    header: str
    score: float  # fused score (RRF); 0 for cross_ref expansions
    key_values: str = ""  # the entry's "Kernwerte & Fristen" when ``text`` is another section
    cross_refs: tuple[str, ...] = ()
    lexical_rank: int | None = None  # 1-based entry rank in BM25, None if not found there
    dense_rank: int | None = None
    cosine: float | None = None  # best dense similarity of the entry's chunks
    coverage: float = 0.0  # share of the question's significant terms found in the entry
    via: str = "retrieval"  # "retrieval" | "cross_ref"
    tags: tuple[str, ...] = ()  # the entry's tags and legal bases (abbreviations a question may use)

    @property
    def block_text(self) -> str:
        """What the model sees of this entry: the chosen section plus its key values."""
        if not self.key_values:
            return self.text
        return f"{self.text}\n\n### Kernwerte & Fristen\n{self.key_values}"

    def as_dict(self) -> dict:
        return {
            "id": self.entry_id,
            "title": self.title,
            "topic": self.topic,
            "stand": self.stand,
            "source": self.source,
            "section": self.section,
            "score": round(self.score, 6),
            "via": self.via,
        }


@dataclass
class RetrievalResult:
    question: str
    mode: str  # "hybrid" | "lexical"
    hits: list[Hit]
    notice: str = ""  # why the mode is lexical, if it is
    terms: tuple[str, ...] = ()  # significant folded query terms
    timings_ms: dict = field(default_factory=dict)
    unknown_terms: tuple[str, ...] = ()  # significant terms the index contains nowhere (gates.supported)
    unknown_share: float = 0.0  # share of the question's nouns (capitalised, 5+ letters) that are unknown
    dense_z: float | None = None  # best dense similarity in standard deviations above the candidate pool's mean
    topic_coverage: float | None = None  # idf-weighted share of the question's terms in a best entry (gates)
    cosine_model: str = ""  # "<embedder>:<model>" whose similarities the hits' cosines are (hybrid; gates)

    @property
    def ids(self) -> list[str]:
        return [h.entry_id for h in self.hits]

    def as_dict(self) -> dict:
        """``hits``: the ranked hits (``--k`` of them); ``cross_refs``: entries they point to, unranked."""
        out = {
            "mode": self.mode,
            "hits": [h.as_dict() for h in self.hits if h.via != "cross_ref"],
            "cross_refs": [h.as_dict() for h in self.hits if h.via == "cross_ref"],
        }
        if self.notice:
            out["notice"] = self.notice
        return out
