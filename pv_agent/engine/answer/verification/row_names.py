"""Figures that name a row, a bracket or a cell rather than state a value of their own: a counted
name ("5-Tage-Woche"), a rate naming a bracket ("die 48-%-Stufe"), a count in the label of a row
a bracket names ("nach 25 Jahren … [pv-abf-03 · nach 25 Jahren · Monatsentgelte]"), a bare number
right before a bracket naming the cell it quotes ("mehr als 20 [… · Betrieb mit mehr als 20
Arbeitnehmern]")."""
from __future__ import annotations

import re

from . import named_cells as nc
from .fact_index import BlockFacts
from .support import is_compound
from ... import figures as nb

def counted_name(fig: nb.Figure) -> bool:
    return fig.kind.startswith("count:") and is_compound(fig)


def named_row(fig: nb.Figure, all_figs: list, names: list, facts: BlockFacts, text: str) -> tuple | None:
    """(the named cell, whether its name carries ``fig``) for a count that names a row of the named
    entry ("über 60 km", "nach 25 Jahren"): the row named next after it (or, at the sentence's end,
    the last before it) with a figure of its kind – None where there is none, or the entry holds no
    row of ``fig``'s value (then it is read as a value). Another row is told only where nothing
    else can be meant: the bracket in the figure's clause, the figure no value of its own (no
    Stand after it, no range: "12 bis 32 Stunden"). Asked only of a figure without a named cell of
    its own (one with it claims that cell's value)."""
    if not fig.kind.startswith("count:") or is_compound(fig):
        return None

    def counts(n):  # the name's counts of fig's kind ("Beispiel 40-Stunden-Woche" names no 40 Stunden)
        return [f for f in nb.extract(n.name) if nb._same_class(f, fig) and not is_compound(f)]

    labelled = [n for n in names if counts(n)]
    after = [n for n in labelled if n.start >= fig.end]
    before = [n for n in labelled if n.start < fig.start]
    row = after[0] if after else before[-1] if before else None
    if row is None or not any(nb.matches(fig, f.figure) for f in facts.get(row.entry_id, ())):
        return None
    if any(nb.same_value(f, fig) for f in counts(row)):
        return row, True
    lo, hi = (fig.end, row.start) if row.start >= fig.end else (row.start, fig.start)
    if re.search(r"[:;]", text[lo:hi]) or _VALUE_AFTER.match(text[fig.end:]) or any(
            lo <= f.start < hi and nb._same_class(f, fig) for f in all_figs):
        return None  # (a Stand: a value; another count between: the row is that one's)
    return row, False


# after a count: a range ("12 bis 32 Stunden") or its Stand ("17 Jahre (884 Wochen) (Stand …)"): a value
_VALUE_AFTER = re.compile(r"\s*(?:bis\b|[–-]|(?:\([^()]*\)\s*)?\(Stand)")


def rate_name(fig: nb.Figure) -> bool:
    """"die 48-%-Stufe", "der 30-%-Zeile": a rate naming a bracket or a row, not a value said of
    the sentence's subject – it needs the rate in a cited entry, not the row the sentence is about."""
    return fig.kind == "percent" and is_compound(fig)


def named_number(text: str, fig: nb.Figure, figs: list, names: list | None, facts: BlockFacts) -> bool:
    """A bare number right before a citation naming a cell the block shows claims that cell's
    value ("`1567` [… · 15 Stunden 40 Minuten pro Woche · Eintrag im Datenfeld]", "mehr als 20 [… ·
    Betrieb mit mehr als 20 Arbeitnehmern]") – not one in a fraction or a reference ("1/12",
    "BGBl. II 417/2024"), nor a list number ("4. **Respirofrist:** … drei [… · Respirofrist]")."""
    name = nc.named_cell(fig, figs, names) if names else None
    if name is None or name.entry_id not in facts.blocks or "/" in text[max(0, fig.start - 1):fig.end + 1]:
        return False
    if not _RIGHT_BEFORE.match(text[fig.end:name.start]):
        return False
    return bool(nc.named_facts(fig, name, facts[name.entry_id], facts.aliases))


# between a figure and its citation: its unit, a closing code mark, its Stand
_RIGHT_BEFORE = re.compile(r"^`?\s*(?:[^\s\d\[\]()`]+\s*)?(?:\(Stand [^()\[\]]*\)\s*)?$")
