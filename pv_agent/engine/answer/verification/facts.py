"""Facts of a context block: every figure in its row, column and year (its *role*), parsed
with the engine's one markdown parse and cached per table row and per paragraph/list item.
``mismatch`` says why a fact with the right value still does not back a figure in a role.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ...kb import markdown as md
from ...textnorm import STOPWORDS, fold
from ...figures import (Figure, _same_class, _years, _without_figures, extract, in_clause, same_value,
                      segments, shifted)

# -- facts ------------------------------------------------------------------------------------
# Words that tell rows of one table apart. A dimension compares like with like: a sentence saying
# "monatlich" is not backed by the "täglich" row.
_PERIODS = re.compile(
    r"(?P<daily>\btäglich\w*|\btage(?:s)?(?:wert|satz|betrag|höchst\w*)|\b(?:pro|je|am) tag\b|/tag\b|\(tag\)|^tag\b"
    r"|\b(?:pro|je) (?:\w+(?:em|en) )?(?:arbeits|kalender|telearbeits|werk)tag\b)"  # "je ausschließlichem Telearbeitstag"
    r"|(?P<monthly>\bmonatlich\w*|\bmonats(?:wert|betrag|-)|\b(?:pro|je|im) (?:kalender)?monat\b|/monat\b|\(monat\)|^monat\b)"
    r"|(?P<weekly>\bwöchentlich\w*|\b(?:pro|je|in der) woche\b|/woche\b)"
    r"|(?P<yearly>\bjährlich\w*|\bjahres(?:betrag|wert|-)|\b(?:pro|je) (?:kalender)?jahr\b|/jahr\b|\(jahr\)"
    # "400 € im Jahr", not "im Jahr 2025" (nor "im Jahr   waren" where the year was blanked out)
    r"|\bim (?:kalender)?jahr\b(?![\s\d]*\d{4})(?!\s{2}))",
    re.I,
)
_SHARES = re.compile(r"(?P<full>\bvoll(?:e[nmrs]?)?\b)|(?P<half>\bhalb(?:e[nmrs]?)?\b)", re.I)
_SURCHARGE = re.compile(r"zuschl[aä]g", re.I)
# Who pays: the employee's and the employer's share and their sum are columns of their own
# ("KV | DN 3,87 % | DG 3,78 % | gesamt 7,65 %").
_SIDES = re.compile(r"(?P<employee>\bDN\b|\bDN-|[Dd]ienstnehmer\w*)|(?P<employer>\bDG\b|\bDG-|[Dd]ienstgeber\w*)"
                    r"|(?P<total>\b[Gg]esamt\b)")
# Before a figure in a sentence: the figure is a limit, not the amount itself.
_BOUND_IN_ANSWER = re.compile(
    r"\b(?:höchstens|maximal|bis(?: zu)?|unter|über|ab|mindestens|mehr als|weniger als|nicht mehr als|oberhalb|unterhalb)\b"
    r"|\b(?:max|mind|min)\.",
    re.I,
)
_BOUND_IN_BLOCK = re.compile(
    r"\b(?:höchst\w*|maximal\w*|bis|unter|über|ab|mindest\w*|mehr als|weniger als|\w*grenze\w*|deckel\w*|oberhalb|unterhalb)\b"
    r"|\b(?:max|mind|min)\."
    r"|nicht überschreit|nicht übersteig", re.I,
)
# "Der Satz ist ein Höchstbetrag": a paragraph that calls its figures limits
_PARAGRAPH_BOUND = re.compile(r"\b(?:ist|sind|gilt|gelten) (?:als )?(?:ein|eine|der|die)?\s*(?:Höchst\w*|Obergrenze\w*|Grenze\w*)",
                              re.I)
# A block sentence that calls its own figure wrong does not back that figure.
_REFUTED = re.compile(r"\b(?:falsch\w*|veraltet\w*|überholt\w*|irrtümlich\w*|fehlerhaft\w*)", re.I)


def _dimension(pattern: re.Pattern, text: str) -> str | None:
    """The one value of a dimension the text names (daily/monthly/yearly, full/half), or None
    when it names none or several."""
    found = {m.lastgroup for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None




@dataclass(frozen=True)
class Role:
    """Where a figure stands: the other figures of its clause (its row), the years it is about,
    and the words that tell rows apart."""

    companions: tuple = ()  # other figures of the clause / table row
    years: frozenset = frozenset()
    period: str | None = None  # daily | weekly | monthly | yearly
    share: str | None = None  # full | half
    side: str | None = None  # employee | employer | total (DN / DG / gesamt)
    surcharge: bool | None = None  # "Zuschlag" in the label (None: only the entry title says so)
    bound: bool = False  # written as a limit (höchstens, bis, über, Grenze …)
    refuted: bool = False  # the block calls the figure wrong or outdated
    # a figure without a period of its own: the periods its value has elsewhere in the entry
    periods_elsewhere: frozenset = frozenset()


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


def role_of(fig: Figure, clause: str, clause_figs: list[Figure], *, context: str = "", context_figs=(),
            fallback_years=frozenset(), block: bool = False, title: str = "") -> Role:
    """The role of ``fig`` (found in ``clause``) given its clause, the row/column labels around it
    (``context``) and the years of the enclosing sentence (``fallback_years``)."""
    others = tuple(f for f in clause_figs if f is not fig) + tuple(context_figs)
    years = _years([f for f in others], clause) | _years(list(context_figs), context)
    if not years:
        years = frozenset(fallback_years)
    local, around = _marks(_without_figures(clause, clause_figs)), _marks(context)
    previous_end = max([f.end for f in clause_figs if f.end <= fig.start], default=0)
    before = clause[previous_end : fig.start]
    named_surcharge = local.surcharge or around.surcharge
    if block:
        bound = bool(_BOUND_IN_BLOCK.search(before)) or around.bound or _marks(title).bound
        surcharge = True if named_surcharge else (None if _marks(title).surcharge else False)
    else:
        bound = governs_bound(before)
        surcharge = named_surcharge
    return Role(
        companions=tuple(f for f in others if f.kind not in ("year",)),
        years=years,
        period=_only(local.periods | around.periods),
        share=_only(local.shares | around.shares),
        side=_only(local.sides | around.sides),
        surcharge=surcharge,
        bound=bound,
        refuted=local.refuted or around.refuted,
    )


_VERBS = frozenset("beträgt betragen ist sind war waren liegt liegen gilt gelten gibt fällt fallen steht stehen "
                   "bleibt wird werden zahlt zahlen".split())


def governs_bound(before: str) -> bool:
    """A limit word of the answer makes the figure after it a limit only when it governs the
    figure: "höchstens 1.095 €", "bis zu einem Betrag von 120 €" – not "Ab Beitragsbeginn
    beträgt der Satz 1,53 %" or "nur bis zur HBGL für Sonderzahlungen von 12.900 €"."""
    tail = " ".join(before.split()[-5:])
    last = None
    for last in _BOUND_IN_ANSWER.finditer(tail):
        pass
    if last is None:
        return False
    if last.group(0).lower() == "bis" and re.search(r"\d\s*$", tail[:last.start()]):
        return False  # "von 2 bis 12 Monatsentgelten", "20 bis 40 km": a range, not a limit
    between = tail[last.end():].split()
    return (len(between) <= 3 and not any(w.lower() in _VERBS for w in between)
            and sum(1 for w in between if w[:1].isupper()) <= 1)


@dataclass(frozen=True)
class _Marks:
    periods: frozenset
    shares: frozenset
    sides: frozenset
    surcharge: bool
    bound: bool  # limit words as a block writes them
    refuted: bool


@lru_cache(maxsize=8192)
def _marks(text: str) -> _Marks:
    """The row words of a text, once per text (labels and headers repeat across cells)."""
    low = text.lower()  # every period word holds one of these, every share word "voll" or "halb"
    has_period = "tag" in low or "tägl" in low or "monat" in low or "jahr" in low or "jährl" in low or "woch" in low or "wöch" in low
    return _Marks(
        frozenset(m.lastgroup for m in _PERIODS.finditer(text)) if has_period else frozenset(),
        frozenset(m.lastgroup for m in _SHARES.finditer(text)) if "voll" in low or "halb" in low else frozenset(),
        frozenset(m.lastgroup for m in _SIDES.finditer(text)) if "d" in low or "gesamt" in low else frozenset(),
        bool(_SURCHARGE.search(text)),
        bool(_BOUND_IN_BLOCK.search(text)),
        bool(_REFUTED.search(text)),
    )


def _only(names: frozenset) -> str | None:
    return next(iter(names)) if len(names) == 1 else None


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
            for row in node.rows:
                facts += _table_row_facts(entry_id, title, header, tuple(row))
        elif node.kind in ("item", "paragraph", "heading"):
            facts += _text_facts(entry_id, title, node.kind, node.text)
    if title and _DIGIT_IN.search(title):
        # the block's head line shows its title to the model too: "Teilpension ab 1.1.2026 – …"
        # (a figure only the title holds is backed by it; it competes with no cell of the block)
        facts += [replace(f, where="title") for f in _text_facts(entry_id, title, "heading", title)]
    return facts


_DIGIT_IN = re.compile(r"\d")


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
    paragraph_bound = bool(_PARAGRAPH_BOUND.search(text))
    for sentence in md.sentences(md.plain(_CITATION_BRACKETS.sub(" ", text))):
        label, sep, rest = sentence.partition(": ")
        sentence_figs = extract(sentence)
        if not sep or len(label) > 60 or any(f.start < len(label) for f in sentence_figs):
            label, rest = "", sentence
        shift = len(sentence) - len(rest)
        rest_figs = [shifted(f, -shift) for f in sentence_figs if f.start >= shift]
        refuted = bool(_REFUTED.search(sentence))
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


def mismatch(answer: Role, fact: Role) -> str:
    """Why a fact with the right value does not back the figure in this role ("" when it does)."""
    if fact.refuted and not answer.refuted:
        return "refuted"
    if answer.years and fact.years and not (answer.years & fact.years):
        return "year"
    if answer.period and fact.period and answer.period != fact.period:
        return "period"
    if answer.period and not fact.period and fact.periods_elsewhere and answer.period not in fact.periods_elsewhere:
        return "period"  # "300 € im Monat" against "300 € pro Jahr … die 300 € bleiben frei"
    if answer.share and fact.share and answer.share != fact.share:
        return "share"
    if answer.side and fact.side and answer.side != fact.side:
        return "side"
    if fact.surcharge is True and answer.surcharge is False:
        return "row"
    if answer.surcharge and fact.surcharge is False:
        return "row"
    if answer.bound and not fact.bound:
        return "bound"
    if contradicts(answer.companions, fact.companions):
        return "row"
    return ""



def contradicts(said_with: tuple, fact_with: tuple) -> bool:
    """The answer writes a figure next to others (its clause); the fact's row pairs it with others.
    They contradict when, for some class (amounts, percentages, counts of one unit), the row has
    figures of that class and none of them is one the answer wrote next to it."""
    said = [f for f in said_with if f.kind not in ("date", "number", "year")]
    row = [f for f in fact_with if f.kind not in ("date", "number", "year")]
    for comp in said:
        same = [f for f in row if _same_class(f, comp)]
        if same and not any(same_value(c, f) for c in said if _same_class(c, comp) for f in same):
            return True
    return False


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

