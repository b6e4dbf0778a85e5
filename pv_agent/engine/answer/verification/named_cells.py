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
  cell's year, period, share or side, nor call a value current the block calls outdated
  (roles.mismatch) – the figures the sentence writes beside it and its limit words are not
  read against the row: the name says which row it is. When the name covers cells of several
  values, the sentence's words choose among those cells only.

A bracket names only the figure written right before it (its Stand may stand between them):
"551,10 € monatlich bzw. 6.613,20 € jährlich [pv-gfb-02 · Geringfügigkeitsgrenze jährlich]"
names the yearly figure; the monthly one is read by its words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ... import figures as nb
from ...textnorm import fold
from . import alignment as al
from . import facts as fc
from . import roles as rl
from .fact_index import BlockFacts, FactIndex
from .support import cell_issue, is_compound, role_support
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
    """The bracket naming ``fig``'s cell (an amount, a count, a date – not a year): the first after
    it, with no other figure between them but years and dates (its Stand) – positions in the unit's
    text."""
    if fig.kind in ("year", "date") or not names:
        return None
    after = [n for n in names if n.start >= fig.end]
    if not after:
        return None
    name = after[0]
    if any(fig.end <= o.start < name.start and o.kind not in ("year", "date") for o in figs):
        return None
    return name


def named_facts(fig: nb.Figure, name: CellName, facts: tuple, aliases: dict[str, str]) -> list:
    """The facts of ``fig``'s class in the named entry whose labels hold every word and every
    figure of the name ("nach vollendetem 15. Dienstjahr", "40 % · 2026": a row named by its
    figure). A word no fact holds (the entry's title, "im Rechner-Code") names no cell and is
    passed over; a name with nothing left finds no fact ([])."""
    groups, years, values = _name_words(name.name)
    period, side, share = _dimensions(name.name)
    pool = [f for f in facts if f.where not in ("stand", "title")
            and nb._same_class(fig, fc.as_unit_of(f, fig).figure)
            and not (years and f.role.years and not years & f.role.years)
            and not (period and f.role.period and f.role.period != period)
            and not (side and f.role.side and f.role.side != side)
            and not (share and f.role.share and f.role.share != share)]
    abouts = [own_words(f, aliases) for f in pool]
    cell_groups = [g for g in groups if any(al._matched(g, a) for a in abouts)]
    if not cell_groups and not values and not years:
        return []
    named = [f for f, about in zip(pool, abouts) if all(al._matched(g, about) for g in cell_groups)
             and values <= _values_of(f) and (cell_groups or values or f.role.years)]
    if not named and values and cell_groups:
        # figures of the name no cell carries ("2. CO₂ ≤ Grenzwert …": a list number) are passed
        # over like words
        named = [f for f, about in zip(pool, abouts) if all(al._matched(g, about) for g in cell_groups)]
    # "[pv-sb-12 · 2025]": the cells of that year alone, where the block has some
    if years and any(f.role.years and f.role.years <= years for f in named):
        named = [f for f in named if f.role.years and f.role.years <= years]
    # the parts of the name the block writes word for word ("über 60 km", not "40 bis 60 km"),
    # a part that is the row's whole label first ("PAB", not "erhöhter PAB")
    verbatim = [_verbatim_parts(name.name, f) for f in named]
    if verbatim and max(verbatim) > 0:
        named = [f for f, n in zip(named, verbatim) if n == max(verbatim)]
    return named


def _verbatim_parts(name: str, fact) -> int:
    """How closely the fact's labels hold the name ("über 60 km · monatlich", "2026 · PAB,
    Jahresbetrag"): each part of the name (between "·") that is one of its labels – row label,
    column header, caption – counts 3, each piece (between "·" or ",") its row label or clause
    holds word for word 1 (case and spacing folded)."""
    text = " ".join(fold(f"{fact.label} | {fact.about}").split())
    labels = {" ".join(fold(c).strip(" *:").split()) for c in fact.label.split("|")}
    score = 0
    for part in name.split("·"):
        part = " ".join(fold(part).split())
        if part in labels:
            score += 3
        for piece in part.split(","):
            piece = piece.strip()
            if len(piece) >= 2 and re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", text):
                score += 1
    return score


def _values_of(fact) -> frozenset:
    """The values a fact's cell shows with it: its own, and those of its row (label cells
    included) or its clause."""
    return frozenset(f.value for f in (fact.figure, *fact.role.companions, *fact.row_mates)
                     if f.kind not in ("year", "date"))


@lru_cache(maxsize=4096)
def _dimensions(name: str) -> tuple:
    """The period, side and share a name states ("monatlich", "DN", "halb"), each or None."""
    return rl.dimension(rl.PERIODS, name), rl.dimension(rl._SIDES, name), rl.dimension(rl.SHARES, name)


def own_words(fact, aliases: dict[str, str]) -> frozenset:
    """What a fact is the value of, in its own words (row, column, caption, clause; no title),
    "Betrag" and "Wert" included: in a label they name the row."""
    return al._with_aliases(_label_words(fact.about) | _label_words(fact.label), aliases)


@lru_cache(maxsize=16384)
def _label_words(text: str) -> frozenset:
    return frozenset(form for group in al.groups(text, generic=True) for form in group)


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[frozenset, frozenset, frozenset]:
    """The name's words, its years and the values of its other figures."""
    figs = nb.extract(name)
    years = frozenset(f.value for f in figs if f.kind == "year")
    values = frozenset(f.value for f in figs if f.kind not in ("year", "date"))
    return al.groups(nb._without_figures(name, figs), generic=True), years, values


def name_years(name: CellName) -> frozenset:
    """The years a name states ("2025 · Salzburg")."""
    return _name_words(name.name)[1]


def name_values(name: CellName) -> frozenset:
    """The values of the figures a name holds (not its years)."""
    return _name_words(name.name)[2]


def describe_name(name: CellName) -> str:
    return re.sub(r"\s+", " ", name.name).strip(" ·:")


# -- checking a named figure --------------------------------------------------------------------
UNRESOLVED = ("unresolved",)  # the cell name finds no fact: the figure is read by its words
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ„\"(])")


def named_role(fig, clause: str, clause_figs: list, labels: str, label_figs: list, role: rl.Role,
               name: CellName) -> rl.Role:
    """What the sentence says of a figure whose cell it names: the year, period, share and side
    of its own sentence (or its answer table's row and column) – not what the rest of the unit
    says, nor the figures beside it or its limit words: the name says which row it is. A name
    calling the value outdated ("… 27.12.2025 (überholt)") says so of it."""
    start, end = _own_sentence(clause, fig)
    own_figs = [nb.shifted(f, -start) for f in clause_figs if start <= f.start and f.end <= end]
    own_fig = next(f for f in own_figs if f.start == fig.start - start)
    own = rl.role_of(own_fig, clause[start:end], own_figs, context=labels, context_figs=label_figs)
    # a name with a year ("[pv-dg-08 · 2025 · Salzburg]") says the year itself: the sentence's
    # years ("zum 1.1.2026 von 0,36 % auf …") are its context
    years = frozenset() if name_years(name) else own.years
    return rl.Role(years=years, period=own.period, share=own.share, side=own.side,
                   refuted=role.refuted or bool(rl.REFUTED_IN_ANSWER.search(name.name)))


def _own_sentence(clause: str, fig) -> tuple[int, int]:
    """The span of the sentence of ``clause`` that holds ``fig`` (an item may hold several)."""
    start, end = 0, len(clause)
    for m in _SENTENCE_BREAK.finditer(clause):
        if m.end() <= fig.start:
            start = m.end()
        elif m.start() >= fig.end:
            end = m.start()
            break
    return start, end


def check_named(fig, role: rl.Role, reading, name: CellName, facts: BlockFacts, *,
                record: list | None = None, at=None, sentence: str | None = None) -> tuple | None:
    """None when the named cell carries ``fig``'s value in a ``role`` (named_role) its sentence
    does not contradict; the issue otherwise; ``UNRESOLVED`` when the name finds no fact. A backed
    figure goes to ``record`` with the places of its facts (``at``: the figure in the unit)."""
    if name.entry_id not in facts.blocks:
        return UNRESOLVED
    block = facts[name.entry_id]
    if not any(nb.matches(fig, fc.as_unit_of(f, fig).figure) for f in block if f.where != "stand"):
        # the bracket says the figure stands in that entry, and it does not – whatever another
        # entry cited beside it holds ("8.085 € [pv-sv-05 · Betrag · 2026]" for pv-bg-06's value)
        return "not_in_block", f"[{name.entry_id}] nennt {fig.text} nicht"
    found = named_facts(fig, name, block, facts.aliases)
    issue = _named_issue(fig, role, reading, name, [fc.as_unit_of(f, fig) for f in found], facts)
    if issue is None and sentence is not None:  # (not in an answer table: its headers are the answer's words)
        issue = _words_name_another_row(fig, reading, name, found, block, facts.titles.get(name.entry_id, ""), sentence)
    if issue is None and record is not None:
        places = [i for i, f in enumerate(block) if f in found and nb.matches(fig, fc.as_unit_of(f, fig).figure)]
        record.append((name, at or fig, places, len({f.figure.value for f in found})))
    return issue


def _row_of(fact) -> tuple[str, str] | None:
    """(table, row label) of a table cell's fact."""
    parts = fact.label.split(" | ")
    return (parts[0], parts[1]) if fact.where == "table" and len(parts) >= 3 else None


def _words_name_another_row(fig, reading, name: CellName, found: list, block: tuple, title: str,
                            sentence: str) -> tuple | None:
    """The bracket names a row, the sentence's own words another row of the same table and none of
    the named one: "Friseurgewerbe: 25 € [pv-neu-03 · … Lehrling/Pflichtpraktikant · 2028]" – the
    model read the wrong row and copied its label. Only a word that names that one row counts: in
    no other row label of the table, not in the entry's title (the block's topic, "Überstunden"),
    and the figure's sentence must hold no word of the named row nor of the name as written; the
    other row's word stands in its clause, between the values before and after it."""
    rows = {_row_of(f) for f in found if nb.matches(fig, fc.as_unit_of(f, fig).figure)}
    if len(rows) != 1 or None in rows:
        return None
    (table, label), = rows
    named = _label_groups(label)
    # the figure's sentence and its unit ("15 Überstunden [… · Überstunden/Monat]")
    in_sentence = {w for g in al.groups(f"{sentence} {re.sub(r'[0-9.,%€]+', ' ', fig.text)}") for w in g}
    if any(in_sentence & g for g in named + _label_groups(name.name)):
        return None  # the sentence says something of the named row (or of the name it wrote) itself
    said = {w for g in reading.clause for w in g if len(w) >= 5 and not _WEAK.match(w)}
    holding = {_row_of(f) for f in block if nb.matches(fig, fc.as_unit_of(f, fig).figure)}
    others = list(dict.fromkeys(r for r in map(_row_of, block) if r and r[0] == table and r[1] != label))
    topic = {w for g in al.groups(title) for w in g}
    for other in others:
        if other in holding:
            continue  # "Niederösterreich und Vorarlberg mit je 0,33 %": that row holds it too
        rest = [_label_groups(o[1]) for o in others if o != other]
        own = [g for g in _label_groups(other[1]) if not any(g & n for n in named) and not g & topic
               and not any(g & r for gs in rest for r in gs)]
        if any(said & g for g in own):
            return "row", (f"[{name.entry_id}] nennt „{describe_name(name)}“; der Satz spricht von "
                           f"„{other[1].strip(' *')}“")
    return None


_WEAK = re.compile(r"weiter|ander|zusätz|sonstig|übrig|folgend|erst|zweit|dritt|gleich|jeweil")


@lru_cache(maxsize=4096)
def _label_groups(label: str) -> tuple:
    return tuple(g for g in al.groups(label) if any(len(w) >= 3 for w in g))


def _named_issue(fig, role: rl.Role, reading, name: CellName, named: list, facts: BlockFacts) -> tuple | None:
    """The verdict on ``fig`` against the facts its name found (``named``, as facts of its unit)."""
    if not named:
        return UNRESOLVED
    holding = [f for f in named if nb.matches(fig, f.figure)]
    if not holding and any(nb.same_value(fig, f) and not is_compound(f) for f in nb.extract(name.name)) and any(
            nb.matches(fig, fc.as_unit_of(f, fig).figure) and not is_compound(f.figure)
            for f in facts[name.entry_id]):
        # "innerhalb der letzten 25 Jahre [… · in den letzten 25 Jahren]": the name quotes it (a
        # name "Beispiel 40-Stunden-Woche" holds no value 40 Stunden)
        return None
    if not holding:
        values = list(dict.fromkeys(f.figure.text for f in named))
        shown = ", ".join(values[:3]) + (" …" if len(values) > 3 else "")
        return "cell", f"[{name.entry_id}] nennt für „{describe_name(name)}“ {shown}; {fig.text} steht dort nicht"
    if fig.value in name_values(name) and not role_support(fig, role, FactIndex(holding)):
        return None  # "41 % [pv-lst-06 · Steuersatz 41 % · im Rechner-Code]": the row the value names
    return cell_issue(fig, role, reading, FactIndex(named), facts)


def named_order_issues(named_backed: list) -> list[tuple]:
    """Figures of one unit naming the same cell of several values ("zwischen 24.616 € […] und
    31.494 € [… · Einschleifung 2026 · erhöhter PAB]") stand in the cell's order, each once: the
    (figure, detail) of each that does not."""
    by_name: dict = {}
    for name, fig, places, values in named_backed:
        if values > 1 and places:
            by_name.setdefault((name.entry_id, describe_name(name)), []).append((fig.start, fig, places))
    out = []
    for (entry_id, described), figs in by_name.items():
        figs.sort(key=lambda t: t[0])
        last, previous = -1, None
        for _, fig, places in figs:  # each figure at a place of its value after the one before
            later = [p for p in places if p > last]
            if not later:
                out.append((fig, f"[{entry_id}] nennt für „{described}“ {previous.text} und {fig.text} "
                                 f"in anderer Reihenfolge oder nur einmal"))
                break
            last, previous = min(later), fig
    return out
