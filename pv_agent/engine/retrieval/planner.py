"""Query planning (design.md §3): a cheap heuristic gate, then 1–3 sub-queries, each with the
year asked for and a scope; ``survey`` questions ("alles über X") go map-reduce."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from .timeframe import years_asked

MAX_QUERIES = 3

_YEAR = re.compile(r"(?<![\d.,])(20[0-9]{2})(?![\d.,]\d)")  # as timeframe: years, not amounts
_SCOPES = (
    (re.compile(r"(§|\bparagraph|\bgesetz\w*|\bwortlaut|\bestg\b|\basvg\b|\burlg\b|\bangg\b|\babgb\b|\bbmsvg\b)", re.I), "gesetz"),
    (re.compile(r"\bkollektivvertr\w*", re.I), "kv"),
    (re.compile(r"\b(urteil\w*|ogh|vwgh|eugh|judikatur|rechtsprechung|erkenntnis)\b", re.I), "rechtsprechung"),
)
_SURVEY = re.compile(
    r"\b(überblick|übersicht|auf einen blick|auflist\w*|zusammenstellung|sämtliche\w*"
    r"|alles (über|zu|zur|zum|rund|wissen|was|wichtige)|was \w+ ich alles|was gibt es alles"
    r"|alle\s+[\w-]*(werte|grenzen|sätze|beträge|fristen|regeln|punkte|infos|informationen|änderungen))\b",
    re.I,
)
_COMPARE = re.compile(r"\b(unterschied\w*|vergleich\w*|verglichen|gegenüber|im gegensatz)\b", re.I)


@dataclass
class SubQuery:
    text: str
    year: int | None = None
    scopes: tuple[str, ...] | None = None

    def as_dict(self) -> dict:
        return {"text": self.text, "year": self.year, "scopes": list(self.scopes) if self.scopes else None}


@dataclass
class Plan:
    kind: str  # "simple" | "complex" | "survey"
    queries: list[SubQuery]
    years: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "queries": [q.as_dict() for q in self.queries], "years": self.years}


def plan(question: str, *, now: date | None = None) -> Plan:
    today = now or date.today()
    q = question.strip()
    years, relative = years_asked(q, today)
    scopes = tuple(dict.fromkeys(s for pattern, s in _SCOPES if pattern.search(q)))
    year = years[0] if len(years) == 1 else None
    base_text = f"{q} {year}" if relative and year else q

    if _SURVEY.search(q):
        return Plan("survey", [SubQuery(base_text, year, None)], years)

    queries: list[SubQuery] = []
    parts = [p.strip() + "?" for p in q.split("?") if p.strip()] if q.count("?") > 1 else []
    if len(parts) > 1:
        for part in parts[:MAX_QUERIES]:
            part_years, _ = years_asked(part, today)
            queries.append(SubQuery(part, part_years[0] if len(part_years) == 1 else year, None))
    elif len(years) > 1:
        stripped = re.sub(r"\s{2,}", " ", _YEAR.sub("", q)).strip()
        for y in years[:MAX_QUERIES]:
            queries.append(SubQuery(f"{stripped} {y}".strip(), y, None))
    if scopes:
        if not queries:
            queries.append(SubQuery(base_text, year, None))
        if len(queries) < MAX_QUERIES:
            queries.append(SubQuery(base_text, year, scopes))
    if not queries:
        kind = "complex" if _COMPARE.search(q) else "simple"
        return Plan(kind, [SubQuery(base_text, year, None)], years)
    return Plan("complex", queries, years)
