"""Writing entries back as markdown (the way back from Odoo to the folder): every file of the
sample knowledge base survives parse → write → parse unchanged, written files pass validate,
and the section diffs name what changed."""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pv_agent.engine.kb.loader import load_knowledge_base, parse_entry_text
from pv_agent.engine.types import Entry
from pv_agent.engine.kb.writer import (changed_sections, entry_file_path, entry_to_markdown, sections,
                                    side_by_side)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "wissensbasis"

BODY = """## Zusammenfassung
Text.

## Kernwerte & Fristen
- Grenze: 551,10 €

## Rechtsgrundlagen
- § 5 ASVG

## Payroll-Relevanz (Odoo)
Parameter.

## Verweise
- keine"""


def _same(a: Entry, b: Entry) -> bool:
    return a.metadata() == b.metadata() and a.body.strip() == b.body.strip()


def test_every_sample_entry_round_trips():
    result = load_knowledge_base(SAMPLE)
    assert len(result.entries) > 100
    for entry in result.entries:
        back, issues = parse_entry_text(entry_to_markdown(entry), entry.path, expected_id=entry.id)
        assert issues == [], (entry.id, issues)
        assert _same(entry, back), entry.id


@pytest.mark.parametrize("title,tags,source_ref", [
    ('Titel mit "Anführungszeichen": und Doppelpunkt', ("2025", "yes", "a: b", "# kein Kommentar"), ""),
    ("- beginnt wie eine Liste", ("[eckig]", "{geschweift}", "Backslash \\ und Tab\tmitten"), "S1 „Quelle“ – 2026"),
    ("true", ("null", "~", "'einfach'"), "100"),
])
def test_awkward_values_round_trip(title, tags, source_ref):
    entry = Entry(id="pv-x-01", title=title, stand="2026-01", topic="sv", source="briefing", body=BODY,
                  official=False, tags=tags, legal_bases=("§ 67 Abs 1 EStG",), cross_refs=("pv-a-01", "2025"),
                  source_ref=source_ref, path="dokumente/pv-x-01.md")
    back, issues = parse_entry_text(entry_to_markdown(entry), "dokumente/pv-x-01.md", expected_id="pv-x-01")
    assert issues == []
    assert _same(entry, back)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=ROOT, capture_output=True, text=True)


def test_written_folder_passes_validate(tmp_path):
    """Every file rewritten: validate finds only the outdated kb.json; after `registry` none."""
    kb = tmp_path / "kb"
    shutil.copytree(SAMPLE, kb)
    result = load_knowledge_base(kb)
    for entry in result.entries:
        (kb / entry.path).write_text(entry_to_markdown(entry), encoding="utf-8")
    run = _cli("validate", "--kb", str(kb))
    assert run.returncode == 1 and "kb.json ist veraltet" in run.stderr  # files are fine, the registry is old
    assert "dokumente/" not in run.stderr.replace(str(kb), ""), run.stderr[:2000]
    assert _cli("registry", "--kb", str(kb)).returncode == 0
    run = _cli("validate", "--kb", str(kb))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "0 Fehler" in run.stdout


def test_file_path_stays_inside_the_folder():
    entry = Entry(id="pv-x-01", title="t", stand="2026-01", topic="sv", source="briefing", body=BODY)
    assert entry_file_path(entry) == "dokumente/pv-x-01.md"
    for bad in ("../../etc/pv-x-01.md", "/tmp/pv-x-01.md", "dokumente/other.md", "dokumente/./pv-x-01.md"):
        assert entry_file_path(dataclasses.replace(entry, path=bad)) == "dokumente/pv-x-01.md", bad
    assert entry_file_path(dataclasses.replace(entry, path="dokumente/sv/pv-x-01.md")) == "dokumente/sv/pv-x-01.md"


def test_changed_sections_name_only_the_changed_one():
    new = BODY.replace("551,10 €", "551,11 €") + "\n\n## Neu\nZusatz"
    changes = changed_sections(BODY, new)
    assert [(c["section"], c["status"]) for c in changes] == [("Kernwerte & Fristen", "changed"), ("Neu", "added")]
    assert "-- Grenze: 551,10 €" in changes[0]["diff"] and "+- Grenze: 551,11 €" in changes[0]["diff"]
    assert changed_sections(BODY, BODY) == []
    removed = changed_sections(BODY, BODY.split("\n## Verweise")[0])
    assert [(c["section"], c["status"]) for c in removed] == [("Verweise", "removed")]
    assert [h for h, _ in sections(BODY)][0] == "Zusammenfassung"


def test_side_by_side_pairs_changed_lines():
    rows = side_by_side("a\nb\nc", "a\nB\nc\nd")
    assert rows == [("equal", "a", "a"), ("changed", "b", "B"), ("equal", "c", "c"), ("right", "", "d")]
