"""A mapped fact in an entry: its values per year, found through the engine's markdown parse.

A fact is named by a label, as the entry writes it:

- a table row label (``| monatlich | 6.450 € | 6.930 € |`` under ``| HBGL … | 2025 | 2026 |``):
  the year of a value is its column header's, else the table's first header cell's;
- a table column label over rows that are years (``| DB | Satz |`` / ``| 2026 | 3,7 % |``):
  the label is the column header (or the first header cell of a two-column table);
- a list item ``Label: value`` – the year is the label's (``ab 2025``), else the entry's Stand
  year onwards; ``790 € (2025), 804 € (2026)`` gives one value per year.

``column`` narrows a row with several value columns (``DN`` / ``DG``). Only the section
``Kernwerte & Fristen`` is read when the entry has one (the figures live there). Figures are
parsed here, small and on purpose: German notation (``6.930 €``, ``3,7 %``, ``1 Mio. €``),
the first figure of the mapping's unit in a cell.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..kb import markdown
from ..textnorm import fold
from ..types import Entry

SECTION_FIGURES = "Kernwerte & Fristen"
# unit of a mapping → what must follow the number in the entry (None: a bare count)
UNITS = {"EUR": "€", "%": "%", "g/km": "g/km", "Anzahl": None}

_NUMBER = r"(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d+))?"
_MILLION = r"(?:\s*(Mio\.?|Millionen?))?"
_YEAR = re.compile(r"(?<![\d,])((?:19|20)\d\d)(?!\d|,\d)")
_OPEN_START = re.compile(r"^\s*(?:ab|seit)\b", re.IGNORECASE)
_UNTIL = re.compile(r"^\s*bis\b", re.IGNORECASE)
_YEAR_PAIR = re.compile(r"^\s*((?:19|20)\d\d)\s*(?:/|und|,)\s*((?:19|20)\d\d)\b")


@dataclass(frozen=True)
class Period:
    """Years a value applies to: ``start``..``end`` inclusive; ``None`` is open."""

    start: int | None
    end: int | None
    dated: bool = True  # False: no year in the entry, valid from its Stand on

    def covers(self, year: int) -> bool:
        return (self.start is None or self.start <= year) and (self.end is None or year <= self.end)

    def specificity(self) -> tuple[int, int]:
        """Higher wins for one year: a single year over an open range, a later start first."""
        closed = int(self.end is not None and self.start is not None)
        return (int(self.dated), closed, self.start or 0)

    def label(self) -> str:
        if not self.dated:
            return f"ohne Jahresangabe, ab Stand {self.start}"
        if self.start == self.end:
            return str(self.start)
        if self.end is None:
            return f"ab {self.start}"
        if self.start is None:
            return f"bis {self.end}"
        return f"{self.start}–{self.end}"


@dataclass(frozen=True)
class FactValue:
    """One value of a fact as the entry states it (``number`` None: the cell gives no figure)."""

    number: float | None
    text: str
    period: Period
    where: str  # "Zeile „monatlich“ · Spalte „2026“" – for people
    place: tuple  # (block index, row or item, column): two places make a label ambiguous


@dataclass
class FactLookup:
    values: list[FactValue] = field(default_factory=list)
    problem: str = ""  # "" found; else why not (no such fact, ambiguous)

    def for_year(self, year: int) -> FactValue | None:
        """The most specific value that covers ``year`` (None: the entry has none)."""
        covering = [v for v in self.values if v.period.covers(year)]
        if not covering:
            return None
        return max(covering, key=lambda v: v.period.specificity())


def norm(text: str) -> str:
    """A label as compared: plain text, folded, spaces collapsed, no trailing colon."""
    return " ".join(fold(markdown.plain(text)).split()).strip(" :")


def parse_number(text: str, unit: str) -> float | None:
    """The first figure of ``unit`` in ``text`` (German notation), or None."""
    symbol = UNITS.get(unit)
    plain = markdown.plain(text).replace("\u00a0", " ")
    if symbol is None:
        pattern = re.compile(_NUMBER + r"(?!\s*(?:[%€]|g/km|\d))")
    else:
        pattern = re.compile(_NUMBER + _MILLION + r"\s*" + re.escape(symbol))
    for m in pattern.finditer(plain):
        if symbol is None and _YEAR.fullmatch(m.group(0).strip()):
            continue  # a year is not a count
        return _to_float(m)
    return None


def _to_float(m: re.Match) -> float:
    whole = m.group(1).replace(".", "")
    value = float(f"{whole}.{m.group(2)}" if m.group(2) else whole)
    if m.re.groups >= 3 and m.group(3):
        value *= 1_000_000
    return value


def format_figure(number: float | None, unit: str) -> str:
    """A figure as the entries write it: ``6930.0`` → ``6.930 €``, ``3.7`` → ``3,7 %``."""
    if number is None:
        return "–"
    decimals = 0 if float(number).is_integer() else len(f"{number:.4f}".rstrip("0").split(".")[1])
    text = f"{number:,.{decimals}f}".replace(",", " ").replace(".", ",").replace(" ", ".")
    symbol = UNITS.get(unit)
    return f"{text} {symbol}" if symbol else text


def period_of(text: str) -> Period | None:
    """The years a header, row label or list label names, or None when it names none."""
    plain = markdown.plain(text)
    pair = _YEAR_PAIR.match(plain)
    if pair:
        return Period(int(pair.group(1)), int(pair.group(2)))
    m = _YEAR.search(plain)
    if not m:
        return None
    year = int(m.group(1))
    before = plain[: m.start()]
    if _OPEN_START.match(before) or re.search(r"\b(ab|seit)\s+(\d{1,2}\.\s*\d{1,2}\.\s*)?$", before, re.IGNORECASE):
        return Period(year, None)
    if _UNTIL.match(before):
        return Period(None, year)
    return Period(year, year)


def stand_year(entry: Entry) -> int:
    return int(entry.stand[:4])


def find_fact(entry: Entry, label: str, unit: str, column: str = "") -> FactLookup:
    """Every value ``label`` (and ``column``) names in ``entry``; ``problem`` says why none
    or why they contradict each other (two figures for one year: the label is ambiguous)."""
    body = markdown.section_text(entry.body, SECTION_FIGURES) or entry.body
    want, want_col = norm(label), norm(column)
    values: list[FactValue] = []
    undated = Period(stand_year(entry), None, dated=False)
    for block, node in enumerate(markdown.parse(body)):
        if node.kind == "table":
            values += _table_values(node, block, want, want_col, unit, undated)
        elif node.kind in ("item", "paragraph") and not want_col:
            values += _item_values(node.text, block, want, unit, undated)
    if not values:
        what = f"„{label}“" + (f" (Spalte „{column}“)" if column else "")
        return FactLookup(problem=f"kein Fakt {what} in {entry.id}")
    return FactLookup(values, _ambiguity(values, label, entry.id))


def _ambiguity(values: list[FactValue], label: str, entry_id: str) -> str:
    """Two places giving different figures for the same years: the mapping must say which."""
    by_period: dict[Period, set] = {}
    where: dict[Period, list[str]] = {}
    for v in values:
        if v.number is None:
            continue
        by_period.setdefault(v.period, set()).add(v.number)
        where.setdefault(v.period, []).append(f"{v.where}: {v.text}")
    for period, numbers in by_period.items():
        if len(numbers) > 1:
            return (f"„{label}“ in {entry_id} ist mehrdeutig ({period.label()}: "
                    f"{'; '.join(where[period])}) – Spalte (column) oder genaueres Label angeben")
    return ""


def _table_values(node, block, want, want_col, unit, undated) -> list[FactValue]:
    header = node.header
    out: list[FactValue] = []
    # a row label: the values stand in the row's columns
    for r, row in enumerate(node.rows):
        if not row or norm(row[0]) != want:
            continue
        for j in range(1, len(row)):
            head = header[j] if j < len(header) else ""
            if want_col and norm(head) != want_col:
                continue
            period = period_of(head) or (period_of(header[0]) if header else None)
            out += _cell(row[j], unit, period, undated, f"Zeile „{row[0]}“ · Spalte „{head}“", (block, r, j))
    if out:
        return out
    # a column label over rows that name years
    columns = [j for j, head in enumerate(header) if j >= 1 and norm(head) == want]
    if not columns and header and norm(header[0]) == want:
        if want_col:
            columns = [j for j, head in enumerate(header) if j >= 1 and norm(head) == want_col]
        elif len(header) == 2:
            columns = [1]
    for j in columns:
        for r, row in enumerate(node.rows):
            period = period_of(row[0]) if row else None
            if period is None or j >= len(row):
                continue
            out += _cell(row[j], unit, period, None, f"Spalte „{header[j]}“ · Zeile „{row[0]}“", (block, r, j))
    return out


def _cell(text, unit, period, undated, where, place) -> list[FactValue]:
    number = parse_number(text, unit)
    if number is None and period is None:
        return []  # no figure, no year: nothing the entry states here
    return [FactValue(number, markdown.plain(text).strip(), period or undated, where, place)]




def _item_values(text, block, want, unit, undated) -> list[FactValue]:
    plain = markdown.plain(text)
    head, sep, rest = plain.partition(": ")
    if not sep or norm(head) != want:
        return []
    where = f"Punkt „{head.strip()}“"
    symbol = UNITS.get(unit)
    if symbol:  # "790 € (2025), 804 € (2026)": a value per year
        per_year = re.compile(_NUMBER + _MILLION + r"\s*" + re.escape(symbol) + r"[^()\d]{0,24}\(((?:19|20)\d\d)\)")
        found = [(m, int(m.group(4))) for m in per_year.finditer(rest)]
        if found:
            return [FactValue(_to_float(m), m.group(0), Period(y, y), where, (block, 0, i))
                    for i, (m, y) in enumerate(found)]
    number = parse_number(rest, unit)
    if number is None:
        return []
    return [FactValue(number, rest.strip().rstrip("."), period_of(head) or undated, where, (block, 0, 0))]
