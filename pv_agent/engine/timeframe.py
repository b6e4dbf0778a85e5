"""Which year a question asks about: payroll figures change every 1 January.

Explicit years ("2026", "für 2025"), relative ones ("heuer", "letztes Jahr", "nächstes
Jahr", "ab Jänner") and, when the question names none, the current date.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from .textnorm import fold

_YEAR = re.compile(r"(?<![\d.,])(20[0-9]{2})(?![\d.,]\d)")
# Patterns are matched against folded text: "heuer" folds to "heur", "nächstes" to "nachstes".
_RELATIVE = (
    (re.compile(r"\b(heur|dieses jahr|diesjahrig\w*|aktuell\w*|derzeit|momentan)\b"), 0),
    (re.compile(r"\b(letztes jahr|voriges jahr|vorjahr\w*|im vorjahr|letztjahrig\w*)\b"), -1),
    (re.compile(r"\b(nachstes jahr|kommendes jahr|ab janner|ab jann?er|ab 1\.? ?1\.?)\b"), 1),
)


@dataclass(frozen=True)
class Timeframe:
    year: int
    explicit: bool  # named in the question (a number or a relative word), not just today's year


def asked_year(question: str, today: date | None = None) -> Timeframe:
    today = today or date.today()
    years = [int(y) for y in _YEAR.findall(question or "")]
    plausible = [y for y in years if 2000 <= y <= today.year + 5]
    if plausible:
        return Timeframe(max(plausible), True)
    folded = fold(question or "")
    for pattern, offset in _RELATIVE:
        if pattern.search(folded):
            return Timeframe(today.year + offset, True)
    return Timeframe(today.year, False)


def stand_year(stand: str) -> int:
    return int(stand[:4])
