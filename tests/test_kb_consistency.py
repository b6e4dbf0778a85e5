"""``validate``'s contradiction checks (pv_agent/engine/kb/consistency.py).

The audit of December 2026 found wrong titles that contradicted their own entry's text:
pv-rk-07 ("ab 3 Stunden" against "mehr als 3 Stunden"), pv-mk-02 ("der Dienstgeber zahlt nichts"
against "… zahlt der Dienstgeber weiter") and pv-zs-03 ("der ganze Betrag" against "offen").
``tests/data/kb-before-issue30`` holds those entries as they shipped before the fix; the check
must flag them there and pass the shipped knowledge base.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from pv_agent.engine.kb.consistency import consistency_issues
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import write_registry
from tools.cli import validate as validate_cli

from kbfactory import entry_text

ROOT = Path(__file__).resolve().parents[1]
BEFORE = ROOT / "tests" / "data" / "kb-before-issue30"
SHIPPED = ROOT / "wissensbasis"


def issues_of(kb_dir: Path) -> list[tuple[str, int, str]]:
    result = load_knowledge_base(kb_dir)
    return [(Path(i.file).stem, i.line, i.message) for i in consistency_issues(kb_dir, result.entries)]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if needle in line)


def write_kb(root: Path, texts: dict[str, str]) -> Path:
    docs = root / "dokumente"
    docs.mkdir(parents=True)
    for entry_id, text in texts.items():
        (docs / f"{entry_id}.md").write_text(text, encoding="utf-8")
    return root


# Today's files before the fix ---------------------------------------------------------------
def test_flags_the_limit_word_contradiction_of_pv_rk_07_before_the_fix():
    found = [i for i in issues_of(BEFORE) if i[0] == "pv-rk-07"]
    path = BEFORE / "dokumente" / "pv-rk-07.md"
    assert {line for _, line, _ in found} == {line_of(path, "title:"), line_of(path, "Unter 3 Stunden")}
    assert all("mehr als 3 Stunden" in message for _, _, message in found)
    assert any("„ab 3 Stunden“" in message for _, _, message in found)


def test_flags_the_absolute_titles_of_pv_mk_02_and_pv_zs_03_before_the_fix():
    found = {(eid, line): message for eid, line, message in issues_of(BEFORE) if eid in ("pv-mk-02", "pv-zs-03")}
    assert set(found) == {("pv-mk-02", 3), ("pv-zs-03", 3)}  # line 3: the title
    assert "„nichts“" in found[("pv-mk-02", 3)] and "Dienstgeber" in found[("pv-mk-02", 3)]
    assert "„der ganze“" in found[("pv-zs-03", 3)] and "offen" in found[("pv-zs-03", 3)]


def test_the_fixed_entries_and_the_whole_shipped_kb_pass():
    assert issues_of(SHIPPED) == []
    fixed = {Path(p).stem for p in (BEFORE / "dokumente").glob("*.md")}
    assert {"pv-rk-07", "pv-mk-02", "pv-zs-03"} <= fixed


def test_validate_fails_on_the_old_files_with_file_and_line(tmp_path, capsys):
    kb_dir = tmp_path / "kb"
    shutil.copytree(BEFORE, kb_dir)
    write_registry(kb_dir, load_knowledge_base(kb_dir))
    assert validate_cli.run(SimpleNamespace(kb=str(kb_dir), json=False)) == 1
    err = capsys.readouterr().err
    assert "dokumente/pv-rk-07.md:3: Grenze widersprüchlich" in err
    assert "dokumente/pv-mk-02.md:3: Titel sagt „nichts“" in err


def test_validate_passes_on_the_shipped_kb(capsys):
    assert validate_cli.run(SimpleNamespace(kb=str(SHIPPED), json=False)) == 0
    assert "0 Fehler" in capsys.readouterr().out


# Each check on small knowledge bases -----------------------------------------------------------
def test_limit_words_quoted_text_and_conflict_marked_entries_are_left_alone(tmp_path):
    kb_dir = write_kb(tmp_path, {
        "pv-rk-07": entry_text("pv-rk-07", "Tagesgeld bei mehr als 3 Stunden",
                               summary="Erst bei mehr als 3 Stunden. Vorher stand „ab 3 Stunden“."),
        "pv-rk-08": entry_text("pv-rk-08", "⚠ Nächtigung ab 3 Stunden (laut Quelle A)",
                               summary="Quelle B sagt mehr als 3 Stunden."),
        "pv-rk-09": entry_text("pv-rk-09", "Reise ab 12 Stunden",
                               summary="Volles Tagesgeld ab 12 Stunden.", payroll="Bei mehr als 12 Stunden voll."),
    })
    found = issues_of(kb_dir)
    assert [(eid, "12 h" in message) for eid, _, message in found] == [("pv-rk-09", True)]
    assert line_of(kb_dir / "dokumente" / "pv-rk-09.md", "Bei mehr als 12 Stunden") == found[0][1]


def test_title_figure_the_text_does_not_give(tmp_path):
    kb_dir = write_kb(tmp_path, {
        "pv-ho-01": entry_text("pv-ho-01", "Telearbeitspauschale – 3 € pro Tag, 300 € im Jahr",
                               summary="Bis 3 € je Tag.", key_values="- Jahreshöchstbetrag: 250 €"),
    })
    assert [(eid, line, "300 €" in message) for eid, line, message in issues_of(kb_dir)] == [("pv-ho-01", 3, True)]


def test_absolute_title_without_a_reservation_passes(tmp_path):
    kb_dir = write_kb(tmp_path, {
        "pv-mk-02": entry_text("pv-mk-02", "Wochengeld – der Dienstgeber zahlt nichts",
                               summary="Die ÖGK zahlt Wochengeld.", key_values="- Sonderzahlungen: im Wochengeld enthalten"),
    })
    assert issues_of(kb_dir) == []
    text = (kb_dir / "dokumente" / "pv-mk-02.md").read_text(encoding="utf-8")
    (kb_dir / "dokumente" / "pv-mk-02.md").write_text(
        text.replace("Die ÖGK zahlt Wochengeld.", "Den BV-Beitrag zahlt der Dienstgeber weiter."), encoding="utf-8")
    assert [(eid, line) for eid, line, _ in issues_of(kb_dir)] == [("pv-mk-02", 3)]


def test_stale_reference_titles(tmp_path):
    kb_dir = write_kb(tmp_path, {
        "pv-sz-05": entry_text("pv-sz-05", "Freigrenze 2026 – 2.615 €", summary="2026: 2.615 €.",
                               key_values="- Wert: 2.615 €"),
        "pv-sz-04": entry_text("pv-sz-04", "Freigrenze 2025", summary="2025: 2.570 €.", key_values="- Wert: 2.570 €",
                               cross_refs=["pv-sz-05"]),
    })
    path = kb_dir / "dokumente" / "pv-sz-04.md"
    path.write_text(path.read_text(encoding="utf-8").replace("- [pv-sz-05] Verweis", "- [pv-sz-05] Freigrenze 2026 – 2.600 €"),
                    encoding="utf-8")
    found = issues_of(kb_dir)
    assert [(eid, line) for eid, line, _ in found] == [("pv-sz-04", line_of(path, "- [pv-sz-05]"))]
    assert "2.600 €" in found[0][2] and "'pv-sz-05'" in found[0][2]
    path.write_text(path.read_text(encoding="utf-8").replace("2.600 €", "2.615 €"), encoding="utf-8")
    assert issues_of(kb_dir) == []


def test_same_fact_with_two_values_unless_marked(tmp_path):
    row = "| Wert | 2026 |\n|---|---|\n| Freigrenze sonstige Bezüge | {} |"
    kb_dir = write_kb(tmp_path, {
        "pv-sz-05": entry_text("pv-sz-05", "Freigrenze 2026", key_values=row.format("2.615 €")),
        "pv-sz-13": entry_text("pv-sz-13", "Freigrenze oder Freibetrag", key_values=row.format("2.600 €")),
        "pv-sz-01": entry_text("pv-sz-01", "Sonstige Bezüge", key_values=row.format("2.615 €")),
    })
    found = issues_of(kb_dir)
    assert sorted((eid, "'pv-sz-13'" in m or "'pv-sz-05'" in m or "'pv-sz-01'" in m) for eid, _, m in found) == [
        ("pv-sz-01", True), ("pv-sz-05", True), ("pv-sz-13", True), ("pv-sz-13", True)]
    path = kb_dir / "dokumente" / "pv-sz-13.md"
    path.write_text(path.read_text(encoding="utf-8").replace('title: "Freigrenze oder Freibetrag"',
                                                             'title: "⚠ Freigrenze laut älterer Quelle"'),
                    encoding="utf-8")
    assert issues_of(kb_dir) == []
