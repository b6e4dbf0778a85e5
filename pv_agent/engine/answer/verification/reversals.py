"""Two figures of one sentence the wrong way round ("mindestens 75 % und höchstens 25 %",
"496 € → 487 €"), and a figure called outdated that is not the one the blocks call outdated."""
from __future__ import annotations

import re

from ... import figures as nb
from . import roles as rl
from .fact_index import FactIndex


_AT_LEAST = re.compile(r"\b(?:mindestens|wenigstens|zumindest)\s*$", re.I)
_AT_MOST = re.compile(r"\b(?:höchstens|maximal|max\.)\s*$", re.I)


def bounds_reversed(text: str, figs: list[nb.Figure]):
    """"eine Reduktion um mindestens 75 % und höchstens 25 %": a lower bound above the upper
    bound of the same quantity is two figures swapped, whatever the block says."""
    values = [f for f in figs if f.kind not in ("year", "date")]
    for a, b in zip(values, values[1:]):
        if nb._same_class(a, b) and _AT_LEAST.search(text[max(0, a.start - 14):a.start]) \
                and _AT_MOST.search(text[max(a.end, b.start - 10):b.start]) \
                and not re.search(r"[.;:]", text[a.end:b.start]) and a.value > b.value:
            yield a, b


_ARROW = re.compile(r"\s*(?:→|->|⇒)\s*")


def arrows_reversed(text: str, figs: list[nb.Figure], cited_facts: FactIndex):
    """"Verkehrsabsetzbetrag: 487 € → 496 €" reads old → new: where both values stand in one
    row of a cited table under two years, the earlier year's value must be on the left. Yields
    (left, right, detail) for each arrow that has them the other way round."""
    values = [f for f in figs if f.kind not in ("year", "date", "number")]
    for a, b in zip(values, values[1:]):
        if not nb._same_class(a, b) or not _ARROW.fullmatch(text[a.end:b.start]):
            continue
        pairs = [(fa, fb) for fa in cited_facts.candidates(a) for fb in cited_facts.candidates(b)
                 if fa.entry_id == fb.entry_id and fa.where == fb.where == "table"
                 and nb.matches(a, fa.figure) and nb.matches(b, fb.figure) and fa.role.years and fb.role.years
                 and any(nb.same_value(fb.figure, m) for m in fa.row_mates)]
        if not pairs or any(max(fa.role.years) < min(fb.role.years) for fa, fb in pairs):
            continue
        fa, fb = pairs[0]
        if max(fb.role.years) < min(fa.role.years):
            yield a, b, (f"[{fa.entry_id}] nennt {fb.figure.text} für {min(fb.role.years)} und "
                         f"{fa.figure.text} für {min(fa.role.years)} – der Pfeil steht verkehrt")


# The answer says outright that a source's figure is outdated or wrong ("eine überholte Quelle
# nannte 10 Überstunden"): where the cited blocks name which figures of that kind are outdated, it
# must be one of them.
CALLED_OUTDATED = re.compile(rl.REFUTED.pattern + r"|\bnannten?\b", re.I)


def not_the_outdated_one(fig: nb.Figure, cited_facts: FactIndex) -> tuple[str, str] | None:
    # only where a table sets the sides apart ("| 2026 (Novelle) | 2026 laut … (überholt) |"): a
    # sentence of prose calls a figure outdated in words the marks do not always catch
    if not any(nb.same_value(fig, f.figure) and f.where == "table" and not f.role.refuted
               for f in cited_facts.candidates(fig)):
        return None
    outdated = [f for f in cited_facts.facts if f.role.refuted and nb._same_class(f.figure, fig)
                and f.figure.kind not in ("year", "date")]
    if not outdated or any(nb.same_value(fig, f.figure) for f in outdated):
        return None
    named = ", ".join(dict.fromkeys(f.figure.text for f in outdated[:4]))
    return "refuted", f"[{outdated[0].entry_id}] nennt als überholt {named}, nicht {fig.text}"
