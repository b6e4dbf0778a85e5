"""Intake of raw statutes, collective agreements and decisions (sample files in tests/data/intake/)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pv_agent.engine.kb.chunker import chunk_entry
from pv_agent.engine.kb.intake import IntakeError, IntakeOptions, intake, sections_of, read_source
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import check_registry, write_registry

DATA = Path(__file__).parent / "data" / "intake"


def _intake(family: str, kb: Path, src: Path | None = None, **kw):
    options = IntakeOptions(family=family, stand="2025-01", topic="urlaub", **kw)
    return intake(src or DATA / family, kb, options)


def _entries(kb: Path) -> dict:
    result = load_knowledge_base(kb)
    assert result.errors == []
    return {e.id: e for e in result.entries}


def test_every_family_gets_its_id_space_and_the_output_validates(tmp_path):
    kb = tmp_path / "kb"
    for family in ("gesetz", "kv", "rechtsprechung"):
        assert _intake(family, kb).errors == []
    result = load_knowledge_base(kb)
    write_registry(kb, result)  # what `tools/pv-agent registry` does
    assert result.errors == [] and check_registry(kb, load_knowledge_base(kb)) == []
    entries = {e.id: e for e in result.entries}
    assert sorted(entries) == ["kv-handel-angestellte", "ris-estg-67", "ris-urlg-auszug", "rj-ogh-9oba1-99z"]
    assert {e.source for e in entries.values()} == {"gesetz", "kv", "rechtsprechung"}
    assert all(e.stand == "2025-01" and e.topic == "urlaub" for e in entries.values())


def test_official_by_family_and_by_flag(tmp_path):
    _intake("gesetz", tmp_path / "a")
    _intake("kv", tmp_path / "a")
    entries = _entries(tmp_path / "a")
    assert entries["ris-urlg-auszug"].official is True
    assert entries["kv-handel-angestellte"].official is False  # a collective agreement is a reproduction
    _intake("gesetz", tmp_path / "b", official=False)
    assert _entries(tmp_path / "b")["ris-urlg-auszug"].official is False


def test_plain_text_statute_keeps_its_paragraph_headings_and_url(tmp_path):
    _intake("gesetz", tmp_path / "kb")
    entry = _entries(tmp_path / "kb")["ris-urlg-auszug"]
    assert entry.title == "Urlaubsgesetz – Auszug (Beispieltext für die Tests)"
    assert entry.source_ref.startswith("https://www.ris.bka.gv.at/")
    assert "Quelle:" not in entry.body
    headings = [line for line in entry.body.split("\n") if line.startswith("## ")]
    assert headings == ["## Zusammenfassung", "## § 2. Ausmaß des Urlaubes", "## § 10. Urlaubsersatzleistung"]
    assert "\\# Diese Zeile" in entry.body  # a '#' line of plain text does not become a heading


def test_markdown_title_headings_and_table(tmp_path):
    _intake("gesetz", tmp_path / "kb")
    entry = _entries(tmp_path / "kb")["ris-estg-67"]
    assert entry.title == "§ 67 EStG – Sonstige Bezüge (Beispieltext)"
    assert entry.legal_bases == ("§ 67 EStG",)
    assert entry.source_ref == "gesetz/estg-67.md"  # no URL given: the file is kept
    assert "## Absatz 1 – feste Steuersätze" in entry.body
    assert "**Freigrenze**" in entry.body  # a deeper heading stays inside its section
    assert "| zweite Stufe | 6 % |" in entry.body


def test_html_drops_scripts_styles_navigation_and_keeps_tables(tmp_path):
    _intake("kv", tmp_path / "kb")
    entry = _entries(tmp_path / "kb")["kv-handel-angestellte"]
    assert entry.title == "Kollektivvertrag Handel – Angestellte (Beispieltext)"  # the h1, not the <title>
    assert entry.source_ref == "https://example.org/kv/handel-angestellte"
    for unwanted in ("Skript-Text", "nicht übernehmen", "Stil-Text", "Startseite", "Beispielkammer"):
        assert unwanted not in entry.body
    assert "| A 2 | 2.100 € |" in entry.body
    assert "## Zulagen & Zuschläge" in entry.body
    assert "- Fälligkeit der Urlaubsbeihilfe: im Beispiel mit dem Junigehalt\n- Fälligkeit" in entry.body


def test_long_text_without_headings_is_split_at_paragraph_boundaries(tmp_path):
    _intake("rechtsprechung", tmp_path / "kb", section_chars=1500)
    entry = _entries(tmp_path / "kb")["rj-ogh-9oba1-99z"]
    sections = [line[3:] for line in entry.body.split("\n") if line.startswith("## ")]
    assert sections[0] == "Zusammenfassung"
    assert len(sections) >= 4 and all(s.startswith(f"Abschnitt {n} – ") for n, s in enumerate(sections[1:], 1))
    source_paragraphs = read_source(DATA / "rechtsprechung" / "ogh-9oba1-99z.txt").blocks
    for block in source_paragraphs:  # every paragraph survives whole
        assert block.text in entry.body
    assert all(len(c.text) <= 1500 for c in chunk_entry(entry) if c.section != "Zusammenfassung")


def test_rerun_is_idempotent_and_reports_changes(tmp_path):
    kb, src = tmp_path / "kb", tmp_path / "gesetz"
    shutil.copytree(DATA / "gesetz", src)
    first = _intake("gesetz", kb, src)
    assert sorted(first.created) == ["ris-estg-67", "ris-urlg-auszug"]
    mtimes = {p.name: p.stat().st_mtime_ns for p in (kb / "dokumente").iterdir()}
    again = _intake("gesetz", kb, src)
    assert (again.created, again.updated, sorted(again.unchanged)) == ([], [], ["ris-estg-67", "ris-urlg-auszug"])
    assert {p.name: p.stat().st_mtime_ns for p in (kb / "dokumente").iterdir()} == mtimes  # nothing rewritten
    path = src / "estg-67.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nEin neuer Absatz.\n", encoding="utf-8")
    changed = _intake("gesetz", kb, src)
    assert (changed.created, changed.updated, changed.unchanged) == ([], ["ris-estg-67"], ["ris-urlg-auszug"])


def test_existing_entry_from_another_source_is_not_overwritten(tmp_path):
    kb = tmp_path / "kb"
    (kb / "dokumente").mkdir(parents=True)
    own = kb / "dokumente" / "ris-estg-67.md"
    own.write_text("---\nid: ris-estg-67\nsource_ref: \"S16\"\n---\n## Zusammenfassung\nHandgeschrieben.\n", encoding="utf-8")
    report = _intake("gesetz", kb)
    assert [e["file"] for e in report.errors] == ["gesetz/estg-67.md"]
    assert "Handgeschrieben." in own.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "change,message",
    [({"stand": "2025"}, "stand"), ({"stand": "2025-13"}, "stand"), ({"topic": "Urlaub Recht"}, "topic"), ({"family": "briefing"}, "Quellenart")],
)
def test_bad_options_are_refused(tmp_path, change, message):
    options = dict(family="gesetz", stand="2025-01", topic="urlaub") | change
    with pytest.raises(IntakeError, match=message):
        intake(DATA / "gesetz", tmp_path / "kb", IntakeOptions(**options))
    assert not (tmp_path / "kb").exists()


def test_summary_is_the_text_before_the_first_heading_or_the_first_paragraphs():
    source = read_source(DATA / "gesetz" / "urlg-auszug.txt")
    sections = sections_of(source)
    assert sections[0][0] == "Zusammenfassung" and sections[0][1].startswith("Dieser Beispieltext")
    source.blocks = [b for b in source.blocks if not b.text.startswith("Dieser")]  # no preamble
    first = sections_of(source)
    assert first[0][1].startswith("**§ 2. Ausmaß des Urlaubes**\n\n(1) Dem Arbeitnehmer")  # moved, heading kept
