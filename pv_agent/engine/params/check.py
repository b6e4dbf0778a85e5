"""Compare payroll rule parameters (code, value, valid from) with the mapped figures.

Per mapped code and date: ``match``; ``differs`` (the version valid on the date was dated in
that year and holds another value); ``missing`` (no version valid on the date, or the one
valid is from an earlier year and the knowledge base has another value for this year: a new
dated version is due); ``kb_missing`` (the knowledge base has no figure for the year);
``no_fact`` (the mapping points to no entry or fact, or to an ambiguous label); ``absent``
(a mapped code the parameter list does not have). A code of the list that the mapping does
not know is ``unmapped``.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import dataclass, field

from ..types import Entry, LoadIssue
from .facts import FactLookup, FactValue
from .mapping import ParameterMapping, resolve

MATCH, DIFFERS, MISSING, KB_MISSING, NO_FACT, ABSENT, UNMAPPED = (
    "match", "differs", "missing", "kb_missing", "no_fact", "absent", "unmapped")
STATUSES = (MATCH, DIFFERS, MISSING, KB_MISSING, NO_FACT, ABSENT, UNMAPPED)
PROBLEMS = (DIFFERS, MISSING, NO_FACT)  # what the clerk must fix: exit 1
TOLERANCE = {"EUR": 0.005, "%": 0.0005, "g/km": 0.05, "Anzahl": 0.05}

CODE_COLUMNS = ("code", "parameter", "rule_parameter_id/code")
VALUE_COLUMNS = ("value", "parameter_value", "wert")
DATE_COLUMNS = ("valid_from", "date_from", "gueltig_ab", "gültig_ab")


@dataclass(frozen=True)
class ParameterVersion:
    """One dated value of a rule parameter (``hr.rule.parameter.value``)."""

    code: str
    value: str
    valid_from: dt.date
    line: int = 0

    def number(self) -> float | None:
        """The value as a number: Python notation (``6930.0``, ``0.5``), a comma as decimal
        point when there is no dot (``551,10``); None for anything else (a list, a text)."""
        text = self.value.strip().replace("_", "")
        if "," in text and "." not in text:
            text = text.replace(",", ".")
        try:
            return float(text)
        except ValueError:
            return None


@dataclass
class CheckResult:
    code: str
    status: str
    date: dt.date | None = None
    mapping: ParameterMapping | None = None
    version: ParameterVersion | None = None
    fact: FactValue | None = None
    entry: Entry | None = None
    message: str = ""

    def as_dict(self) -> dict:
        out = {"code": self.code, "status": self.status, "date": self.date.isoformat() if self.date else None,
               "year": self.date.year if self.date else None, "message": self.message}
        if self.mapping:
            out["mapping"] = self.mapping.as_dict()
        out["parameter"] = ({"value": self.version.value, "number": self.version.number(),
                             "valid_from": self.version.valid_from.isoformat()} if self.version else None)
        out["knowledge_base"] = ({
            "entry": self.entry.id, "title": self.entry.title, "stand": self.entry.stand,
            "source_ref": self.entry.source_ref, "value": self.fact.number, "text": self.fact.text,
            "where": self.fact.where, "period": self.fact.period.label(),
        } if self.fact and self.entry else None)
        return out


@dataclass
class ParameterList:
    versions: dict[str, list[ParameterVersion]] = field(default_factory=dict)
    issues: list[LoadIssue] = field(default_factory=list)


def read_parameters_csv(text: str, rel: str = "PARAMS.csv") -> ParameterList:
    """The versions of a CSV with a header row: code, value, valid_from (ISO date; Odoo's
    export names ``date_from``/``parameter_value`` work too), comma or semicolon separated."""
    out = ParameterList()
    text = text.lstrip("\ufeff")
    if not text.strip():
        out.issues.append(LoadIssue(rel, 1, "leer – erwartet Kopfzeile code,value,valid_from"))
        return out
    first = text.splitlines()[0]
    delimiter = ";" if first.count(";") > first.count(",") else ","
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = [h.strip().lower() for h in next(reader)]
    cols = {}
    for name, options in (("code", CODE_COLUMNS), ("value", VALUE_COLUMNS), ("date", DATE_COLUMNS)):
        found = [header.index(o) for o in options if o in header]
        if not found:
            out.issues.append(LoadIssue(rel, 1, f"Spalte '{options[0]}' fehlt (Kopfzeile: {','.join(header)})"))
        else:
            cols[name] = found[0]
    if out.issues:
        return out
    for row in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        try:
            code, value, date = (row[cols[k]].strip() for k in ("code", "value", "date"))
        except IndexError:
            out.issues.append(LoadIssue(rel, line, "zu wenige Spalten"))
            continue
        try:
            valid_from = dt.date.fromisoformat(date[:10])
        except ValueError:
            out.issues.append(LoadIssue(rel, line, f"{code}: ungültiges Datum '{date}' (erwartet JJJJ-MM-TT)"))
            continue
        if not code:
            out.issues.append(LoadIssue(rel, line, "code fehlt"))
            continue
        out.versions.setdefault(code, []).append(ParameterVersion(code, value, valid_from, line))
    return out


def version_on(versions: list[ParameterVersion], date: dt.date) -> ParameterVersion | None:
    """The version valid on ``date``: the latest that starts on or before it."""
    valid = [v for v in versions if v.valid_from <= date]
    return max(valid, key=lambda v: v.valid_from) if valid else None


def years_ahead(mappings: list[ParameterMapping], entries: list[Entry], year: int) -> set[str]:
    """Codes whose fact says something dated for ``year`` itself (``2027``, ``ab 2027``) – a
    figure, or that none is known yet (``Senkung geplant, kein Wert bekannt``)."""
    by_id = {e.id: e for e in entries}
    codes = set()
    for m in mappings:
        _, lookup = resolve(m, by_id)
        value = lookup.for_year(year) if not lookup.problem else None
        if value is not None and value.period.dated and value.period.start == year:
            codes.add(m.code)
    return codes


def check_dates(mappings, entries, today: dt.date, date: dt.date | None = None) -> list[tuple[dt.date, set[str] | None]]:
    """Which dates to check for which codes (None: all): ``date`` when given; else today, and
    1 January of next year for the codes the knowledge base already has next year's figure for."""
    if date is not None:
        return [(date, None)]
    plan: list[tuple[dt.date, set[str] | None]] = [(today, None)]
    ahead = years_ahead(mappings, entries, today.year + 1)
    if ahead:
        plan.append((dt.date(today.year + 1, 1, 1), ahead))
    return plan


def check_parameters(params: ParameterList, mappings: list[ParameterMapping], entries: list[Entry],
                     plan: list[tuple[dt.date, set[str] | None]]) -> list[CheckResult]:
    """Results per mapped code and planned date, then the list's unmapped codes."""
    by_id = {e.id: e for e in entries}
    results: list[CheckResult] = []
    for date, only in plan:
        for m in mappings:
            if only is None or m.code in only:
                results.append(check_one(m, params.versions.get(m.code, []), by_id, date))
    known = {m.code for m in mappings}
    for code in sorted(set(params.versions) - known):
        results.append(CheckResult(code, UNMAPPED, message="keine Zuordnung in parameters.yaml – nicht geprüft"))
    return results


def check_one(m: ParameterMapping, versions: list[ParameterVersion], by_id: dict[str, Entry], date: dt.date) -> CheckResult:
    entry, lookup = resolve(m, by_id)
    result = CheckResult(m.code, NO_FACT, date, m, entry=entry)
    if lookup.problem:
        result.message = f"Zuordnung zeigt auf keinen eindeutigen Fakt: {lookup.problem}"
        return result
    fact = _figure(lookup, date.year)
    result.fact = fact
    result.version = version_on(versions, date)
    if not versions:
        result.status, result.message = ABSENT, "nicht in der Parameterliste"
        return result
    if fact is None or fact.number is None:
        result.status = KB_MISSING
        result.message = f"die Wissensbasis nennt keinen Wert für {date.year}" + (f" ({fact.text})" if fact else "")
        return result
    v = result.version
    if v is None:
        result.status, result.message = MISSING, f"keine Version gültig am {date.isoformat()}"
        return result
    number = v.number()
    if number is not None and abs(number - fact.number) <= TOLERANCE[m.unit]:
        result.status = MATCH
    elif v.valid_from.year < date.year:
        result.status = MISSING
        result.message = f"keine Version für {date.year}: gültig ist noch {v.value} ab {v.valid_from.isoformat()}"
    else:
        result.status = DIFFERS
        result.message = f"Parameter {v.value} (ab {v.valid_from.isoformat()}) ≠ Wissensbasis"
    return result


def _figure(lookup: FactLookup, year: int) -> FactValue | None:
    return lookup.for_year(year)


def summary(results: list[CheckResult]) -> dict[str, int]:
    counts = {s: 0 for s in STATUSES}
    for r in results:
        counts[r.status] += 1
    return counts
