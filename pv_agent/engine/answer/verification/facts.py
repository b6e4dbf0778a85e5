"""Facts of a context block: every figure in its row, column and year (its *role*, roles.py),
parsed with the engine's one markdown parse and cached per table row and per paragraph/list item.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ...kb import markdown as md
from ...textnorm import STOPWORDS, fold
from ...figures import Figure, _years, _without_figures, extract, in_clause, segments, shifted
from .roles import PARAGRAPH_BOUND, REFUTED, Role, role_of


@dataclass(frozen=True)
class Fact:
    """One figure of a context block in its row, column and year."""

    entry_id: str
    figure: Figure
    role: Role
    where: str  # "table" | "item" | "prose" | "stand" | "title"
    label: str  # the row / list label or sentence it came from, for the report
    about: str = ""  # what the figure is the value of: row label, caption, column header; the clause
    mates: tuple = ()  # the other figures of its table cell or sentence (beyond its clause)
    row_mates: tuple = ()  # a table cell: the figures of the other value cells of its row


def block_facts(entry_id: str, text: str, *, title: str = "", stand: str = "") -> list[Fact]:
    """Every figure of a block's text as a fact in its row, column and year. Tables: a cell
    with its row label (first cell), column header and the table's caption; list items and
    prose: per sentence, per clause, with "Label:" prefixes kept as context."""
    facts: list[Fact] = []
    if stand:
        y, _, m = stand.partition("-")
        if y.isdigit() and m.isdigit():
            fig = Figure(f"Stand {stand}", "date", (int(y), int(m), None))
            facts.append(Fact(entry_id, fig, Role(years=frozenset({int(y)})), "stand", "Stand"))
    for node in md.parse(text):
        if node.kind == "table":
            header = tuple(node.header)
            facts += _table_header_facts(entry_id, title, header)
            rows = [(tuple(r), list(_table_row_facts(entry_id, title, header, tuple(r)))) for r in node.rows]
            for i in range(1, len(rows)):
                _above(rows[i - 1], rows[i])
            facts += [f for _, row_facts in rows for f in row_facts]
        elif node.kind in ("item", "paragraph", "heading"):
            facts += _text_facts(entry_id, title, node.kind, node.text)
    if title and _DIGIT_IN.search(title):
        # the block's head line shows its title to the model too: "Teilpension ab 1.1.2026 – …"
        # (a figure only the title holds is backed by it; it competes with no cell of the block)
        facts += [replace(f, where="title") for f in _text_facts(entry_id, title, "heading", title)]
    return facts


_DIGIT_IN = re.compile(r"\d")
_UP_TO = re.compile(r"^\s*bis\b", re.I)
_ABOVE = re.compile(r"^\s*(?:darüber|über\b|mehr als\b)", re.I)


def _above(previous: tuple, current: tuple) -> None:
    """"| 2 % | bis 2.630 € |" then "| 2,95 % | darüber |": the second row holds what lies above
    2.630 €. Its facts get that upper limit as a lower one (``floors``; the first row's facts keep
    it as their ``caps``), and the limit stands in the second row as a fact of its own, a lower
    limit (``floor``): "2,95 % über 2.630 €" is that row, "2 % über 2.630 €" none."""
    (prev_row, prev_facts), (row, row_facts) = previous, current
    limits = []
    for ci in range(min(len(prev_row), len(row))):
        before, here = md.plain(prev_row[ci]), md.plain(row[ci])
        if _UP_TO.match(before) and (_ABOVE.match(here) or _UP_TO.match(here)):
            figs = [f for f in extract(before) if f.kind not in ("year", "date", "number")]
            if len(figs) == 1:
                limits += [f for f in prev_facts if f.figure.text == figs[0].text][:1]
    if not limits:
        return
    bounds = tuple(f.figure for f in limits)
    prev_facts[:] = [replace(f, role=replace(f.role, caps=bounds)) for f in prev_facts]
    values = tuple(f.figure for f in row_facts if f.figure.kind not in ("year", "date", "number"))
    label = row_facts[0].label if row_facts else ""
    row_facts[:] = [replace(f, role=replace(f.role, floors=bounds)) for f in row_facts] + [
        Fact(entry_id=lim.entry_id, figure=lim.figure, where="table", label=label, about=f"{label} über",
             role=replace(lim.role, companions=values, floor=True, bound=True, caps=())) for lim in limits]


# Facts per table row and per paragraph/list item, cached by their content (bounded, per
# process): a block is an entry's section plus its key values, so the blocks of one entry
# shown for different questions share most of their rows and items, and a cut block shares
# all but its last rows. Only the rows and items never seen before are parsed.
_NODE_CACHE = 16384


@lru_cache(maxsize=_NODE_CACHE)
def _table_header(entry_id: str, title: str, header: tuple) -> tuple[list[str], list[list[Figure]]]:
    cells = [md.plain(c) for c in header]
    return cells, [extract(c) for c in cells]


@lru_cache(maxsize=_NODE_CACHE)
def _table_header_facts(entry_id: str, title: str, header: tuple) -> tuple[Fact, ...]:
    cells, header_figs = _table_header(entry_id, title, header)
    caption = cells[0] if cells else ""
    caption_figs = header_figs[0] if header_figs else []
    facts: list[Fact] = []
    for ci, cell in enumerate(cells):  # a header cell's own figures ("in den letzten 25 Jahren")
        if header_figs[ci]:
            context, context_figs = (caption, caption_figs) if ci else ("", [])
            facts += _segment_facts(entry_id, cell, header_figs[ci], context, context_figs,
                                    frozenset(), title, "table", cell)
    return tuple(facts)


_SAME_AS = re.compile(r"(?:gleich|unverändert|dito|wie (?:im )?vorjahr|keine abweichenden|keine änderung)\b")


@lru_cache(maxsize=_NODE_CACHE)
def _table_row_facts(entry_id: str, title: str, header: tuple, row: tuple) -> tuple[Fact, ...]:
    cells, header_figs = _table_header(entry_id, title, header)
    caption = cells[0] if cells else ""
    caption_figs = header_figs[0] if header_figs else []
    row = [md.plain(c) for c in row]
    row_figs = [extract(c) for c in row]
    facts: list[Fact] = []
    same_cols = [cj for cj in range(1, min(len(row), len(cells)))
                 if not row_figs[cj] and _SAME_AS.match(row[cj].strip().lower())]
    for ci, cell in enumerate(row):
        if not row_figs[ci]:
            continue
        col = cells[ci] if ci < len(cells) else ""
        col_figs = header_figs[ci] if ci < len(header_figs) else []
        # a value cell sits in its row (label cell) and column; the label cell pairs with the
        # row's values
        if ci:
            parts, figs = [caption, row[0], col], [caption_figs, row_figs[0], col_figs]
        else:
            parts, figs = [*row[1:], col], [*row_figs[1:], col_figs]
        context, context_figs = _join(parts, figs)
        cell_years = _years(row_figs[ci], cell) | _years(context_figs, context)
        cell_facts = _segment_facts(entry_id, cell, row_figs[ci], context, context_figs, cell_years,
                                    title, "table", f"{context} | {cell}")
        if ci:
            others = tuple(g for cj in range(1, len(row)) if cj != ci for g in row_figs[cj]
                           if g.kind not in ("year", "date"))
            cell_facts = [replace(f, row_mates=others) for f in cell_facts] if others else cell_facts
            # "| 2.615 € | gleich |", "| … 6 % … | keine abweichenden Sätze |": the other year's
            # column says this cell's values hold for its year too
            same_years = _years([g for cj in same_cols for g in header_figs[cj]],
                                " ".join(cells[cj] for cj in same_cols)) if same_cols else frozenset()
            if same_years:
                cell_facts = [replace(f, role=replace(f.role, years=f.role.years | same_years))
                              if f.role.years else f for f in cell_facts]
        facts += cell_facts
    return tuple(facts)


@lru_cache(maxsize=_NODE_CACHE)
def _text_facts(entry_id: str, title: str, kind: str, text: str) -> tuple[Fact, ...]:
    """Facts of a paragraph, list item or heading: per sentence, per clause, with "Label:"
    prefixes kept as context."""
    where = "item" if kind == "item" else "prose"
    facts: list[Fact] = []
    paragraph_bound = bool(PARAGRAPH_BOUND.search(text))
    for sentence in md.sentences(md.plain(_CITATION_BRACKETS.sub(" ", text))):
        label, sep, rest = sentence.partition(": ")
        sentence_figs = extract(sentence)
        if not sep or len(label) > 60 or any(f.start < len(label) for f in sentence_figs):
            label, rest = "", sentence
        shift = len(sentence) - len(rest)
        rest_figs = [shifted(f, -shift) for f in sentence_figs if f.start >= shift]
        refuted = bool(REFUTED.search(sentence))
        for fact in _segment_facts(entry_id, rest, rest_figs, label, [], _years(sentence_figs, sentence),
                                   title, where, sentence):
            if refuted and not fact.role.refuted:
                fact = replace(fact, role=replace(fact.role, refuted=True))
            if paragraph_bound and not fact.role.bound:
                fact = replace(fact, role=replace(fact.role, bound=True))
            facts.append(fact)
    return tuple(facts)


def clear_fact_caches() -> None:
    """Empty the per-row/per-item fact caches (benchmarks of the cold case)."""
    for cache in (_table_header, _table_header_facts, _table_row_facts, _text_facts):
        cache.cache_clear()


_CITATION_BRACKETS = re.compile(r"\[[^\]\n]*\]")


def _join(parts: list[str], figs: list[list[Figure]]) -> tuple[str, list[Figure]]:
    """Texts joined with " | ", their figures moved to the joined offsets."""
    text, out, pos = [], [], 0
    for part, part_figs in zip(parts, figs):
        if not part:
            continue
        if text:
            pos += 3
        out += [shifted(f, pos) for f in part_figs]
        text.append(part)
        pos += len(part)
    return " | ".join(text), out


def _segment_facts(entry_id, text, figs, context, context_figs, fallback_years, title, where, label) -> list[Fact]:
    """Facts of the figures of ``text`` (a cell or a sentence), clause by clause."""
    out = []
    carried = frozenset()  # "2025 noch 18 Überstunden und 200 €": a clause's year carries to the next
    previous = ""
    for off, seg in segments(text, asides=True):
        seg_figs = [shifted(f, -off) for f in figs if in_clause(f, off, seg)]
        carried = _years(seg_figs, seg) or carried
        for f in seg_figs:
            role = role_of(f, seg, seg_figs, context=context, context_figs=context_figs,
                           fallback_years=carried or fallback_years, block=True, title=title)
            mates = tuple(g for g in figs if g.start != f.start + off and g.kind not in ("year", "date"))
            out.append(Fact(entry_id, f, role, where, label, _about(where, context, seg, seg_figs, previous), mates))
        previous = _without_figures(seg, seg_figs)
    return out


_WORDY = re.compile(r"[A-Za-zÄÖÜäöüß]{2,}")


def _about(where: str, context: str, clause: str, clause_figs: list[Figure], previous: str) -> str:
    """The words that say what a figure is the value of: a table cell's row label, caption and
    column header with the cell's own words; a sentence's "Label:" and the figure's clause, with
    the clause before it when its own has fewer than two words ("… höchstens 12 Stunden pro Tag
    und 60 Stunden pro Woche betragen", "die HBGL (6.450 € → 6.930 € monatlich)")."""
    own = _without_figures(clause, clause_figs)
    if where != "table" and len([w for w in _WORDY.findall(own) if fold(w) not in STOPWORDS]) < 2:
        own = f"{previous} {own}"
    return f"{context} {own}".strip()


@lru_cache(maxsize=1024)
def facts_of_block(entry_id: str, text: str, title: str, stand: str) -> tuple[Fact, ...]:
    return tuple(_periods_carried(block_facts(entry_id, text, title=title, stand=stand)))


def _periods_carried(facts: list[Fact]) -> list[Fact]:
    """"14,53 € monatlich" in the text and "| Parkplatz … | 14,53 € |" in the table are one value:
    where every mention of a value in an entry that names a period names the same one, the
    mentions without a period are of that period too; where they name several, a mention
    without one is of one of those."""
    periods: dict = {}
    for f in facts:
        if f.role.period and f.figure.kind not in ("year", "date", "number"):
            periods.setdefault((f.figure.kind, f.figure.value), set()).add(f.role.period)
    out = []
    for f in facts:
        known = periods.get((f.figure.kind, f.figure.value))
        if not f.role.period and known:
            f = replace(f, role=replace(f.role, period=next(iter(known))) if len(known) == 1
                        else replace(f.role, periods_elsewhere=frozenset(known)))
        out.append(f)
    return out


def as_unit_of(fact: Fact, fig: Figure) -> Fact:
    """A bare number of a table whose row or column names the figure's unit ("Überstunden/Monat
    | 18 | 15 | 10", "Satz in %") competes as a figure of that unit."""
    if fact.figure.kind != "number" or fig.kind == "number" or fact.where != "table":
        return fact
    about = fact.about.lower()
    if fig.kind == "money" and ("€" in about or "eur" in about) or fig.kind == "percent" and "%" in about \
            or fig.kind.startswith("count:") and fig.kind[6:11] in about:
        return replace(fact, figure=replace(fact.figure, kind=fig.kind))
    return fact
