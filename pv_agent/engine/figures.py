"""Figures in German payroll text: amounts, percentages, counts ("number + any noun": 14 Tage,
9 Monatsentgelte, 15 ÜSt), years and dates, normalised so ``1.234,56 €``, ``1234.56 €`` and
``1 234,56 €`` are one value; and the clauses of a sentence they stand in.

Bare integers without a unit are not figures of the answer: ordinals (a number followed by a
full stop: ``13. Bezug``, ``7. Dienstjahr``, list markers), paragraph references (``§ 67 Abs 1``,
``Z 3``, ``Nr 2``, ``lit a``) and citation brackets are left out by name. In a block a bare
number still counts as a value a figure may quote, since a table column may carry the unit in
its header.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
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
    ("g/km", "g/km"),  # CO₂ emission limits of company cars
    ("kalendertag", "kalendertag"), ("arbeitstag", "arbeitstag"), ("werktag", "werktag"),
    ("dienstjahr", "dienstjahr"), ("tag", "tag"), ("woche", "woche"), ("monat", "monat"),
    ("jahr", "jahr"), ("stunde", "stunde"), ("std", "stunde"), ("kilometer", "km"), ("km", "km"),
    # a clerk's English question: "after 3 years of service" gives the answer's "3 Dienstjahre"
    ("year", "jahr"), ("month", "monat"), ("week", "woche"), ("day", "tag"), ("hour", "stunde"),
    ("h", "stunde"),
)
_UNIT_WORDS = ("g/km|kalendertag|arbeitstag|werktag|dienstjahr|tag|woche|monat|jahr|stunde|std|kilometer|km"
               "|year|month|week|day|hour|h")

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
    rf"|(?P<pre>(?:€|(?<![A-Za-zÄÖÜäöüß])EUR)\s?)?(?P<num>(?<![\w.,]){_NUM})(?![\d])"
    rf"(?P<scale>\s?(?:Mio\.|Mrd\.|Mio\b|Mrd\b|Millionen\b|Million\b|Milliarden\b|Milliarde\b|billion\b))?"
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


# Words for people a clerk counts: "Wir sind 18 Leute" – "mit 18 Beschäftigten".
_PERSONS = ("leut", "mitarbeit", "beschäftigt", "arbeitnehm", "dienstnehm", "person", "angestellt",
            "employe", "peopl", "staff", "worker")


@lru_cache(maxsize=4096)
def same_unit(a: str, b: str) -> bool:
    """Count units match when one is the other or a compound ending in it (Dienstjahre ~ Jahre,
    Überstunden ~ Stunden), or both count people; Werktage and Arbeitstage stay different."""
    sa, sb = stem(a), stem(b)
    if sa == sb or sa.endswith(sb) or sb.endswith(sa):
        return True
    return any(sa.startswith(p) for p in _PERSONS) and any(sb.startswith(p) for p in _PERSONS)


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


_SCALES = {"mio": Decimal(10) ** 6, "mil": Decimal(10) ** 6, "mrd": Decimal(10) ** 9, "bil": Decimal(10) ** 9}


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
            if g["scale"]:  # "1,3 Mio. €", "€1.3 million", "über 1 Mio.": an amount in millions
                value *= _SCALES[g["scale"].strip().rstrip(".").lower()[:3]]
                kind = "money" if kind == "number" else kind
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
    return tuple(_elided_units(_range_bounds(_with_compounds(out, clean), clean), clean))


# "52-Wochen-Zeitraum", "5-Tage-Woche", "45-%-Stufe", "7.300-€-Grenze": a figure inside a compound.
_COMPOUND = re.compile(rf"(?<![\w.,])({_NUM})-(%|€|[A-ZÄÖÜ][a-zäöüß]+)-(?=[A-Za-zÄÖÜäöüß])")


def _with_compounds(figs: list[Figure], text: str) -> list[Figure]:
    if "-" not in text:
        return figs
    found = []
    for m in _COMPOUND.finditer(text):
        value = parse_number(m.group(1))
        if value is None:
            continue
        unit = m.group(2)
        kind = _unit_kind(unit) if unit in ("%", "€") else "count:" + stem(unit)
        found.append(Figure(m.group(0).rstrip("-"), kind, value, m.start(), m.end() - 1))
    if not found:
        return figs
    spans = [(f.start, f.end) for f in found]
    kept = [f for f in figs if not any(a <= f.start < b for a, b in spans)]
    return sorted(kept + found, key=lambda f: f.start)


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


_RANGE_JOIN = re.compile(r"\s*(?:bis|–|-|bzw\.|oder|und|/)\s*$")


def _range_bounds(figs: list[Figure], text: str) -> list[Figure]:
    """"2 bis 12 Monatsentgelte", "3–5 %", "8 bzw. 4 Wochen": the first figure takes the unit of the second."""
    out = list(figs)
    for i in range(len(figs) - 2, -1, -1):  # from the right: "320, 300 und 280 €" – a list shares it
        low, high = figs[i], out[i + 1]
        # (a comma joins only a list ending in "und 280 €": ``high`` took its unit from the right)
        joined = _RANGE_JOIN.fullmatch(text[low.end : high.start]) or (
            high is not figs[i + 1] and high.kind in ("money", "percent")
            and text[low.end : high.start].strip() == ",")
        if low.kind == "number" and high.kind not in ("number", "year", "date") and joined:
            out[i] = Figure(low.text, high.kind, low.value, low.start, low.end)
    return out


_ELISION_GAP = re.compile(r"^[^.;:\d]*?(?:,|\bbzw\.|\boder\b|\bmit\b|\bbei\b|\bsonst\b)[^.;:\d]*$")
_ELISION_END = re.compile(r"\s*(?:[;,.)]|$|\(|\s(?:und|oder|bzw)\b)")


def _elided_units(figs: list[Figure], text: str) -> list[Figure]:
    """"mindestens 20 Wochenstunden, mit Betreuungspflichten 16": a bare number after a counted
    figure of its sentence, joined by a comma or "mit"/"bei"/"bzw."/"oder" and standing at the end
    of its phrase, counts the same unit."""
    out = list(figs)
    for i in range(1, len(out)):
        fig, before = out[i], out[i - 1]
        if fig.kind != "number" or not before.kind.startswith("count:") or "," in fig.text or "." in fig.text:
            continue
        if _ELISION_GAP.match(text[before.end:fig.start]) and _ELISION_END.match(text, fig.end):
            out[i] = Figure(fig.text, before.kind, fig.value, fig.start, fig.end)
    return out


def is_answer_figure(fig: Figure) -> bool:
    """Figures an answer must back with a source: everything except bare small integers."""
    if fig.kind != "number":
        return True
    raw = fig.text
    return "," in raw or bool(re.search(r"\d[.\u00a0\u202f ]\d{3}", raw))


_SEGMENT_SPLIT = re.compile(r",\s+|;\s*|\s+bzw\.\s+|\s+und\s+|\s+sowie\s+|\s+oder\s+|\s+/\s+|\s+[–—]\s+|\s+→\s+")
# A Stand, and the date a quoted source was published („Das wird gestrichen ab 1.1.2026“,
# 27.12.2025), name no year a figure is about.
_STAND = re.compile(r"Stand:?\s+\d{4}-\d{2}|[“\"]\s*,?\s*\d{1,2}\.\s?\d{1,2}\.\s?\d{4}", re.I)


_YEAR_END = re.compile(r"(?<![\d.,])(?:19|20)\d\d$")
_YEAR_START = re.compile(r"(?:19|20)\d\d(?![\d.,]\d)")


def segments(text: str, *, asides: bool = False) -> list[tuple[int, str]]:
    """Clauses of one sentence, cell or list item (with their offsets): where two figures are
    written side by side ("790 € (2025), 804 € (2026)", "6.930 € bzw. 231 €")."""
    out, pos = [], 0
    for m in _SEGMENT_SPLIT.finditer(text):
        if _YEAR_END.search(text, 0, m.start()) and _YEAR_START.match(text, m.end()):
            continue  # "2025 und 2026 1,53 %", "(2025 und 2026)": two years of one figure
        out.append((pos, text[pos : m.start()]))
        pos = m.end()
    out.append((pos, text[pos:]))
    out = [(o, t) for o, t in out if t.strip()]
    return [piece for o, t in out for piece in _asides(o, t)] if asides else out


def in_clause(fig: Figure, offset: int, clause: str) -> bool:
    """``fig`` (found in the whole text) stands in this clause, not in a parenthesis cut out of it."""
    return offset <= fig.start < offset + len(clause) and not clause[fig.start - offset].isspace()


_ASIDE = re.compile(r"\(([^()]*)\)")
_VALUE_KINDS = ("money", "percent")


def _asides(offset: int, clause: str) -> list[tuple[int, str]]:
    """In a block, a parenthesis with an amount or a percentage of its own is a clause of its own:
    "Ab 2025 sind das 2,50 € je Stunde (bis 2024: 2,20 €)". One with only a year or a Stand
    stays with the figure before it: "790 € (2025)", "6.930 € (Stand 2026-01)"."""
    if "(" not in clause:
        return [(offset, clause)]
    asides = [m for m in _ASIDE.finditer(clause)
              if any(f.kind in _VALUE_KINDS or f.kind.startswith("count:") for f in extract(m.group(1)))
              and any(f.kind in _VALUE_KINDS or f.kind.startswith("count:") for f in extract(clause[: m.start()]))]
    if not asides:
        return [(offset, clause)]
    rest = clause
    for m in asides:
        rest = rest[: m.start()] + " " * (m.end() - m.start()) + rest[m.end():]
    return [(offset, rest)] + [(offset + m.start(1), m.group(1)) for m in asides if m.group(1).strip()]



def _years(figs: list[Figure], text: str = "") -> frozenset:
    """Years a clause speaks of: bare years and dates with a year, not an entry's "Stand"."""
    dated = [f for f in figs if f.kind == "year" or (f.kind == "date" and f.value[0])]
    if not dated:  # the common case (most clauses carry no year): no need to look for a Stand
        return frozenset()
    stands = [(m.start(), m.end()) for m in _STAND.finditer(text)]
    return frozenset(f.value if f.kind == "year" else f.value[0] for f in dated
                     if not any(a <= f.start < b for a, b in stands)
                     and not _ISSUE.search(text[max(0, f.start - 30):f.start]))


# "DGservice 4/2024": the year of a source's issue, not of its values ("ab 7/2025" is a month)
_ISSUE = re.compile(r"(?<![\w-])[A-ZÄÖÜ][\w-]+\.? \d{1,2}/$")


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



def _same_class(a: Figure, b: Figure) -> bool:
    return _same_kind_class(a.kind, b.kind)


@lru_cache(maxsize=4096)
def _same_kind_class(a: str, b: str) -> bool:
    """Amounts with amounts, percentages with percentages, counts of one unit with each other."""
    if a.startswith("count:") != b.startswith("count:"):
        return False
    return same_unit(a[6:], b[6:]) if a.startswith("count:") else a == b




def matches(fig: Figure, other: Figure) -> bool:
    if fig.kind == "date" and other.kind == "date":
        (y, m, d), (oy, om, od) = fig.value, other.value
        return m == om and (d is None or d == od) and (y is None or oy is None or y == oy)
    if fig.kind == "year" and other.kind == "date":
        return other.value[0] == fig.value
    return same_value(fig, other)
