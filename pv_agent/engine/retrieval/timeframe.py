"""Which year a question asks about: payroll figures change every 1 January.

Explicit years ("2026", "für 2025"), relative ones ("heuer", "letztes Jahr", "nächstes
Jahr", "ab Jänner") and, when the question names none, the current date.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ..textnorm import fold

_YEAR = re.compile(r"(?<![\d.,])(20[0-9]{2})(?![\d.,]\d)")
# Patterns are matched against folded text: "nächstes" folds to "nachstes" ("heuer" and
# "aktuell" keep their letters, see textnorm.fold).
_RELATIVE = (
    (re.compile(r"\b(heuer|dieses jahr|diesem jahr|laufenden jahr|diesjahrig\w*|aktuell\w*|derzeit|momentan)\b"), 0),
    (re.compile(r"\b(letzte[sn]? jahr|voriges jahr|vorige[nm] jahr|vorjahr\w*|letztjahrig\w*)\b"), -1),
    (re.compile(r"\b(nachste[sn]? jahr|kommende[sn]? jahr|ab janner|ab jann?er|ab 1\.? ?1\.?)\b"), 1),
)


@dataclass(frozen=True)
class Timeframe:
    year: int
    explicit: bool  # named in the question (a number or a relative word), not just today's year


def years_asked(question: str, today: date | None = None) -> tuple[list[int], bool]:
    """The years a question names, in order, and whether they came from a relative word.

    The one year logic of ``ask``, ``retrieve`` and ``eval``: numbers win; a relative word
    ("heuer", "Vorjahr") counts only when the question names no year, since next to a year it
    is relative to that year ("DB 2026 – bleibt's beim Satz vom Vorjahr?" asks about 2026).
    Numbers outside 2000 … today + 5 are not years (amounts, paragraph numbers).
    """
    today = today or date.today()
    years = [int(y) for y in _YEAR.findall(question or "")]
    plausible = list(dict.fromkeys(y for y in years if 2000 <= y <= today.year + 5))
    if plausible:
        return plausible, False
    folded = fold(question or "")
    for pattern, offset in _RELATIVE:
        if pattern.search(folded):
            return [today.year + offset], True
    return [], False


def asked_year(question: str, today: date | None = None) -> Timeframe:
    """The year to steer one retrieval towards: the year named (the latest of several), else today's."""
    today = today or date.today()
    years, _ = years_asked(question, today)
    if years:
        return Timeframe(max(years), True)
    return Timeframe(today.year, False)

