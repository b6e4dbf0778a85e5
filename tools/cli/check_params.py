"""``pv-agent check-params``: payroll rule parameters against the knowledge base's figures."""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.params.check import (
    ABSENT, DIFFERS, KB_MISSING, MATCH, MISSING, NO_FACT, PROBLEMS, UNMAPPED,
    check_dates, check_parameters, read_parameters_csv, summary,
)
from pv_agent.engine.params.facts import format_figure
from pv_agent.engine.params.mapping import MAPPING_FILE, load_mapping

from ._common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CommandError, add_kb_argument, print_json, warn

NAME = "check-params"
HELP = "Lohnparameter (CSV: code, value, valid_from) mit den Werten der Wissensbasis vergleichen"
EPILOG = ("Ohne --date: heute, und der 1. Jänner des nächsten Jahres für die Codes, für die die "
          "Wissensbasis schon einen Wert des nächsten Jahres hat. Exit 0: alles stimmt (oder ist nicht "
          "prüfbar) · 1: abweichend, fehlende Version oder falsche Zuordnung, oder die Datei ist nicht "
          "lesbar · 2: Aufruf falsch.")

LABELS = {MATCH: "stimmt", DIFFERS: "abweichend", MISSING: "Version fehlt", KB_MISSING: "nicht prüfbar",
          NO_FACT: "Zuordnung falsch", UNMAPPED: "nicht zugeordnet", ABSENT: "nicht in der Liste"}


def add_arguments(parser) -> None:
    parser.add_argument("params", metavar="PARAMS.csv", help="Parameterliste mit Kopfzeile code,value,valid_from")
    parser.add_argument("--date", help="Stichtag JJJJ-MM-TT (Standard: heute, siehe unten)")
    add_kb_argument(parser)
    parser.add_argument("--mapping", help=f"Zuordnung (Standard: <kb>/{MAPPING_FILE})")
    parser.add_argument("--json", action="store_true", help="Ergebnis als JSON")


def run(args) -> int:
    date = _date(args.date) if args.date else None
    params = _read_params(args.params)
    kb = load_knowledge_base(Path(args.kb))
    if not kb.entries:
        raise CommandError(f"{args.kb}: keine Einträge geladen ({kb.errors[0] if kb.errors else 'leer'})")
    if kb.errors:
        warn(f"{len(kb.errors)} Probleme in der Wissensbasis – `pv-agent validate` zeigt sie")
    mapping_file = Path(args.mapping) if args.mapping else Path(args.kb) / MAPPING_FILE
    mappings, issues = load_mapping(mapping_file)
    if issues:
        for issue in issues:
            print(f"Fehler: {mapping_file.parent / issue.file}:{issue.line}: {issue.message}", file=sys.stderr)
        return EXIT_ERROR
    plan = check_dates(mappings, kb.entries, dt.date.today(), date)
    results = check_parameters(params, mappings, kb.entries, plan)
    counts = summary(results)
    if args.json:
        print_json({"params": args.params, "mapping": str(mapping_file),
                    "dates": [{"date": d.isoformat(), "codes": sorted(only) if only is not None else "alle"} for d, only in plan],
                    "summary": counts, "results": [r.as_dict() for r in results]})
    else:
        _print_report(results, plan, counts)
    return EXIT_ERROR if any(counts[s] for s in PROBLEMS) else EXIT_OK


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--date '{text}': erwartet JJJJ-MM-TT", EXIT_USAGE) from None


def _read_params(path: str):
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise CommandError(f"Parameterliste {path} nicht lesbar: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CommandError(f"{path}: kein gültiges UTF-8") from None
    params = read_parameters_csv(text, path)
    if params.issues:
        for issue in params.issues:
            print(f"Fehler: {issue.file}:{issue.line}: {issue.message}", file=sys.stderr)
        raise CommandError(f"{path}: {len(params.issues)} Zeilen nicht lesbar – nichts geprüft")
    return params


def _print_report(results, plan, counts) -> None:
    for r in results:
        if r.status in (MATCH, ABSENT):
            continue
        print(_line(r))
    absent = sorted({r.code for r in results if r.status == ABSENT})
    if absent:
        print(f"nicht in der Liste ({len(absent)}): {', '.join(absent)}")
    dates = " und ".join(d.isoformat() + ("" if only is None else f" ({len(only)} Codes)") for d, only in plan)
    parts = ", ".join(f"{n} {LABELS[s]}" for s, n in counts.items() if n)
    print(f"Geprüft zum {dates}: {parts or 'nichts'}.")


def _line(r) -> str:
    name = f" ({r.mapping.name})" if r.mapping and r.mapping.name else ""
    year = f" {r.date.year}" if r.date else ""
    head = f"{LABELS[r.status]:<16} {r.code}{name}{year}"
    if r.status in (UNMAPPED, NO_FACT):
        return f"{head}: {r.message}"
    unit = r.mapping.unit
    param = (f"Parameter {r.version.value} ab {r.version.valid_from.isoformat()}" if r.version
             else "Parameter: keine gültige Version")
    kb = (f"Wissensbasis {format_figure(r.fact.number, unit)}" if r.fact and r.fact.number is not None
          else "Wissensbasis ohne Wert" + (f" ({r.fact.text})" if r.fact else ""))
    cite = f"[{r.entry.id}] {r.entry.title}, Stand {r.entry.stand}" + (f" – {r.fact.where}" if r.fact else "")
    return f"{head}: {param}; {kb} – {cite}"
