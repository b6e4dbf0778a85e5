"""Figures in German payroll text: amounts, percentages, counts ("number + any noun": 14 Tage,
9 Monatsentgelte, 15 ÜSt), years and dates, normalised so ``1.234,56 €``, ``1234.56 €`` and
``1 234,56 €`` are one value.

Bare integers without a unit are not figures of the answer: ordinals (a number followed by a
full stop: ``13. Bezug``, ``7. Dienstjahr``, list markers), paragraph references (``§ 67 Abs 1``,
``Z 3``, ``Nr 2``, ``lit a``) and citation brackets are left out by name. In a block a bare
number still counts as a value a figure may quote, since a table column may carry the unit in
its header.

Over 400 lines because it holds both halves of one vocabulary: how a figure is written in an
answer and how the same figure stands in a block as a fact (row, column, year, role); the
verifier compares the two, so they change together.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache

MONTHS = {
    "jänner": 1, "januar": 1, "jan": 1, "feber": 2, "februar": 2, "feb": 2, "märz": 3, "maerz": 3,
    "april": 4, "mai": 5, "juni": 6, "juli": 7, "august": 8, "september": 9, "oktober": 10,
    "november": 11, "dezember": 12,
}
_MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))

# Units of counts, by prefix of the (lower-cased) word; longest first.
_UNITS = (
    ("kalendertag", "kalendertag"), ("arbeitstag", "arbeitstag"), ("werktag", "werktag"),
    ("dienstjahr", "dienstjahr"), ("tag", "tag"), ("woche", "woche"), ("monat", "monat"),
    ("jahr", "jahr"), ("stunde", "stunde"), ("std", "stunde"), ("kilometer", "km"), ("km", "km"),
)
_UNIT_WORDS = "kalendertag|arbeitstag|werktag|dienstjahr|tag|woche|monat|jahr|stunde|std|kilometer|km"

# A count is a number followed by a noun (German nouns are capitalised); these words after a
# number are not units: paragraph references, abbreviations of laws and months.
NOT_COUNT_NOUNS = frozenset("abs absatz art z ziff nr lit s bgbl estg asvg gp".split()) | frozenset(MONTHS)
_NOUN = r"[A-ZÄÖÜ][A-Za-zÄÖÜäöüß]*"
_ABBREVIATED_UNITS = {"üst": "überstund", "std": "stund", "mo": "monat"}

_NUM = r"\d{1,3}(?:[.\u00a0\u202f ]\d{3})+(?:,\d+)?|\d+(?:[.,]\d+)*"
_FIGURE = re.compile(
    r"(?P<dfull>(?<![\d.,])(?P<d1>\d{1,2})\.\s?(?P<m1>\d{1,2})\.\s?(?P<y1>\d{4})(?!\d))"
    rf"|(?P<dnamed>(?<![\d.,])(?P<d2>\d{{1,2}})\.\s*(?P<m2>{_MONTH_RE})\b(?:\s+(?P<y2>\d{{4}})(?!\d))?)"
    r"|(?P<ym>(?<![\d.,-])(?P<y3>(?:19|20)\d{2})-(?P<m3>0[1-9]|1[0-2])(?![\d-]))"
    r"|(?P<dm>(?<![\d.,])(?P<d4>\d{1,2})\.(?P<m4>\d{1,2})\.(?!\d))"
    rf"|(?P<pre>(?:€|EUR)\s?)?(?P<num>(?<![\w.,]){_NUM})(?![\d])"
    rf"(?P<unit>\s?(?:€|EUR\b|Euro\b|%|Prozent\b|(?:{_UNIT_WORDS})(?:e|en|es|s|n)?\b))?"
    rf"(?P<noun>(?(unit)|[ \u00a0](?-i:{_NOUN})\b))?",
    re.IGNORECASE,
)
# Paragraph references and citation brackets are not figures.
_NOT_FIGURES = re.compile(
    r"§+\s*\d+[a-z]?(?:\s*(?:Abs\.?|Absatz)\s*\d+[a-z]?)?(?:\s*(?:Z|Ziff\.?|Nr\.?|lit\.?)\s*\d+[a-z]?)?"
    r"|\b(?:Abs\.?|Absatz|Art\.?|Z|Ziff\.?|Nr\.?|lit\.?)\s*\d+[a-z]?\b"
    r"|\[[^\]\n]*\]"
    r"|\b[a-z]{2,}(?:-[a-z0-9]+)*-\d+[a-z]?\b",  # entry ids such as pv-ab-01
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Figure:
    text: str  # as written
    kind: str  # money | percent | count:<unit> | year | date | number
    value: object  # Decimal, int (year) or (year|None, month, day|None)
    start: int = field(default=0, compare=False)  # span in the text it was found in
    end: int = field(default=0, compare=False)


def shifted(fig: Figure, by: int) -> Figure:
    """The figure with its span moved by ``by`` characters (into a clause or a joined text)."""
    return Figure(fig.text, fig.kind, fig.value, fig.start + by, fig.end + by)


def stem(word: str) -> str:
    """A noun without its plural/case ending, for comparing count units (Tagen ~ Tage ~ Tag)."""
    w = word.lower()
    if w in _ABBREVIATED_UNITS:
        return _ABBREVIATED_UNITS[w]
    for ending in ("ern", "en", "er", "es", "e", "n", "s"):
        if len(w) - len(ending) >= 3 and w.endswith(ending):
            return w[: -len(ending)]
    return w


def same_unit(a: str, b: str) -> bool:
    """Count units match when one is the other or a compound ending in it (Dienstjahre ~ Jahre,
    Überstunden ~ Stunden); Werktage and Arbeitstage stay different."""
    sa, sb = stem(a), stem(b)
    return sa == sb or sa.endswith(sb) or sb.endswith(sa)


def parse_number(raw: str) -> Decimal | None:
    s = raw.replace("\u00a0", "").replace("\u202f", "").replace(" ", "")
    if "," in s and "." in s:
        if s.rfind(",") > s.rfind("."):
            s = s.replace(".", "").replace(",", ".")
        else:
            s = s.replace(",", "")
    elif "," in s:
        s = s.replace(",", ".") if s.count(",") == 1 else s.replace(",", "")
    elif "." in s and (s.count(".") > 1 or re.fullmatch(r"\d{1,3}\.\d{3}", s)):
        s = s.replace(".", "")  # German thousands separator: 6.930 €
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def _unit_kind(unit: str) -> str:
    u = unit.strip().lower()
    if u in ("€", "eur", "euro"):
        return "money"
    if u in ("%", "prozent"):
        return "percent"
    for prefix, key in _UNITS:
        if u.startswith(prefix):
            return "count:" + key
    return "number"


def extract(text: str) -> list[Figure]:
    """Every figure in ``text`` (paragraph references and ``[…]`` brackets removed first)."""
    return list(_extract(text)) if _DIGIT.search(text) else []


_DIGIT = re.compile(r"\d")


@lru_cache(maxsize=8192)
def _extract(text: str) -> tuple[Figure, ...]:
    clean = _NOT_FIGURES.sub(lambda m: " " * len(m.group(0)), text)
    out: list[Figure] = []
    for m in _figure_matches(clean):
        g = m.groupdict()
        raw = m.group(0).rstrip()
        start = m.start() + (len(raw) - len(raw.lstrip()))
        span = dict(start=start, end=m.start() + len(raw))
        if g["dfull"]:
            out.append(Figure(raw.strip(), "date", (int(g["y1"]), int(g["m1"]), int(g["d1"])), **span))
        elif g["dnamed"]:
            year = int(g["y2"]) if g["y2"] else None
            out.append(Figure(raw.strip(), "date", (year, MONTHS[g["m2"].lower()], int(g["d2"])), **span))
        elif g["ym"]:
            out.append(Figure(raw.strip(), "date", (int(g["y3"]), int(g["m3"]), None), **span))
        elif g["dm"]:
            month, day = int(g["m4"]), int(g["d4"])
            if 1 <= month <= 12 and 1 <= day <= 31:
                out.append(Figure(raw.strip(), "date", (None, month, day), **span))
        elif g["num"]:
            value = parse_number(g["num"])
            if value is None:
                continue
            kind = "money" if g["pre"] else _unit_kind(g["unit"] or "")
            if kind == "number" and re.fullmatch(r"(?:19|20)\d{2}", g["num"]):
                out.append(Figure(g["num"], "year", int(g["num"]), m.start("num"), m.end("num")))
                continue
            text = raw.strip()
            noun = (g["noun"] or "").strip()
            if kind == "number" and noun and noun.lower() not in NOT_COUNT_NOUNS:
                kind = "count:" + stem(noun)
            elif kind == "number" and noun:  # "3 Abs" and the like: the number alone
                text = g["num"]
                span["end"] = m.end("num")
            out.append(Figure(text, kind, value, **span))
    return tuple(_range_bounds(out, clean))


# Every alternative of _FIGURE starts with a digit, "€" or "EUR". The regex engine tries all
# of them at every position of a text; trying them only where such a start stands gives the
# same matches as ``_FIGURE.finditer`` (lookbehinds still see the text before) in a fifth of the time.
_FIGURE_START = re.compile(r"\d|€|eur", re.IGNORECASE)


def _figure_matches(text: str):
    pos = 0
    while (start := _FIGURE_START.search(text, pos)) is not None:
        m = _FIGURE.match(text, start.start())
        if m is None:
            pos = start.start() + 1
        else:
            yield m
            pos = m.end()


_RANGE_JOIN = re.compile(r"\s*(?:bis|–|-)\s*$")


def _range_bounds(figs: list[Figure], text: str) -> list[Figure]:
    """"2 bis 12 Monatsentgelte", "3–5 %": the lower bound takes the unit of the upper one."""
    out = list(figs)
    for i, (low, high) in enumerate(zip(figs, figs[1:])):
        if low.kind == "number" and high.kind not in ("number", "year", "date") \
                and _RANGE_JOIN.fullmatch(text[low.end : high.start]):
            out[i] = Figure(low.text, high.kind, low.value, low.start, low.end)
    return out


def is_answer_figure(fig: Figure) -> bool:
    """Figures an answer must back with a source: everything except bare small integers."""
    if fig.kind != "number":
        return True
    raw = fig.text
    return "," in raw or bool(re.search(r"\d[.\u00a0\u202f ]\d{3}", raw))


# -- facts ------------------------------------------------------------------------------------
# Words that tell rows of one table apart. A dimension compares like with like: a sentence saying
# "monatlich" is not backed by the "täglich" row.
_PERIODS = re.compile(
    r"(?P<daily>\btäglich\w*|\btage(?:s)?(?:wert|satz|betrag|höchst\w*)|\b(?:pro|je|am) tag\b|\(tag\)|^tag\b)"
    r"|(?P<monthly>\bmonatlich\w*|\bmonats(?:wert|betrag|-)|\b(?:pro|je|im) monat\b|/monat\b|\(monat\)|^monat\b)"
    r"|(?P<yearly>\bjährlich\w*|\bjahres(?:betrag|wert|-)|\b(?:pro|je) jahr\b|/jahr\b|\(jahr\))",
    re.I,
)
_SHARES = re.compile(r"(?P<full>\bvoll(?:e[nmrs]?)?\b)|(?P<half>\bhalb(?:e[nmrs]?)?\b)", re.I)
_SURCHARGE = re.compile(r"zuschl[aä]g", re.I)
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
# A block sentence that calls its own figure wrong does not back that figure.
_REFUTED = re.compile(r"\b(?:falsch\w*|veraltet\w*|überholt\w*|irrtümlich\w*|fehlerhaft\w*)", re.I)
_SEGMENT_SPLIT = re.compile(r",\s+|;\s*|\s+bzw\.\s+|\s+und\s+|\s+sowie\s+|\s+oder\s+|\s+/\s+|\s+[–—]\s+|\s+→\s+")
_STAND = re.compile(r"Stand:?\s+\d{4}-\d{2}", re.I)


def segments(text: str) -> list[tuple[int, str]]:
    """Clauses of one sentence, cell or list item (with their offsets): where two figures are
    written side by side ("790 € (2025), 804 € (2026)", "6.930 € bzw. 231 €")."""
    out, pos = [], 0
    for m in _SEGMENT_SPLIT.finditer(text):
        out.append((pos, text[pos : m.start()]))
        pos = m.end()
    out.append((pos, text[pos:]))
    return [(o, t) for o, t in out if t.strip()]


def _dimension(pattern: re.Pattern, text: str) -> str | None:
    """The one value of a dimension the text names (daily/monthly/yearly, full/half), or None
    when it names none or several."""
    found = {m.lastgroup for m in pattern.finditer(text)}
    return found.pop() if len(found) == 1 else None


def _years(figs: list[Figure], text: str = "") -> frozenset:
    """Years a clause speaks of: bare years and dates with a year, not an entry's "Stand"."""
    dated = [f for f in figs if f.kind == "year" or (f.kind == "date" and f.value[0])]
    if not dated:  # the common case (most clauses carry no year): no need to look for a Stand
        return frozenset()
    stands = [(m.start(), m.end()) for m in _STAND.finditer(text)]
    return frozenset(f.value if f.kind == "year" else f.value[0] for f in dated
                     if not any(a <= f.start < b for a, b in stands))


def _without_figures(text: str, figs: list[Figure]) -> str:
    for f in sorted(figs, key=lambda f: -f.start):
        text = text[: f.start] + " " + text[f.end :]
    return text


def value_class(fig: Figure) -> str:
    return "count" if fig.kind.startswith("count:") else fig.kind


def same_value(a: Figure, b: Figure) -> bool:
    """Same value and unit; a bare number of a block may quote a figure whose unit sits in a
    column header; "Tage" may quote Werk-/Arbeits-/Kalendertage only by the compound rule."""
    if a.kind in ("year", "date") or b.kind in ("year", "date"):
        return a.kind == b.kind and a.value == b.value
    if a.value != b.value:
        return False
    if a.kind == b.kind or "number" in (a.kind, b.kind):
        return True
    if a.kind.startswith("count:") and b.kind.startswith("count:"):
        return same_unit(a.kind[6:], b.kind[6:])
    return False


@dataclass(frozen=True)
class Role:
    """Where a figure stands: the other figures of its clause (its row), the years it is about,
    and the words that tell rows apart."""

    companions: tuple = ()  # other figures of the clause / table row
    years: frozenset = frozenset()
    period: str | None = None  # daily | monthly | yearly
    share: str | None = None  # full | half
    surcharge: bool | None = None  # "Zuschlag" in the label (None: only the entry title says so)
    bound: bool = False  # written as a limit (höchstens, bis, über, Grenze …)
    refuted: bool = False  # the block calls the figure wrong or outdated


@dataclass(frozen=True)
class Fact:
    """One figure of a context block in its row, column and year."""

    entry_id: str
    figure: Figure
    role: Role
    where: str  # "table" | "item" | "prose" | "stand"
    label: str  # the row / list label or sentence it came from, for the report


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
        bound = bool(_BOUND_IN_ANSWER.search(before))
        surcharge = named_surcharge
    return Role(
        companions=tuple(f for f in others if f.kind not in ("year",)),
        years=years,
        period=_only(local.periods | around.periods),
        share=_only(local.shares | around.shares),
        surcharge=surcharge,
        bound=bound,
        refuted=local.refuted or around.refuted,
    )


@dataclass(frozen=True)
class _Marks:
    periods: frozenset
    shares: frozenset
    surcharge: bool
    bound: bool  # limit words as a block writes them
    refuted: bool


@lru_cache(maxsize=8192)
def _marks(text: str) -> _Marks:
    """The row words of a text, once per text (labels and headers repeat across cells)."""
    low = text.lower()  # every period word holds one of these, every share word "voll" or "halb"
    has_period = "tag" in low or "tägl" in low or "monat" in low or "jahr" in low or "jährl" in low
    return _Marks(
        frozenset(m.lastgroup for m in _PERIODS.finditer(text)) if has_period else frozenset(),
        frozenset(m.lastgroup for m in _SHARES.finditer(text)) if "voll" in low or "halb" in low else frozenset(),
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
    from ..kb import markdown as md  # the one markdown parse

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
    return facts


# Facts per table row and per paragraph/list item, cached by their content (bounded, per
# process): a block is an entry's section plus its key values, so the blocks of one entry
# shown for different questions share most of their rows and items, and a cut block shares
# all but its last rows. Only the rows and items never seen before are parsed.
_NODE_CACHE = 16384


@lru_cache(maxsize=_NODE_CACHE)
def _table_header(entry_id: str, title: str, header: tuple) -> tuple[list[str], list[list[Figure]]]:
    from ..kb import markdown as md

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


@lru_cache(maxsize=_NODE_CACHE)
def _table_row_facts(entry_id: str, title: str, header: tuple, row: tuple) -> tuple[Fact, ...]:
    from ..kb import markdown as md

    cells, header_figs = _table_header(entry_id, title, header)
    caption = cells[0] if cells else ""
    caption_figs = header_figs[0] if header_figs else []
    row = [md.plain(c) for c in row]
    row_figs = [extract(c) for c in row]
    facts: list[Fact] = []
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
        facts += _segment_facts(entry_id, cell, row_figs[ci], context, context_figs, cell_years,
                                title, "table", f"{context} | {cell}")
    return tuple(facts)


@lru_cache(maxsize=_NODE_CACHE)
def _text_facts(entry_id: str, title: str, kind: str, text: str) -> tuple[Fact, ...]:
    """Facts of a paragraph, list item or heading: per sentence, per clause, with "Label:"
    prefixes kept as context."""
    from ..kb import markdown as md

    where = "item" if kind == "item" else "prose"
    facts: list[Fact] = []
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
    for off, seg in segments(text):
        seg_figs = [shifted(f, -off) for f in figs if off <= f.start < off + len(seg)]
        for f in seg_figs:
            role = role_of(f, seg, seg_figs, context=context, context_figs=context_figs,
                           fallback_years=fallback_years, block=True, title=title)
            out.append(Fact(entry_id, f, role, where, label))
    return out


def mismatch(answer: Role, fact: Role) -> str:
    """Why a fact with the right value does not back the figure in this role ("" when it does)."""
    if fact.refuted and not answer.refuted:
        return "refuted"
    if answer.years and fact.years and not (answer.years & fact.years):
        return "year"
    if answer.period and fact.period and answer.period != fact.period:
        return "period"
    if answer.share and fact.share and answer.share != fact.share:
        return "share"
    if fact.surcharge is True and answer.surcharge is False:
        return "row"
    if answer.surcharge and fact.surcharge is False:
        return "row"
    if answer.bound and not fact.bound:
        return "bound"
    if contradicts(answer.companions, fact.companions):
        return "row"
    return ""


def _same_class(a: Figure, b: Figure) -> bool:
    if value_class(a) != value_class(b):
        return False
    return not a.kind.startswith("count:") or same_unit(a.kind[6:], b.kind[6:])


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
