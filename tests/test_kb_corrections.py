"""The shipped knowledge base: the nine rule corrections of December 2026 and the provenance rules.

Each test reads the entries as shipped in ``wissensbasis/`` and checks the corrected rule or
figure in the entries named by the audit, so a regression in one entry shows by name. The last
tests check ``validate``'s rejection of internal source references.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from pv_agent.engine.kb.loader import load_knowledge_base
from tools.cli import validate as validate_cli

from kbfactory import entry_text

KB = Path(__file__).resolve().parents[1] / "wissensbasis"


@pytest.fixture(scope="module")
def kb():
    result = load_knowledge_base(KB)
    return {e.id: e for e in result.entries}


def _text(entry) -> str:
    return f"{entry.title}\n{entry.body}"


def _section(entry, name: str) -> str:
    match = re.search(rf"^## {re.escape(name)}\n(.*?)(?=^## |\Z)", entry.body, re.S | re.M)
    assert match, f"{entry.id}: Abschnitt '{name}' fehlt"
    return match.group(1)


# 1. UEL after an unjustified early resignation: the aliquot share of 4 weeks, not 4 weeks.
@pytest.mark.parametrize("eid", ["pv-url-07", "pv-url-04", "pv-url-06", "ris-urlg-10", "rj-eugh-c-233-20"])
def test_uel_unjustified_resignation_is_aliquot_share_of_four_weeks(kb, eid):
    text = _text(kb[eid])
    assert re.search(r"aliquote[nr]? Teil (des [^.]*?)?von 4 Wochen", text), eid
    assert "nur im Ausmaß von 4 Wochen" not in text
    assert "im Ausmaß von 4 Wochen." not in text
    assert "WKO Vorarlberg" in kb[eid].source_ref


def test_uel_example_formula_is_in_the_main_entry(kb):
    assert "20 Arbeitstage ÷ 365" in kb["pv-url-07"].body
    assert "Korrigiert im Dezember 2026" in kb["pv-url-07"].body


# 2. Kontrollsechstel: only at the year's last payroll, not on leaving.
@pytest.mark.parametrize("eid", ["pv-sz-09", "pv-sz-11", "pv-sz-12", "pv-sz-02", "ris-estg-77", "ris-estg-67"])
def test_kontrollsechstel_not_on_leaving(kb, eid):
    text = _text(kb[eid])
    assert "nicht beim Austritt" in text or "beim Austritt nicht" in text, eid
    assert "Konzern" in text, eid
    for wrong in ("oder beim Austritt", "bzw. bei Austritt", "bzw. Austritt", "Abrechnung/Austritt", "im Jahr/Austritt"):
        assert wrong not in text, (eid, wrong)
    assert "ARD 2021/6746" in kb[eid].source_ref


@pytest.mark.parametrize("eid", ["pv-sz-10", "ris-estg-77"])
def test_kontrollsechstel_exceptions_include_familienhospiz(kb, eid):
    assert "Familienhospizkarenz" in kb[eid].body and "Familienhospizteilzeit" in kb[eid].body


# 3. 500-km rule: annual average, halved values confirmed, no month-by-month flag.
@pytest.mark.parametrize("eid", ["pv-sb-05", "pv-sb-06", "pv-sb-07"])
def test_500_km_rule_is_an_annual_average(kb, eid):
    text = _text(kb[eid])
    assert "Jahresdurchschnitt" in text
    for figure in ("1 %", "480 €", "0,75 %", "360 €"):
        assert figure in text, (eid, figure)
    assert "✗" not in text and "nicht verifiziert)" not in kb[eid].title


def test_500_km_payroll_note_does_not_flag_month_by_month(kb):
    payroll = _section(kb["pv-sb-05"], "Payroll-Relevanz (Odoo)")
    assert "nicht Monat für Monat" in payroll
    assert "je Dienstnehmer und Monat" not in payroll
    assert "nicht je Monat" in _section(kb["pv-sb-07"], "Payroll-Relevanz (Odoo)")


# 4. 50 % cap on overtime premiums: every year, not a 2026 novelty.
@pytest.mark.parametrize("eid", ["pv-ues-02", "pv-ues-04", "pv-ues-08", "pv-ues-09", "ris-estg-68"])
def test_fifty_percent_cap_applies_every_year(kb, eid):
    text = _text(kb[eid])
    assert "50 %" in text and re.search(r"in jedem Jahr", text, re.I), eid
    assert "my-taxplan.at" in kb[eid].source_ref


def test_fifty_percent_cap_is_in_the_2025_column(kb):
    assert "| Zuschlag begünstigt | bis 50 % | bis 50 % |" in kb["pv-ues-02"].body
    assert "18 ÜSt, Zuschlag bis 50 %, max. 200 €/Monat" in kb["pv-ues-09"].body
    assert "Zuschlag max. 50 %; rückwirkend" not in kb["pv-ues-08"].body


# 5. CO₂ limit for used cars: year of first registration; WLTP limits 2020–2025.
@pytest.mark.parametrize("eid", ["pv-sb-02", "pv-sb-03", "pv-sb-07"])
def test_co2_limit_by_first_registration_with_wltp_table(kb, eid):
    text = _text(kb[eid])
    assert "Erstzulassung" in text
    for year, limit in (("2020", "141"), ("2021", "138"), ("2022", "135"), ("2023", "132"), ("2024", "129"), ("2025", "126")):
        assert re.search(rf"{year}\D[^\n]*?{limit}|{year} {limit}", text), (eid, year, limit)


# 6. Einschleifregel: added with the known values, unknown values said plainly.
@pytest.mark.parametrize("eid", ["pv-sz-01", "pv-sz-04", "pv-sz-12", "pv-sz-13", "ris-estg-67"])
def test_einschleifregel_with_known_values_and_unknown_said_plainly(kb, eid):
    body = kb[eid].body
    assert "Einschleifregel" in body
    for figure in ("30 %", "2.000 €", "2.330 €"):
        assert figure in body, (eid, figure)
    assert "nicht bekannt" in body
    assert "finanz.at" in kb[eid].source_ref


# 7. Apprentices' AV thresholds per year.
def test_apprentice_av_thresholds_per_year(kb):
    body = kb["pv-sv-15"].body
    assert "| 0 % AV-DN-Anteil | bis 2.074 € | bis 2.225 € |" in body
    assert "| 1 % AV-DN-Anteil | bis 2.262 € | bis 2.427 € |" in body
    assert "| 1,15 % AV-DN-Anteil | über 2.262 € | über 2.427 € |" in body
    assert "nicht im Einzelnen zu" not in body


# 8. § 68 Abs 1: 400 € since 2024 (so 2025 too), +50 % for mainly-night workers.
@pytest.mark.parametrize("eid", ["pv-ues-06", "pv-ues-09"])
def test_section_68_1_400_since_2024_and_night_workers(kb, eid):
    body = kb[eid].body
    assert "400 €" in body and "1.1.2024" in body
    assert re.search(r"überwiegend[^.]*Nacht[^.]*50 %", body), eid
    assert "kein eigener Wert" not in body and "keinen gesonderten Betrag" not in body


# 9. Resolvable conflicts: the overruled entry says so and names the authoritative one.
@pytest.mark.parametrize(
    "overruled, authoritative, figure",
    [("pv-sz-06", "pv-sz-07", "2.447 €"), ("pv-sv-13", "pv-sv-12", "1 %"), ("pv-lst-04", "pv-lst-03", "55 %"),
     ("pv-ues-03", "pv-ues-02", "170 €")],
)
def test_overruled_conflict_entry_names_the_authoritative_one(kb, overruled, authoritative, figure):
    old, new = kb[overruled], kb[authoritative]
    assert "⚠" in old.title and "⚠" in new.title + new.body
    assert "überholt" in _text(old)
    assert authoritative in old.body and authoritative in old.cross_refs + (authoritative,)
    assert figure in old.body and figure in new.body
    assert "überholt" not in new.title


def test_freigrenze_2024_is_resolved_to_2447(kb):
    assert "maßgeblich" in kb["pv-sz-07"].title
    assert "Nicht als Parameter für 2024 verwenden; maßgeblich ist 2.447 €" in kb["pv-sz-06"].body


# Provenance
def test_shipped_kb_has_no_internal_source_references():
    result = load_knowledge_base(KB)
    assert [f"{e.file}:{e.line}: {e.message}" for e in result.errors] == []


def test_every_source_ref_is_a_readable_citation_with_url(kb):
    for entry in kb.values():
        assert "https://" in entry.source_ref or "http://" in entry.source_ref, entry.id


# Authorities: ministries and courts (.gv.at), the social-insurance carriers, the AMS.
AUTHORITY_HOSTS = ("gesundheitskasse.at", ".gv.at", "sozialversicherung.at", "auva.at", "svs.at", "ams.at")


def test_official_only_when_the_main_source_is_an_authority(kb):
    for entry in kb.values():
        hosts = re.findall(r"https?://([^/\s;]+)", entry.source_ref)
        if entry.official:
            assert hosts and hosts[0].endswith(AUTHORITY_HOSTS), (entry.id, hosts)
        if hosts and not any(h.endswith(AUTHORITY_HOSTS) for h in hosts):
            assert not entry.official, (entry.id, hosts)


def test_retailer_and_secondary_sources_are_not_official_or_statute(kb):
    for eid in ("pv-sb-01", "pv-sb-02", "pv-sb-03"):
        assert kb[eid].official is False, eid
    # Issue 30: pv-sb-04's value (E-Auto 0 €) now rests on the ÖGK, listed first; the retailer page stays second.
    assert kb["pv-sb-04"].official is True and kb["pv-sb-04"].source_ref.startswith("ÖGK")
    for eid in ("ris-urlg-2", "ris-alvg-27"):
        assert kb[eid].official is False and kb[eid].source != "gesetz", eid
    assert sorted(e.id for e in kb.values() if e.source == "gesetz") == ["ris-estg-67", "ris-estg-68"]
    # Built from descriptions of the ruling / of the statute, not from a judgment or a collective agreement.
    for eid in ("rj-eugh-c-233-20", "kv-saison-kuendigung"):
        assert kb[eid].source == "wiku", eid


# The validate check itself
def write_kb(root: Path, texts: dict[str, str]) -> Path:
    docs = root / "dokumente"
    docs.mkdir(parents=True)
    for entry_id, text in texts.items():
        (docs / f"{entry_id}.md").write_text(text, encoding="utf-8")
    return root


def test_internal_references_are_reported_with_line_but_entry_still_loads(tmp_path):
    kb_dir = write_kb(tmp_path, {
        "pv-sz-01": entry_text("pv-sz-01", "Sonstige Bezüge", summary="Laut S24 gilt das.\nSiehe Faktenblatt."),
        "pv-sz-02": entry_text("pv-sz-02", "Jahressechstel", summary="ÖStZ 2015/24, S-Bahn und § 67 Abs 1 sind in Ordnung."),
    })
    result = load_knowledge_base(kb_dir)
    assert {e.id for e in result.entries} == {"pv-sz-01", "pv-sz-02"}
    issues = [(Path(e.file).name, e.line, e.message) for e in result.errors]
    text_lines = (kb_dir / "dokumente" / "pv-sz-01.md").read_text(encoding="utf-8").split("\n")
    s24_line = next(i for i, line in enumerate(text_lines, 1) if "S24" in line)
    assert ("pv-sz-01.md", s24_line, "interne Quellennummer 'S24' – Quelle mit Herausgeber, Titel und Datum nennen") in issues
    assert any(name == "pv-sz-01.md" and line == s24_line + 1 and "Faktenblatt" in msg for name, line, msg in issues)
    assert not [i for i in issues if i[0] == "pv-sz-02.md"]


def test_internal_reference_in_source_ref_is_reported(tmp_path):
    text = entry_text("pv-sz-01", "Sonstige Bezüge").replace("official: true", 'official: true\nsource_ref: "S16 § 67 EStG"')
    kb_dir = write_kb(tmp_path, {"pv-sz-01": text})
    errors = load_knowledge_base(kb_dir).errors
    assert [(e.line, "'S16'" in e.message) for e in errors] == [(11, True)]


def test_validate_command_fails_with_file_and_line(tmp_path, capsys):
    kb_dir = write_kb(tmp_path, {"pv-sz-01": entry_text("pv-sz-01", "Sonstige Bezüge", summary="Quelle S16.")})
    from pv_agent.engine.kb.registry import write_registry

    write_registry(kb_dir, load_knowledge_base(kb_dir))
    assert validate_cli.run(SimpleNamespace(kb=str(kb_dir), json=False)) == 1
    err = capsys.readouterr().err  # human lines go to stderr
    assert re.search(r"dokumente/pv-sz-01\.md:\d+: interne Quellennummer 'S16'", err)
