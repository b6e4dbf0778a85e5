"""``pv-agent check-params`` and ``wissensbasis/parameters.yaml`` (issue 32).

The sample (tests/data/params/kb + sample.csv) has one code per case: matches, differs,
missing version for the year, unmapped, mapped to an ambiguous label, to no fact, to no
entry, not in the list. ``last-year-2025.csv`` holds the shipped mapping's codes with their
2025 values: checked for 2026 it must report exactly the figures that changed (listed here by
hand from the entries' tables), each with its citation.

Run: ``.venv/bin/python -m pytest tests/test_check_params.py -q``
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.params.check import (
    ABSENT, DIFFERS, KB_MISSING, MATCH, MISSING, NO_FACT, UNMAPPED,
    check_dates, check_parameters, read_parameters_csv,
)
from pv_agent.engine.params.facts import find_fact, parse_number, period_of, Period
from pv_agent.engine.params.mapping import dump_mapping, load_mapping, parse_mapping
from pv_agent.engine.types import Entry
from tools.cli.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "params"
SAMPLE_KB = DATA / "kb"
SHIPPED_KB = ROOT / "wissensbasis"

# The figures that changed from 2025 to 2026 in the shipped knowledge base, read off the entries'
# tables by hand: code → (2026 value, entry cited).
CHANGED_2026 = {
    "AT_HBGL_MONTH": (6930, "pv-bg-02"), "AT_HBGL_DAY": (231, "pv-bg-02"),
    "AT_HBGL_SZ_YEAR": (13860, "pv-bg-04"), "AT_HBGL_FDN_MONTH": (8085, "pv-bg-06"),
    "AT_AV_STAFFEL_0": (2225, "pv-sv-14"), "AT_AV_STAFFEL_1": (2427, "pv-sv-14"),
    "AT_AV_STAFFEL_2": (2630, "pv-sv-14"),
    "AT_DZ_NOE": (0.33, "pv-dg-14"), "AT_DZ_S": (0.35, "pv-dg-14"),
    "AT_TAX_BRACKET_0": (13539, "pv-lst-02"), "AT_TAX_BRACKET_20": (21992, "pv-lst-02"),
    "AT_TAX_BRACKET_30": (36458, "pv-lst-02"), "AT_TAX_BRACKET_40": (70365, "pv-lst-02"),
    "AT_TAX_BRACKET_48": (104859, "pv-lst-02"),
    "AT_VAB": (496, "pv-ab-01"), "AT_VAB_ZUSCHLAG": (804, "pv-ab-02"), "AT_PAB": (1020, "pv-ab-03"),
    "AT_AVAB_1": (612, "pv-ab-05"), "AT_AVAB_2": (828, "pv-ab-05"),
    "AT_SZ_FREIGRENZE": (2615, "pv-sz-05"),
    "AT_OT_COUNT": (15, "pv-ues-08"), "AT_OT_MAX": (170, "pv-ues-08"),
    "AT_PENDLEREURO": (6, "pv-pp-05"),
}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def entry(body: str, stand: str = "2026-01") -> Entry:
    return Entry(id="pv-x-01", title="X", stand=stand, topic="t", source="briefing",
                 body=f"## Zusammenfassung\nText.\n\n## Kernwerte & Fristen\n{body}\n\n## Verweise\n- keine")


# --- facts: where a label stands and its value per year ---------------------------------------

def test_numbers_in_german_notation_with_the_mappings_unit():
    assert parse_number("bis 13.539 €", "EUR") == 13539
    assert parse_number("**0,33 %**", "%") == 0.33
    assert parse_number("bis 1 Mio. €", "EUR") == 1_000_000
    assert parse_number("wie 2025", "%") is None  # a year is no rate
    assert parse_number("seit 2024 gilt 15", "Anzahl") == 15  # nor a count
    assert parse_number("126 g/km", "g/km") == 126
    assert parse_number("3 %", "EUR") is None


def test_periods_from_headers_and_labels():
    assert period_of("2026") == Period(2026, 2026)
    assert period_of("DZ 2026") == Period(2026, 2026)
    assert period_of("ab 2027") == Period(2027, None)
    assert period_of("Pkw ab 1.1.2025") == Period(2025, None)
    assert period_of("2025 / 2026") == Period(2025, 2026)
    assert period_of("2025, laufende Bezüge") == Period(2025, 2025)
    assert period_of("monatlich") is None


def test_row_label_under_year_columns():
    e = entry("| HBGL | 2025 | 2026 |\n|---|---|---|\n| monatlich | 6.450 € | 6.930 € |")
    lookup = find_fact(e, "Monatlich", "EUR")
    assert not lookup.problem
    assert lookup.for_year(2025).number == 6450 and lookup.for_year(2026).number == 6930
    assert lookup.for_year(2027) is None


def test_column_label_over_year_rows_and_a_named_column():
    e = entry("| DB | Satz |\n|---|---|\n| 2025 | 3,7 % |\n| ab 2027 | Senkung geplant |\n\n"
              "| AV | DN | DG |\n|---|---|---|\n| 2026 | 2,95 % | 3,00 % |")
    db = find_fact(e, "DB", "%")
    assert db.for_year(2025).number == 3.7
    assert db.for_year(2028).number is None  # the entry says there is no figure yet
    assert find_fact(e, "AV", "%", column="DG").for_year(2026).number == 3.0
    two = find_fact(e, "AV", "%")  # DN and DG both for 2026, no column named
    assert "kein Fakt" in two.problem  # a row of several columns needs the column named


def test_list_labels_with_years_per_value_and_undated_from_the_stand():
    e = entry("- Zuschlag zum VAB: 790 € (2025), 804 € (2026).\n- Höchstbetrag: 960 €/Monat.\n"
              "- Nächtigungsgeld ab 2025: 17,00 € pro Nacht; bis 2024: 15,00 €", stand="2025-01")
    vab = find_fact(e, "Zuschlag zum VAB", "EUR")
    assert (vab.for_year(2025).number, vab.for_year(2026).number) == (790, 804)
    cap = find_fact(e, "Höchstbetrag", "EUR")
    assert cap.for_year(2024) is None and cap.for_year(2026).number == 960
    assert not cap.for_year(2026).period.dated
    assert find_fact(e, "Nächtigungsgeld ab 2025", "EUR").for_year(2026).number == 17


def test_two_figures_for_one_year_make_the_label_ambiguous():
    e = entry("| Wert | 2026 (Novelle) | 2026 laut Vorschau |\n|---|---|---|\n| je Monat | 170 € | 120 € |")
    lookup = find_fact(e, "je Monat", "EUR")
    assert "mehrdeutig" in lookup.problem and "170 €" in lookup.problem and "120 €" in lookup.problem
    assert "kein Fakt" in find_fact(e, "je Woche", "EUR").problem


def test_the_engine_parses_markdown_only_through_kb_markdown():
    import ast
    for path in (ROOT / "pv_agent" / "engine" / "params").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in imported if m.startswith("markdown_it") or m.endswith(("verify", "figures"))}, path


# --- the mapping file ---------------------------------------------------------------------------

def test_the_shipped_mapping_covers_at_least_25_figures_and_validates(capsys):
    mappings, issues = load_mapping(SHIPPED_KB / "parameters.yaml")
    assert not issues and len(mappings) >= 25
    code, out, err = run_cli(capsys, "validate", "--kb", str(SHIPPED_KB))
    assert code == 0, err


def test_validate_names_file_and_line_of_each_broken_mapping(capsys):
    code, out, err = run_cli(capsys, "validate", "--kb", str(SAMPLE_KB))
    assert code == 1
    lines = [line for line in err.splitlines() if "parameters.yaml" in line]
    assert len(lines) == 3, err
    text = (SAMPLE_KB / "parameters.yaml").read_text(encoding="utf-8").splitlines()
    for line, code_name, reason in zip(lines, ("T_MAX", "T_GONE", "T_NOENTRY"), ("mehrdeutig", "kein Fakt", "gibt es nicht")):
        number = int(line.split("parameters.yaml:")[1].split(":")[0])
        assert text[number - 1].strip() == f"- code: {code_name}" and reason in line


def test_mapping_form_errors_carry_their_line():
    items, issues = parse_mapping("parameters:\n  - code: A\n    entry: pv-a\n    fact: x\n    unit: Euro\n"
                                  "  - code: A\n    entry: pv-a\n    fact: y\n    unit: EUR\n    typo: 1\n"
                                  "  - code: A\n    entry: pv-a\n    fact: z\n    unit: EUR\n")
    assert [(i.line, i.message.split(" ")[0]) for i in issues] == [(2, "A:"), (10, "unbekanntes"), (11, "code")]
    assert [i.fact for i in items] == ["y"]


def test_dump_gives_back_the_same_items():
    mappings, _ = load_mapping(SHIPPED_KB / "parameters.yaml")
    again, issues = parse_mapping(dump_mapping(mappings))
    assert not issues
    assert [m.as_dict() for m in again] == [m.as_dict() for m in mappings]
    # the shipped file is written the same way: an export of an unchanged mapping changes nothing
    assert dump_mapping(mappings) == (SHIPPED_KB / "parameters.yaml").read_text(encoding="utf-8")


# --- the check ----------------------------------------------------------------------------------

def sample_results(date: dt.date):
    kb = load_knowledge_base(SAMPLE_KB)
    mappings, _ = load_mapping(SAMPLE_KB / "parameters.yaml")
    params = read_parameters_csv((DATA / "sample.csv").read_text(encoding="utf-8"))
    return {r.code: r for r in check_parameters(params, mappings, kb.entries, [(date, None)])}


def test_each_case_of_the_sample():
    results = sample_results(dt.date(2026, 6, 30))
    status = {code: r.status for code, r in results.items()}
    assert status == {
        "T_MONTH": MATCH, "T_EXTRA": MATCH, "T_RATE_EE": MATCH, "T_FLAT": MATCH,
        "T_DAY": MISSING,  # 33 from 2025; the knowledge base has 36 for 2026
        "T_RATE_ER": DIFFERS,  # a 2026 version, but 2,0 instead of 2,10 %
        "T_MAX": NO_FACT, "T_GONE": NO_FACT, "T_NOENTRY": NO_FACT,
        "T_ABSENT": ABSENT, "T_UNKNOWN": UNMAPPED,
    }
    differs = results["T_RATE_ER"]
    assert (differs.version.value, differs.fact.number, differs.entry.id, differs.entry.stand) == ("2.0", 2.1, "pv-t-02", "2026-01")
    assert "mehrdeutig" in results["T_MAX"].message


def test_a_year_the_knowledge_base_has_no_figure_for_is_not_checked():
    results = sample_results(dt.date(2027, 1, 1))
    assert results["T_RATE_ER"].status == KB_MISSING and "kein Wert bekannt" in results["T_RATE_ER"].message
    assert results["T_FLAT"].status == MATCH  # undated: valid from its Stand on


def test_default_dates_add_next_january_for_codes_with_next_years_figures():
    kb = load_knowledge_base(SAMPLE_KB)
    mappings, _ = load_mapping(SAMPLE_KB / "parameters.yaml")
    plan = check_dates(mappings, kb.entries, dt.date(2026, 12, 3))
    assert plan == [(dt.date(2026, 12, 3), None), (dt.date(2027, 1, 1), {"T_RATE_EE", "T_RATE_ER"})]
    assert check_dates(mappings, kb.entries, dt.date(2026, 12, 3), dt.date(2026, 5, 1)) == [(dt.date(2026, 5, 1), None)]


def test_last_years_values_report_every_changed_figure_with_its_citation_and_nothing_else(capsys):
    code, out, err = run_cli(capsys, "check-params", str(DATA / "last-year-2025.csv"), "--date", "2026-03-01",
                             "--kb", str(SHIPPED_KB), "--json")
    assert code == 1
    data = json.loads(out)
    reported = {r["code"]: r for r in data["results"] if r["status"] != MATCH}
    assert set(reported) == set(CHANGED_2026)
    for c, (value, entry_id) in CHANGED_2026.items():
        r = reported[c]
        assert r["status"] == MISSING and r["knowledge_base"]["value"] == pytest.approx(value)
        assert r["knowledge_base"]["entry"] == entry_id and r["knowledge_base"]["stand"] == "2026-01"
    assert data["summary"][MATCH] == len(data["results"]) - len(CHANGED_2026)
    # the human report: one line per changed figure, citing entry and Stand, then the summary
    code, out, err = run_cli(capsys, "check-params", str(DATA / "last-year-2025.csv"), "--date", "2026-03-01",
                             "--kb", str(SHIPPED_KB))
    lines = out.strip().splitlines()
    assert len(lines) == len(CHANGED_2026) + 1 and lines[-1].startswith("Geprüft zum 2026-03-01")
    for c, (_, entry_id) in CHANGED_2026.items():
        assert any(f" {c} " in line and f"[{entry_id}]" in line and "Stand 2026-01" in line for line in lines)
    assert err == ""


def test_exit_codes_and_output_channels(capsys, tmp_path):
    code, out, err = run_cli(capsys, "check-params", str(DATA / "sample.csv"), "--kb", str(SAMPLE_KB), "--date", "2026-13-01")
    assert code == 2 and err.startswith("Fehler: --date") and out == ""
    code, out, err = run_cli(capsys, "check-params", str(tmp_path / "none.csv"), "--kb", str(SAMPLE_KB))
    assert code == 1 and "nicht lesbar" in err and out == ""
    bad = tmp_path / "bad.csv"
    bad.write_text("code;wert\nA;1\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "check-params", str(bad), "--kb", str(SAMPLE_KB))
    assert code == 1 and f"{bad}:1: Spalte 'valid_from' fehlt" in err and out == ""
    ok = tmp_path / "ok.csv"
    ok.write_text("code;value;valid_from\nT_MONTH;1100;2026-01-01\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "check-params", str(ok), "--kb", str(SAMPLE_KB), "--date", "2026-02-01", "--json")
    data = json.loads(out)  # nothing but JSON on stdout
    assert data["summary"][MATCH] == 1 and code == 1  # the mapping's broken items still fail the check


def test_the_payroll_bridge_reaches_the_engine_only_through_its_services():
    import ast
    bridge = ROOT / "pv_agent_payroll"
    manifest = ast.literal_eval((bridge / "__manifest__.py").read_text(encoding="utf-8"))
    assert manifest["depends"] == ["pv_agent", "hr_payroll"] and manifest["auto_install"] is True
    for path in (bridge / "models").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in names if "engine" in m or m.startswith("odoo.addons.pv_agent.")], path
