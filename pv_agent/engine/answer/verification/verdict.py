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

from ..context import Context, ContextBlock
from . import facts as fc
from . import numbers as nb
from .claims import ClaimCheck, Similarity, _claim_support, _is_claim
from .conflicts import ConflictGroup, _check_conflict_sides, find_conflicts
from .given import _given, _question_figures
from .units import _CITATION, Unit, citations_in, split_units

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
        from .. import prompts
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
        all_figs = nb.extract(text)
        unit_figs = [f for f in all_figs if nb.is_answer_figure(f)]
        if _is_claim(u, text, unit_figs):
            claim_units.append(u)
        if not unit_figs:
            continue
        figure_units.add(id(u))
        unit_cites = _heading_citations(u, units) if u.kind == "heading" else u.citations
        cited_facts = _FactIndex.of(tuple(unit_cites), facts, fact_indexes)
        answer_facts = _FactIndex.of(tuple(cited), facts, fact_indexes)
        sentence_period = fc._dimension(fc._PERIODS, nb._without_figures(text, unit_figs))
        sentence_share = fc._dimension(fc._SHARES, nb._without_figures(text, unit_figs))
        surcharge = bool(fc._SURCHARGE.search(text))  # "Zuschlag" named in the sentence
        refuted = bool(fc._REFUTED.search(text))
        years_before = frozenset()  # years carry within a sentence, never into the next one
        for offset, clause in nb.segments(text):
            clause_figs = [nb.shifted(f, -offset) for f in all_figs if offset <= f.start < offset + len(clause)]
            clause_years = nb._years(clause_figs, clause)
            years_before = clause_years or years_before
            for fig in clause_figs:
                if fig.kind == "number" and not nb.is_answer_figure(fig):
                    continue
                if _given(fig, clause, clause_figs, question_figures):
                    given.append(fig.text)
                    continue
                checked += 1
                role = fc.role_of(fig, clause, clause_figs, fallback_years=years_before)
                role = fc.Role(
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
                found = [i for i, fs in facts.all() if any(nb.matches(fig, f.figure) for f in fs)]
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



class _BlockFacts(dict):
    """Facts per block id, parsed when first needed (most answers cite two or three of the
    blocks) and cached by block content: the regeneration and later questions reuse them."""

    def __init__(self, blocks: dict[str, ContextBlock]):
        super().__init__()
        self.blocks = blocks

    def __missing__(self, entry_id: str):
        b = self.blocks.get(entry_id)
        facts = () if b is None else fc.facts_of_block(entry_id, b.text, b.title, b.stand)
        self[entry_id] = facts
        return facts

    def get(self, entry_id, default=()):
        return self[entry_id] if entry_id in self.blocks else default

    def all(self):
        return [(i, self[i]) for i in self.blocks]





def _paired_elsewhere(fig: nb.Figure, role: fc.Role, cited_facts: _FactIndex) -> bool:
    """The other direction of a row: the answer pairs ``fig`` with a companion (620 € with 6 %),
    and every row of the cited blocks holding that companion pairs it with a different figure
    of ``fig``'s class (620 € with 0 %)."""
    if fig.kind in ("year", "date", "number"):
        return False
    for comp in role.companions:
        if comp.kind in ("year", "date", "number"):
            continue
        rows = [f for f in cited_facts.candidates(comp) if nb.matches(comp, f.figure)
                and not (role.years and f.role.years and not role.years & f.role.years)
                and any(nb._same_class(c, fig) for c in f.role.companions)]
        if rows and not any(any(nb.same_value(fig, c) for c in f.role.companions) for f in rows):
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

    def __init__(self, facts: list[fc.Fact]):
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

    def candidates(self, fig: nb.Figure) -> list[fc.Fact]:
        return self.by_key.get(_key(fig), [])


def _key(fig: nb.Figure):
    if fig.kind == "date":
        return ("date", fig.value[1])
    if fig.kind == "year":
        return ("year", fig.value)
    return ("value", fig.value)


def _support(fig: nb.Figure, role: fc.Role, cited_facts: _FactIndex) -> str:
    """"" when a fact of the cited blocks backs ``fig`` in ``role``, else the reason why not."""
    if fig.kind == "year":  # a year is backed by any fact about that year in a cited block
        return "" if fig.value in cited_facts.years else "not_in_block"
    reasons = []
    for fact in cited_facts.candidates(fig):
        if not nb.matches(fig, fact.figure):
            continue
        if fig.kind == "date":
            if fig.value[0] is None and fact.figure.value[0] is None and role.years and fact.role.years \
                    and not role.years & fact.role.years:
                reasons.append("year")
                continue
            return ""
        why = fc.mismatch(role, fact.role)
        if not why:
            return ""
        reasons.append(why)
    return reasons[0] if reasons else "not_in_block"


