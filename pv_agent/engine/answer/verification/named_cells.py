"""Figures whose cell the answer names: "551,10 € (Stand 2026-01) [pv-gfb-02 · Geringfügigkeitsgrenze
monatlich · 2026]".

The system prompt (v3, rule 4) asks the model to write after every figure of a block where it
stands there – the row label and column header, word for word – in the figure's citation. The
verifier then compares the named cell instead of guessing which cell the sentence's words mean
(alignment.py): the cell is looked up among the cited block's facts of the figure's class, as the
facts whose labels hold every word of the name (compounds and abbreviations as in the alignment)
and whose years hold the name's years.

- The name finds no fact (the model paraphrased the label, or named a whole block): the figure
  is read as any other, by its sentence's words.
- The named facts do not carry the figure's value: the wrong cell – "[pv-gfb-02] nennt für
  „Geringfügigkeitsgrenze monatlich 2026“ 551,10 €; 826,65 € steht dort nicht".
- They carry it: the figure is that cell's value; its sentence must still not contradict the
  cell's role (year, period, side, bound: roles.mismatch), and when the name covers cells of
  several values, the sentence's words choose among those cells only.

A bracket names, of each class of figures (amounts, percentages, counts of one unit), only the
last one written before it: "551,10 € monatlich bzw. 6.613,20 € jährlich [pv-gfb-02 ·
Geringfügigkeitsgrenze jährlich]" names the yearly figure; the monthly one is read by its words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ... import figures as nb
from . import alignment as al
from . import facts as fc
from .units import cited_cells


@dataclass(frozen=True)
class CellName:
    """A citation naming a cell: where it stands in the unit's text, the entry and the name."""

    start: int
    entry_id: str
    name: str


def cell_names(text: str) -> list[CellName]:
    return [CellName(start, entry_id, name) for start, entry_id, name in cited_cells(text)]


def named_cell(fig: nb.Figure, figs: list[nb.Figure], names: list[CellName]) -> CellName | None:
    """The bracket naming ``fig``'s cell: the first after it, with no figure of its class between
    them (positions in the unit's text)."""
    if fig.kind in ("year", "date") or not names:
        return None
    after = [n for n in names if n.start >= fig.end]
    if not after:
        return None
    name = after[0]
    if any(fig.end <= o.start < name.start and nb._same_class(o, fig) for o in figs):
        return None
    return name


def named_facts(fig: nb.Figure, name: CellName, facts: tuple, title: str, aliases: dict[str, str]) -> list:
    """The facts of ``fig``'s class in the named entry whose labels hold every word of the name.
    A word only the entry's title holds names the entry, not a cell, and is passed over; a word
    neither a fact nor the title holds makes the name unknown ([])."""
    groups, years = _name_words(name.name)
    pool = [f for f in facts if f.where not in ("stand", "title")
            and nb._same_class(fig, fc.as_unit_of(f, fig).figure)
            and not (years and f.role.years and not years & f.role.years)]
    abouts = [own_words(f, aliases) for f in pool]
    title_words = al.words(title)
    cell_groups = []
    for g in groups:
        if any(al._matched(g, a) for a in abouts):
            cell_groups.append(g)
        elif not al._matched(g, title_words):
            return []
    if not cell_groups and not years:
        return []
    return [f for f, about in zip(pool, abouts) if all(al._matched(g, about) for g in cell_groups)
            and (cell_groups or f.role.years)]


def own_words(fact, aliases: dict[str, str]) -> frozenset:
    """What a fact is the value of, in its own words (row, column, caption, clause; no title)."""
    return al._with_aliases(al.words(fact.about) | al.words(fact.label), aliases)


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[frozenset, frozenset]:
    figs = nb.extract(name)
    years = frozenset(f.value for f in figs if f.kind == "year")
    return al.groups(nb._without_figures(name, figs)), years


def describe_name(name: CellName) -> str:
    return re.sub(r"\s+", " ", name.name).strip(" ·:")
