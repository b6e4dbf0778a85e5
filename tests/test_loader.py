"""Loading and validating the knowledge base: every error with file and line, the rest kept."""
from __future__ import annotations

import json

import pytest

from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.registry import check_registry, write_registry

from kbfactory import entry_text, write_kb


def _errors(result, file):
    return [e for e in result.errors if e.file.endswith(file)]


def test_good_knowledge_base_loads_without_errors(kb_dir):
    result = load_knowledge_base(kb_dir)
    assert result.errors == []
    assert sorted(e.id for e in result.entries) == ["pv-dg-01", "pv-sz-01", "pv-sz-02", "pv-ues-01", "pv-url-01"]
    entry = next(e for e in result.entries if e.id == "pv-sz-01")
    assert entry.stand == "2025-01" and entry.topic == "sonderzahlungen" and entry.official is True
    assert entry.tags == ("Sonderzahlungen", "SZ", "13. Bezug")
    assert entry.body.startswith("## Zusammenfassung")
    assert len(entry.content_hash) == 64


BROKEN = {
    "no-frontmatter.md": ("Nur Text ohne Frontmatter\n", 1, "Frontmatter fehlt"),
    "unclosed.md": ("---\nid: unclosed\ntitle: x\n", 1, "nicht mit '---' geschlossen"),
    "bad-yaml.md": ("---\nid: bad-yaml\ntitle: [unclosed\nstand: '2025-01'\n---\n## Zusammenfassung\nx\n", 4, "in Zeile 3"),
    "bad-indent.md": ("---\nid: bad-indent\ntitle: x\n  stand: '2025-01'\n---\n## Zusammenfassung\nx\n", 4, "YAML-Fehler"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_unparseable_files_are_reported_with_line_and_skipped(kb_dir, name):
    text, line, message = BROKEN[name]
    (kb_dir / "dokumente" / name).write_text(text, encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    errors = _errors(result, name)
    assert len(errors) == 1
    assert errors[0].line == line and message in errors[0].message
    assert len(result.entries) == 5  # the good entries are all still there


FIELD_ERRORS = [
    ("missing-stand", {"stand": None}, 'stand', "Pflichtfeld 'stand' fehlt"),
    ("bad-month", {"stand": "2025-13"}, "stand", "ungültiger stand '2025-13'"),
    ("bad-stand-format", {"stand": "2025"}, "stand", "ungültiger stand"),
    ("bad-topic", {"topic": "Sonder Zahlungen"}, "topic", "ungültiges topic"),
    ("bad-source", {"source": "blog"}, "source", "unbekannte source 'blog'"),
]


def _with_field(text: str, key: str, value) -> str:
    lines = text.split("\n")
    out = []
    for line in lines:
        if line.startswith(f"{key}:"):
            if value is None:
                continue
            line = f'{key}: "{value}"' if key == "stand" else f"{key}: {value}"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("entry_id,change,key,message", FIELD_ERRORS)
def test_invalid_fields_are_reported_at_their_line(kb_dir, entry_id, change, key, message):
    text = entry_text(entry_id, "Titel")
    for k, v in change.items():
        text = _with_field(text, k, v)
    (kb_dir / "dokumente" / f"{entry_id}.md").write_text(text, encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    errors = _errors(result, f"{entry_id}.md")
    assert errors and message in errors[0].message
    expected_line = next((i for i, l in enumerate(text.split("\n"), 1) if l.startswith(f"{key}:")), 1)
    assert errors[0].line == expected_line
    assert entry_id not in {e.id for e in result.entries}


def test_id_must_match_file_name_and_pattern(kb_dir):
    (kb_dir / "dokumente" / "pv-x-01.md").write_text(entry_text("pv-x-02", "T"), encoding="utf-8")
    (kb_dir / "dokumente" / "Bad_Id.md").write_text(entry_text("Bad_Id", "T"), encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    assert "passt nicht zum Dateinamen" in _errors(result, "pv-x-01.md")[0].message
    assert "ungültige id 'Bad_Id'" in _errors(result, "Bad_Id.md")[0].message
    assert _errors(result, "pv-x-01.md")[0].line == 2


def test_list_fields_and_official_are_type_checked(kb_dir):
    text = entry_text("pv-x-03", "T").replace("tags: []", "tags: nur-ein-text").replace("official: true", "official: vielleicht")
    (kb_dir / "dokumente" / "pv-x-03.md").write_text(text, encoding="utf-8")
    messages = [e.message for e in _errors(load_knowledge_base(kb_dir), "pv-x-03.md")]
    assert any("'tags' muss eine Liste" in m for m in messages)
    assert any("'official' muss true oder false" in m for m in messages)


def test_briefing_body_must_have_the_fixed_sections(kb_dir):
    text = entry_text("pv-x-04", "T").replace("## Rechtsgrundlagen\n- § 67 EStG\n\n", "")
    (kb_dir / "dokumente" / "pv-x-04.md").write_text(text, encoding="utf-8")
    wrong_first = entry_text("pv-x-05", "T").replace("## Zusammenfassung", "## Einleitung")
    (kb_dir / "dokumente" / "pv-x-05.md").write_text(wrong_first, encoding="utf-8")
    empty = entry_text("pv-x-06", "T").split("\n## Zusammenfassung")[0] + "\n"
    (kb_dir / "dokumente" / "pv-x-06.md").write_text(empty, encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    assert "fehlt: Rechtsgrundlagen" in _errors(result, "pv-x-04.md")[0].message
    assert "erster Abschnitt muss '## Zusammenfassung'" in _errors(result, "pv-x-05.md")[0].message
    assert "Text fehlt" in _errors(result, "pv-x-06.md")[0].message


def test_statute_entries_may_use_their_own_sections(kb_dir):
    text = entry_text("ris-estg-67", "§ 67 EStG", source="gesetz")
    text = text.split("\n## Zusammenfassung")[0] + "\n## Zusammenfassung\nx\n\n## Abs 1 – Sonstige Bezüge\ny\n"
    (kb_dir / "dokumente" / "ris-estg-67.md").write_text(text, encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    assert result.errors == []
    assert "ris-estg-67" in {e.id for e in result.entries}


def test_duplicate_id_in_two_subfolders_keeps_the_first_and_names_it(kb_dir):
    for folder in ("a", "b"):
        (kb_dir / "dokumente" / folder).mkdir()
        (kb_dir / "dokumente" / folder / "pv-dup-01.md").write_text(entry_text("pv-dup-01", folder), encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    errors = [e for e in result.errors if "doppelte id" in e.message]
    assert len(errors) == 1
    assert errors[0].file == "dokumente/b/pv-dup-01.md" and errors[0].line == 2
    assert "dokumente/a/pv-dup-01.md" in errors[0].message
    assert [e.title for e in result.entries if e.id == "pv-dup-01"] == ["a"]


def test_dangling_cross_ref_is_an_error_but_the_entry_stays(kb_dir):
    text = entry_text("pv-x-07", "T", cross_refs=["pv-sz-01", "pv-gibt-es-nicht"])
    (kb_dir / "dokumente" / "pv-x-07.md").write_text(text, encoding="utf-8")
    result = load_knowledge_base(kb_dir)
    errors = _errors(result, "pv-x-07.md")
    assert len(errors) == 1 and "cross_ref 'pv-gibt-es-nicht'" in errors[0].message
    assert errors[0].line == 8
    entry = next(e for e in result.entries if e.id == "pv-x-07")
    assert entry.cross_refs == ("pv-sz-01",)


def test_binary_huge_and_non_utf8_files_are_reported(kb_dir):
    docs = kb_dir / "dokumente"
    (docs / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (docs / "huge.md").write_bytes(b"---\n" + b"x" * (3 * 1024 * 1024))
    (docs / "latin1.md").write_bytes(entry_text("latin1", "Gr\u00fc\u00dfe").replace("\u20ac", "EUR").encode("latin-1"))
    result = load_knowledge_base(kb_dir)
    assert "keine Textdatei" in _errors(result, "binary.md")[0].message
    assert "zu groß" in _errors(result, "huge.md")[0].message
    assert "kein gültiges UTF-8" in _errors(result, "latin1.md")[0].message
    assert len(result.entries) == 5


def test_crlf_and_bom_files_load_like_the_others(kb_dir):
    text = entry_text("pv-x-08", "Windows-Datei").replace("\n", "\r\n")
    (kb_dir / "dokumente" / "pv-x-08.md").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    result = load_knowledge_base(kb_dir)
    assert result.errors == []
    entry = next(e for e in result.entries if e.id == "pv-x-08")
    assert "\r" not in entry.body and entry.title == "Windows-Datei"


def test_missing_folder_is_reported():
    result = load_knowledge_base("/nonexistent/kb")
    assert result.entries == [] and "nicht gefunden" in result.errors[0].message


def test_registry_is_generated_and_drift_is_detected(kb_dir):
    result = load_knowledge_base(kb_dir)
    assert "kb.json fehlt" in check_registry(kb_dir, result)[0].message
    write_registry(kb_dir, result)
    assert check_registry(kb_dir, result) == []
    data = json.loads((kb_dir / "kb.json").read_text())
    assert data["count"] == 5 and data["clusters"]["sonderzahlungen"] == 2
    assert "pv-sz-01" in (kb_dir / "INDEX.md").read_text()
    # an entry edited after the registry was written
    path = kb_dir / "dokumente" / "pv-sz-02.md"
    path.write_text(path.read_text().replace("Ein Sechstel", "Ein geändertes Sechstel").replace("ein Sechstel", "EIN Sechstel"))
    (kb_dir / "dokumente" / "pv-new-01.md").write_text(entry_text("pv-new-01", "Neu"), encoding="utf-8")
    messages = [i.message for i in check_registry(kb_dir, load_knowledge_base(kb_dir))]
    assert any("'pv-sz-02' wurde geändert" in m for m in messages)
    assert any("'pv-new-01' fehlt in kb.json" in m for m in messages)
