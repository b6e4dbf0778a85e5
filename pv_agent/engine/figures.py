"""Figures in German payroll text: amounts, percentages, counts of days/weeks/months/hours,
years and dates, normalised so ``1.234,56 €``, ``1234.56 €`` and ``1 234,56 €`` are one value.

Bare integers without a unit (ordinals such as ``13. Bezug``, ``§ 67 Abs 1``, list numbers)
are not figures of the answer; in a block they still count as a value a figure may quote,
since a table column may carry the unit in its header.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

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

_NUM = r"\d{1,3}(?:[.\u00a0\u202f ]\d{3})+(?:,\d+)?|\d+(?:[.,]\d+)*"
_FIGURE = re.compile(
    r"(?P<dfull>(?<![\d.,])(?P<d1>\d{1,2})\.\s?(?P<m1>\d{1,2})\.\s?(?P<y1>\d{4})(?!\d))"
    rf"|(?P<dnamed>(?<![\d.,])(?P<d2>\d{{1,2}})\.\s*(?P<m2>{_MONTH_RE})\b(?:\s+(?P<y2>\d{{4}})(?!\d))?)"
    r"|(?P<ym>(?<![\d.,-])(?P<y3>(?:19|20)\d{2})-(?P<m3>0[1-9]|1[0-2])(?![\d-]))"
    r"|(?P<dm>(?<![\d.,])(?P<d4>\d{1,2})\.(?P<m4>\d{1,2})\.(?!\d))"
    rf"|(?P<pre>(?:€|EUR)\s?)?(?P<num>(?<![\w.,]){_NUM})(?![\d])"
    rf"(?P<unit>\s?(?:€|EUR\b|Euro\b|%|Prozent\b|(?:{_UNIT_WORDS})(?:e|en|es|s|n)?\b))?",
    re.IGNORECASE,
)
# Paragraph references and citation brackets are not figures.
_NOT_FIGURES = re.compile(
    r"§+\s*\d+[a-z]?(?:\s*(?:Abs\.?|Absatz)\s*\d+[a-z]?)?(?:\s*(?:Z|Ziff\.?|Nr\.?|lit\.?)\s*\d+[a-z]?)?"
    r"|\b(?:Abs\.?|Absatz|Art\.?|Z|Ziff\.?|Nr\.?|lit\.?)\s*\d+[a-z]?\b"
    r"|\[[^\]\n]*\]",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Figure:
    text: str  # as written
    kind: str  # money | percent | count:<unit> | year | date | number
    value: object  # Decimal, int (year) or (year|None, month, day|None)


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
    clean = _NOT_FIGURES.sub(lambda m: " " * len(m.group(0)), text)
    out: list[Figure] = []
    for m in _FIGURE.finditer(clean):
        g = m.groupdict()
        if g["dfull"]:
            out.append(Figure(m.group(0).strip(), "date", (int(g["y1"]), int(g["m1"]), int(g["d1"]))))
        elif g["dnamed"]:
            year = int(g["y2"]) if g["y2"] else None
            out.append(Figure(m.group(0).strip(), "date", (year, MONTHS[g["m2"].lower()], int(g["d2"]))))
        elif g["ym"]:
            out.append(Figure(m.group(0).strip(), "date", (int(g["y3"]), int(g["m3"]), None)))
        elif g["dm"]:
            month, day = int(g["m4"]), int(g["d4"])
            if 1 <= month <= 12 and 1 <= day <= 31:
                out.append(Figure(m.group(0).strip(), "date", (None, month, day)))
        elif g["num"]:
            value = parse_number(g["num"])
            if value is None:
                continue
            kind = "money" if g["pre"] else _unit_kind(g["unit"] or "")
            if kind == "number" and re.fullmatch(r"(?:19|20)\d{2}", g["num"]):
                out.append(Figure(g["num"], "year", int(g["num"])))
                continue
            out.append(Figure(m.group(0).strip(), kind, value))
    return out


def is_answer_figure(fig: Figure) -> bool:
    """Figures an answer must back with a source: everything except bare small integers."""
    if fig.kind != "number":
        return True
    raw = fig.text
    return "," in raw or bool(re.search(r"\d[.\u00a0\u202f ]\d{3}", raw))


@dataclass
class FigureSet:
    """The figures of one or more blocks, for lookups."""

    typed: set = field(default_factory=set)  # (kind, value)
    untyped: set = field(default_factory=set)  # values written without a unit
    numbers: set = field(default_factory=set)  # every numeric value
    years: set = field(default_factory=set)
    dates: list = field(default_factory=list)

    @classmethod
    def of(cls, text: str) -> "FigureSet":
        fs = cls()
        fs.add(extract(text))
        return fs

    def add(self, figs: list[Figure]) -> None:
        for f in figs:
            if f.kind == "date":
                self.dates.append(f.value)
                if f.value[0]:
                    self.years.add(f.value[0])
            elif f.kind == "year":
                self.years.add(f.value)
                self.numbers.add(Decimal(f.value))
            else:
                self.typed.add((f.kind, f.value))
                self.numbers.add(f.value)
                if f.kind == "number":
                    self.untyped.add(f.value)

    def merge(self, other: "FigureSet") -> None:
        self.typed |= other.typed
        self.untyped |= other.untyped
        self.numbers |= other.numbers
        self.years |= other.years
        self.dates.extend(other.dates)

    def supports(self, fig: Figure) -> bool:
        if fig.kind == "year":
            return fig.value in self.years
        if fig.kind == "date":
            year, month, day = fig.value
            for b_year, b_month, b_day in self.dates:
                if b_month != month or (day is not None and b_day != day):
                    continue
                if year is None or b_year == year or (b_year is None and year in self.years):
                    return True
            return False
        if fig.kind == "number":
            return fig.value in self.numbers
        if (fig.kind, fig.value) in self.typed or fig.value in self.untyped:
            return True
        if fig.kind == "count:tag":  # "Tage" in an answer may quote Werk-/Arbeits-/Kalendertage
            return any(k.startswith("count:") and k.endswith("tag") and v == fig.value for k, v in self.typed)
        return False
