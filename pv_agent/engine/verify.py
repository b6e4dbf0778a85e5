"""Checks of a generated answer against the context blocks it was given (design.md §5).

1. Every cited id is one of the blocks' ids (and exists in the index).
2. Every figure of the answer occurs in a block that the same sentence cites.
3. Where the blocks disagree (entries marked with ⚠ and linked by cross_refs, or the same
   quantity with different values), an answer that cites only one side fails.

Returns plain data; the caller decides between regeneration, ``uncertain`` and ``refused``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from . import figures as fg
from .context import Context, ContextBlock
from .textnorm import STOPWORDS, tokens

_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_CITATION = re.compile(rf"\[\s*(?:⚠\s*)?({_ID}(?:\s*[,;]\s*(?:⚠\s*)?{_ID})*)\s*\](?!\()")
_LEADING_CITATIONS = re.compile(rf"(?:\[\s*(?:⚠\s*)?{_ID}(?:\s*[,;]\s*(?:⚠\s*)?{_ID})*\s*\][\s.,;]*)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_ABBREVIATIONS = frozenset(
    "z b bzw abs nr lit ca inkl exkl max mind gem lt vgl ziff s z art usw etc u a d h ggf idr ivm isd "
    "std mio tsd bzgl dr mag ua dh zb iSd jew".split()
)
# Sentences that state a gap or ask back are not claims that need a source.
_NO_CLAIM = re.compile(r"keine Aussage|nicht belegt", re.IGNORECASE)


@dataclass
class Unit:
    """A sentence, list item or table row of the answer, with its citations."""

    start: int
    end: int
    text: str
    citations: list[str]
    kind: str  # prose | item | row | heading


@dataclass
class CitationCheck:
    id: str
    retrieved: bool
    exists: bool
    supported: bool


@dataclass
class FigureIssue:
    figure: str
    sentence: str
    cited: list[str]
    found_in: list[str]  # blocks that do hold the figure

    def as_dict(self) -> dict:
        return {"figure": self.figure, "sentence": self.sentence, "cited": self.cited, "found_in": self.found_in}


@dataclass
class ConflictGroup:
    ids: list[str]
    reason: str  # "marked" (⚠ + cross_refs) | "values" (same quantity, different values)
    cited: list[str] = field(default_factory=list)

    @property
    def one_sided(self) -> bool:
        """Only one side cited (a group of three sides may be answered with any two)."""
        return len(self.cited) == 1

    def as_dict(self) -> dict:
        return {"ids": self.ids, "reason": self.reason, "cited": self.cited, "one_sided": self.one_sided}


@dataclass
class Verification:
    citations: list[CitationCheck]
    unknown_citations: list[str]
    unsupported_figures: list[FigureIssue]
    conflicts: list[ConflictGroup]
    missing_citations: bool  # a substantive answer without a single citation

    @property
    def ok(self) -> bool:
        return not (
            self.unknown_citations
            or self.unsupported_figures
            or self.missing_citations
            or any(c.one_sided for c in self.conflicts)
        )

    @property
    def valid_citations(self) -> list[str]:
        return [c.id for c in self.citations if c.retrieved and c.exists]

    def flags(self) -> dict:
        return {
            "unknown_citations": list(self.unknown_citations),
            "unsupported_figures": [i.as_dict() for i in self.unsupported_figures],
            "conflicts": [c.as_dict() for c in self.conflicts],
            "missing_citations": self.missing_citations,
        }


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
    lines = answer.splitlines(keepends=True)
    for i, line in enumerate(lines + [""]):
        stripped = line.strip()
        kind = _line_kind(stripped)
        if kind != "prose" and prose_start is not None:
            units.extend(_sentences(answer, prose_start, offset))
            prose_start = None
        if kind == "prose" and prose_start is None:
            prose_start = offset
        elif kind in ("item", "row", "heading"):
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
        before = re.search(r"(\S+)$", text[: m.start()])
        word = before.group(1).lower().strip("(„\"") if before else ""
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


def _inherit(units: list[Unit], answer: str) -> None:
    intro: list[str] = []
    table: list[Unit] = []
    for u in units + [Unit(0, 0, "", [], "end")]:
        if u.kind == "row":
            table.append(u)
            continue
        if table:  # a table ended: the header row takes the citations of all rows
            rows = [c for r in table for c in r.citations]
            for r in table:
                if not r.citations:
                    r.citations = list(dict.fromkeys(intro or rows))
            table = []
        if u.kind == "item":
            if not u.citations:
                u.citations = list(intro)
            continue
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
    for b in blocks:
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
    year = block.stand[:4]
    for line in block.text.splitlines():
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
        yield (label, tuple(years), block.topic, block.stand), frozenset((f.kind, f.value) for f in figs)


# -- the check ----------------------------------------------------------------------------
def verify(answer: str, context: Context, *, exists: Callable[[str], bool] | None = None) -> Verification:
    blocks = {b.entry_id: b for b in context.blocks}
    figure_sets = {i: fg.FigureSet.of(b.render()) for i, b in blocks.items()}
    units = split_units(answer)

    cited: list[str] = []
    for u in units:
        cited += [c for c in u.citations if c not in cited]
    for c in citations_in(answer):
        if c not in cited:
            cited.append(c)

    issues: list[FigureIssue] = []
    failing_ids: set[str] = set()
    for u in units:
        if u.kind == "heading" or u.text.rstrip().endswith("?") or _NO_CLAIM.search(u.text):
            continue
        support = fg.FigureSet()
        for c in u.citations:
            if c in figure_sets:
                support.merge(figure_sets[c])
        for fig in fg.extract(u.text):
            if not fg.is_answer_figure(fig) or support.supports(fig):
                continue
            found = [i for i, fs in figure_sets.items() if fs.supports(fig)]
            issues.append(FigureIssue(fig.text, u.text.strip(), list(u.citations), found))
            failing_ids.update(u.citations)

    checks: list[CitationCheck] = []
    unknown: list[str] = []
    for c in cited:
        retrieved = c in blocks
        known = retrieved if exists is None else exists(c)
        if not (retrieved and known):
            unknown.append(c)
        checks.append(CitationCheck(c, retrieved, known, retrieved and known and c not in failing_ids))

    conflicts = find_conflicts(context.blocks)
    for g in conflicts:
        g.cited = [i for i in g.ids if i in cited]

    substantive = any(
        u.kind != "heading" and not u.text.rstrip().endswith("?") and not _NO_CLAIM.search(u.text) for u in units
    )
    return Verification(
        citations=checks,
        unknown_citations=unknown,
        unsupported_figures=issues,
        conflicts=conflicts,
        missing_citations=substantive and not cited,
    )


def mark_unsupported(answer: str, result: Verification, *, figure_mark: str, citation_mark: str) -> str:
    """The answer with each unsupported figure and unknown citation visibly marked.

    ``figure_mark`` / ``citation_mark`` are templates with ``{figure}`` / ``{id}``.
    """
    out = answer
    by_sentence: dict[str, list[str]] = {}
    for issue in result.unsupported_figures:
        by_sentence.setdefault(issue.sentence, []).append(issue.figure)
    for sentence, figs in by_sentence.items():
        marked = sentence
        for fig in dict.fromkeys(figs):
            marked = re.sub(
                rf"(?<![\d.,]){re.escape(fig)}(?![\d])", lambda _m, f=fig: figure_mark.format(figure=f), marked, count=1
            )
        out = out.replace(sentence, marked, 1)
    for cid in result.unknown_citations:
        out = re.sub(rf"\[\s*{re.escape(cid)}\s*\]", citation_mark.format(id=cid), out)
    return out
