"""Chunking: one chunk per H2 section, key values on their own, long sections split cleanly."""
from __future__ import annotations

from pv_agent.engine.kb.chunker import chunk_entry, split_long
from pv_agent.engine.kb.loader import parse_entry_text

from kbfactory import entry_text


def _entry(**kw):
    entry, issues = parse_entry_text(entry_text("pv-sz-01", "Sonstige Bezüge", **kw), "pv-sz-01.md")
    assert not issues
    return entry


def test_one_chunk_per_section_with_a_metadata_header():
    chunks = chunk_entry(_entry())
    assert [c.section for c in chunks] == [
        "Zusammenfassung", "Kernwerte & Fristen", "Rechtsgrundlagen", "Payroll-Relevanz (Odoo)", "Verweise",
    ]
    assert [c.kind for c in chunks] == ["content", "key_values", "content", "content", "references"]
    assert chunks[1].header == (
        "[pv-sz-01] Sonstige Bezüge · Stand 2025-01 · sonderzahlungen · briefing · Abschnitt: Kernwerte & Fristen"
    )
    assert chunks[1].text.startswith("| Wert | 2025 |")
    assert [c.chunk_id for c in chunks] == [f"pv-sz-01#{i}" for i in range(5)]


def test_non_official_entries_say_so_in_the_header():
    chunks = chunk_entry(_entry(official=False))
    assert "nicht amtlich" in chunks[0].header


def test_editing_one_section_changes_only_that_chunks_hash():
    before = chunk_entry(_entry(summary="Alter Text."))
    after = chunk_entry(_entry(summary="Neuer Text."))
    changed = [b.section for b, a in zip(before, after) if b.content_hash != a.content_hash]
    assert changed == ["Zusammenfassung"]


def test_long_section_is_split_at_paragraph_boundaries():
    paragraphs = [f"Absatz {i}: " + " ".join(["Wort"] * 60) for i in range(8)]
    chunks = chunk_entry(_entry(summary="\n\n".join(paragraphs)), max_chars=800)
    summary_parts = [c for c in chunks if c.section == "Zusammenfassung"]
    assert len(summary_parts) > 1
    for part in summary_parts:
        assert len(part.text) <= 800
        assert part.text.startswith("Absatz ")  # every part starts at a paragraph
        assert "(Teil " in part.header
    assert "\n\n".join(p.text for p in summary_parts) == "\n\n".join(p.strip() for p in paragraphs)


def test_long_table_is_split_between_rows_with_the_header_repeated():
    rows = "\n".join(f"| Zeile {i} | {i},00 € |" for i in range(200))
    table = "| Wert | Betrag |\n|---|---|\n" + rows
    parts = split_long(table, 500)
    assert len(parts) > 3
    for part in parts:
        lines = part.split("\n")
        assert lines[0] == "| Wert | Betrag |" and lines[1] == "|---|---|"
        assert all(line.startswith("| Zeile ") and line.endswith("€ |") for line in lines[2:])
    assert sum(len(p.split("\n")) - 2 for p in parts) == 200


# -- long sections split by the engine's one markdown parse ------------------------------------
def test_long_list_is_split_between_items_never_inside_one():
    items = [f"- Punkt {i}: " + " ".join(["Wort"] * 12) + f"\n  Fortsetzung von Punkt {i}." for i in range(30)]
    text = "\n".join(items)  # a tight list: no blank lines, so the old splitter cut between lines
    parts = split_long(text, 500)
    assert len(parts) > 2 and all(len(p) <= 500 for p in parts)
    for part in parts:
        lines = part.split("\n")
        assert lines[0].startswith("- Punkt ") and lines[-1].startswith("  Fortsetzung von Punkt ")
    assert "\n".join(parts) == text


def test_code_fence_is_never_cut_even_when_longer_than_the_limit():
    fence = "```\n" + "\n".join(f"zeile {i} = {i} * 2" for i in range(80)) + "\n```"
    text = "Einleitung des Abschnitts.\n\n" + fence + "\n\nSchluss des Abschnitts."
    parts = split_long(text, 400)
    assert fence in parts  # one part, whole, although longer than 400
    assert [p for p in parts if "```" in p] == [fence]
    assert parts[0] == "Einleitung des Abschnitts." and parts[-1] == "Schluss des Abschnitts."


def test_list_item_with_a_fence_inside_stays_whole():
    item = "- Beispiel:\n\n  ```\n" + "\n".join(f"  x{i} = {i}" for i in range(60)) + "\n  ```"
    text = item + "\n- Zweiter Punkt.\n- Dritter Punkt."
    parts = split_long(text, 300)
    assert any(p.startswith("- Beispiel:") and p.rstrip().endswith("```") for p in parts)
    assert sum(p.count("```") for p in parts) == 2


def test_heading_stays_with_its_table_and_a_long_table_splits_between_rows():
    table = "| Wert | 2026 |\n|---|---|\n" + "\n".join(f"| Zeile {i} | {i},00 € |" for i in range(60))
    text = "Vorspann.\n\n### Kernwerte\n" + table + "\n\n### Hinweise\n- kurz"
    parts = split_long(text, 600)
    table_parts = [p for p in parts if "| Wert | 2026 |" in p]
    assert len(table_parts) > 1 and "### Kernwerte" in table_parts[0]
    assert all(p.split("\n")[p.split("\n").index("| Wert | 2026 |") + 1] == "|---|---|" for p in table_parts)
    rows = [line for p in table_parts for line in p.split("\n") if line.startswith("| Zeile ")]
    assert rows == [f"| Zeile {i} | {i},00 € |" for i in range(60)]
    assert "### Hinweise\n- kurz" in parts[-1]


def test_a_section_that_fits_is_unchanged():
    text = "### Kernwerte\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- eins\n- zwei"
    assert split_long(text, 2400) == [text]
