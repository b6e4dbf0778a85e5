"""The verdict on an answer (docs/verification.md).

1. Every cited id is one of the blocks' ids (and exists in the index).
2. Every figure of every sentence (headings, questions and gap sentences included; only the
   exact refusal sentence is exempt) is backed by a *fact* of a block the same sentence cites:
   the fact the sentence is about (alignment.py) carries that value and unit, in a row, column
   and year consistent with the sentence (facts.mismatch). Figures the clerk wrote in the
   question are given, not claims (given.py).
3. Where the blocks disagree, an answer that states one side must state each side it names
   with its citation and ⚠ (conflicts.py).
4. Every claim sentence gets a support state (claims.py); an answer whose substantive claims are
   mostly unsupported does not pass.

Returns plain data; the caller decides between regeneration, ``uncertain`` and ``refused``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import re

from ..context import Context
from . import alignment as al
from ... import figures as nb
from .backing import REASONS, FigureIssue, Surroundings, check_unit, table_cells
from .fact_index import BlockFacts
from .claims import _GAP, GAP_WIDE, ClaimCheck, Similarity, _claim_support, _is_claim
from .conflicts import ConflictGroup, _check_conflict_sides, find_conflicts
from .given import _question_figures
from .named_cells import cell_names
from .units import _CITATION, Unit, citations_in, split_units

__all__ = ["REASONS", "CitationCheck", "FigureIssue", "Verification", "verify"]


@dataclass
class CitationCheck:
    id: str
    retrieved: bool
    exists: bool
    supported: bool



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
            or any(c.state == "contradicted" for c in self.claims)
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
            "claims_contradicted": states.count("contradicted"),
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



# -- the check ----------------------------------------------------------------------------
# A question to the clerk ("Rückfrage: …?") or a sentence saying what the blocks do not cover
# asserts no value of its own: its figures may come from any block the answer cites.
_ASKS_OR_GAP = re.compile(r"\?\s*$|^\W*Rückfrage\b", re.IGNORECASE)


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
    facts = BlockFacts(blocks)
    question_figures = _question_figures(question)
    question_words = al.groups(question)
    units = split_units(answer)
    if refusal is None:
        from .. import prompts
        refusal = prompts.REFUSAL
    refusal_key = " ".join(refusal.split()).rstrip(".")

    cited: list[str] = []
    for u in units:
        cited += [c for c in u.citations if c not in cited]
    for c in citations_in(answer):
        if c not in cited:
            cited.append(c)

    issues: list = []  # (unit number, FigureIssue)
    given: list[str] = []
    checked = 0
    failing_ids: set[str] = set()
    claim_units: list[Unit] = []
    unbacked_units: set[int] = set()
    figure_units: set[int] = set()
    surroundings = _surroundings(units, question_words, nb._years(nb.extract(question), question))
    backed: dict[int, list] = {}  # per unit: its figures that are backed
    # headings last: a heading restating a figure its section backs needs nothing more
    order = sorted(range(len(units)), key=lambda i: units[i].kind == "heading")
    for n in order:
        u, around = units[n], surroundings[n]
        text = _CITATION.sub(lambda m: " " * len(m.group(0)), u.text)
        if " ".join(text.split()).strip(" .") == refusal_key:
            continue
        unit_figs = [f for f in nb.extract(text) if nb.is_answer_figure(f)]
        if _is_claim(u, text, unit_figs) and not (
                surroundings[n].header_row and all(f.kind in ("year", "date") for f in unit_figs)):
            # (a table's header row names its columns – "| Position | steuerfrei 2024 |": it states nothing)
            claim_units.append(u)
        if not unit_figs:
            continue
        figure_units.add(id(u))
        unit_cites = _heading_citations(u, units) if u.kind == "heading" else u.citations
        if not unit_cites and u.kind == "prose" and text.rstrip().endswith(":"):
            unit_cites = _lead_in_citations(u, units)  # "Warum mehr als 1.000 € anfallen:" heads a list
        if not unit_cites and (_ASKS_OR_GAP.search(text) or _GAP.search(text)):
            unit_cites = cited
        restated = _restated(n, units, backed, question_figures, unit_figs) if _bare(u, text, unit_figs) else None
        result = check_unit(u.kind, text, list(unit_cites), cited, facts, question_figures, around,
                            gap=bool(_GAP.search(text)), gap_years=bool(GAP_WIDE.search(text)),
                            asks=bool(_ASKS_OR_GAP.search(text)) and not _GAP.search(text),
                            restated=restated, restated_in=u.lead_of, names=cell_names(u.text))
        failed = {i.figure for i in result.issues}
        near_question = {(f.start, f.text) for f in result.beside_question}
        backed[n] = [(f, (f.start, f.text) in near_question) for f in unit_figs if f.text not in failed]
        checked += result.checked
        given += result.given
        for issue in result.issues:
            issue.sentence = u.text.strip()
            issues.append((n, issue))
            failing_ids.update(unit_cites)
            unbacked_units.add(id(u))

    issues = [issue for _, issue in sorted(issues, key=lambda p: p[0])]  # in the answer's order
    claim_units.sort(key=units.index)
    checks: list[CitationCheck] = []
    unknown: list[str] = []
    for c in cited:
        retrieved = c in blocks
        known = retrieved if exists is None else exists(c)
        if not (retrieved and known):
            unknown.append(c)
        checks.append(CitationCheck(c, retrieved, known, retrieved and known and c not in failing_ids))

    conflicts = find_conflicts(context.blocks)
    refused = bool(units) and " ".join(_CITATION.sub(" ", units[0].text).split()).strip(" .") == refusal_key
    _check_conflict_sides(conflicts, units, blocks, refused=refused)

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


def _surroundings(units: list[Unit], question_words: frozenset, question_years: frozenset) -> list[Surroundings]:
    """Per unit: the words of the heading and lead-in above it and, for a table row, the
    table's header row (the first row of the table)."""
    out = []
    heading, lead, header = "", "", []
    years = frozenset()  # the years named last above (reset by a heading naming its own)
    previous = None
    for u in units:
        text = _CITATION.sub(" ", u.text)
        named = nb._years(nb.extract(text), text)
        if u.kind == "heading":
            heading, lead, years = text, "", named
        starts_table = u.kind == "row" and (previous is None or previous.kind != "row")
        if starts_table:
            header = table_cells(text)
        above = f"{heading} {lead} {_CITATION.sub(' ', u.continues)}"
        out.append(Surroundings(around=al.groups(nb._without_figures(above, nb.extract(above))),
                                question=question_words, years=years or question_years,
                                header_cells=header if u.kind == "row" else [], header_row=starts_table))
        if u.kind == "prose":
            lead = text if text.rstrip().endswith(":") else ""
        if named and u.kind != "heading":
            years = named
        previous = u
    return out


def _lead_in_citations(lead: Unit, units: list[Unit]) -> list[str]:
    """A lead-in line ending in ":" without citations of its own is backed by the items under it."""
    out: list[str] = []
    for u in units[units.index(lead) + 1 :]:
        if u.kind not in ("item", "row"):
            break
        out += [c for c in u.citations if c not in out]
    return out


def _bare(u: Unit, text: str, figs: list) -> bool:
    """A heading that names little more than its figures ("**27 %.**", "**1,5 % (max. 720 € pro
    Monat).**"): it restates what its section says, and says of them nothing to check."""
    if u.kind != "heading" or any(f.kind in ("year", "date") for f in figs):
        return False
    return len(al.groups(nb._without_figures(text, nb.extract(text)))) <= 2


def _restated(n: int, units: list[Unit], backed: dict, question_figures, heading_figs) -> list:
    """The backed figures of the section under heading ``n`` a bare heading may restate. When
    the question gave figures, the heading answers it: it restates a figure written next to one
    of them ("**27 %.**" … "nächste 25.000 € 27 %" for "der Teil über 25.000"), or one the
    question itself names ("1,5 oder 2 %?"), or one standing in a sentence with such a figure
    that the heading restates too ("**1,5 % (max. 720 €).**" … "1,5 %, höchstens 720 €")."""
    per_unit = [backed.get(i, ()) for i in _section(n, units)]
    asked = [q.figure for q in question_figures if q.figure.kind not in ("year", "date")]
    if not asked:
        return [f for figs in per_unit for f, _ in figs]

    def answers(f, near):
        return near or any(f.value == q.value for q in asked)

    out = []
    for figs in per_unit:
        anchors = [f for f, near in figs if answers(f, near) and any(nb.matches(h, f) for h in heading_figs)]
        out += [f for f, near in figs if answers(f, near) or anchors]
    return out


def _section(n: int, units: list[Unit]) -> list[int]:
    """The units under the heading ``units[n]``, up to the next heading."""
    out = []
    for i in range(n + 1, len(units)):
        if units[i].kind == "heading":
            break
        out.append(i)
    return out


def _heading_citations(heading: Unit, units: list[Unit]) -> list[str]:
    """A heading's figures may be backed by the entries cited in the section below it."""
    out: list[str] = list(heading.citations)
    after = units[units.index(heading) + 1 :]
    for u in after:
        if u.kind == "heading":
            break
        out += [c for c in u.citations if c not in out]
    return out
