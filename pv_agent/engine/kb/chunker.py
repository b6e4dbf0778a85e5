"""Chunk entries into retrieval units (design.md §2).

One chunk per H2 section, each with a header line naming the entry, so a chunk read alone
still says where it comes from. ``Kernwerte & Fristen`` is always a chunk of its own.
A section longer than the limit is split between its markdown blocks (the engine's one parse,
markdown.py) — a table only between rows, with its header rows repeated in every part, a list
only between items, never inside a code fence.
"""
from __future__ import annotations

import hashlib

from . import markdown
from .loader import h2_headings
from ..types import SECTION_KEY_VALUES, SECTION_REFERENCES, Chunk, Entry

PREAMBLE = "Einleitung"


def chunk_entry(entry: Entry, max_chars: int = 2400) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section, text in split_sections(entry.body):
        parts = split_long(text, max_chars)
        for part_no, part in enumerate(parts, start=1):
            label = section if len(parts) == 1 else f"{section} (Teil {part_no}/{len(parts)})"
            header = chunk_header(entry, label)
            ordinal = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=f"{entry.id}#{ordinal}",
                    entry_id=entry.id,
                    ordinal=ordinal,
                    section=section,
                    kind=section_kind(section),
                    header=header,
                    text=part,
                    content_hash=hashlib.sha256(f"{header}\n{part}".encode("utf-8")).hexdigest(),
                )
            )
    return chunks


def chunk_header(entry: Entry, section_label: str) -> str:
    official = "" if entry.official else " · nicht amtlich"
    return (
        f"[{entry.id}] {entry.title} · Stand {entry.stand} · {entry.topic} · {entry.source}{official}"
        f" · Abschnitt: {section_label}"
    )


def section_kind(section: str) -> str:
    if section == SECTION_KEY_VALUES:
        return "key_values"
    if section == SECTION_REFERENCES:
        return "references"
    return "content"


def split_sections(body: str) -> list[tuple[str, str]]:
    """(heading, text) for each H2 section; text before the first H2 is its own section."""
    lines = body.split("\n")
    headings = h2_headings(body)
    sections: list[tuple[str, str]] = []
    first = headings[0][0] if headings else len(lines)
    preamble = "\n".join(lines[:first]).strip()
    if preamble:
        sections.append((PREAMBLE, preamble))
    for n, (start, name) in enumerate(headings):
        end = headings[n + 1][0] if n + 1 < len(headings) else len(lines)
        text = "\n".join(lines[start + 1 : end]).strip()
        if text:
            sections.append((name, text))
    return sections


def split_long(text: str, max_chars: int) -> list[str]:
    """``text`` in parts of at most ``max_chars`` where it can be: between top-level blocks
    (the engine's one markdown parse), a table only between rows with its header repeated, a
    list only between items, a paragraph between lines; a code fence is never cut (a fence
    longer than the limit stays one part)."""
    if len(text) <= max_chars:
        return [text]
    lines = text.split("\n")
    units: list[str] = []
    for run in _runs(markdown.spans(text), lines):
        whole = _lines(lines, run[0].start, run[-1].end)
        if len(whole) <= max_chars:
            units.append(whole)
            continue
        lead = ""  # a heading or "Label:" line written right over a block goes with its first part
        for n, span in enumerate(run):
            block = _lines(lines, span.start, span.end)
            if not block:
                continue
            if span.kind == "other" and n + 1 < len(run) and len(lead) + len(block) < max_chars // 4:
                lead = f"{lead}\n{block}" if lead else block
                continue
            room = max_chars - len(lead) - 1 if lead else max_chars
            if len(block) <= room or span.kind == "code":
                pieces = [block]
            elif span.kind == "table":
                pieces = _split_table(block, room)
            elif span.kind == "list":
                pieces = _split_list(lines, span, room)
            else:
                pieces = _split_lines(block, room)
            if lead:
                pieces[0] = f"{lead}\n{pieces[0]}"
                lead = ""
            units.extend(pieces)
        if lead:
            units.append(lead)
    return _pack(units, max_chars, "\n\n") if units else _split_lines(text, max_chars)


def _lines(lines: list[str], start: int, end: int) -> str:
    return "\n".join(lines[start:end]).strip("\n")


def _runs(spans: list[markdown.Span], lines: list[str]) -> list[list[markdown.Span]]:
    """Blocks written without a blank line between them stay together ("### Werte" over its
    table, "Label:" over its list) while they fit."""
    runs: list[list[markdown.Span]] = []
    for span in spans:
        prev = runs[-1][-1] if runs else None
        if prev is not None and lines[prev.end - 1].strip():  # no blank line before this block
            runs[-1].append(span)
        else:
            runs.append([span])
    return runs


def _pack(units: list[str], max_chars: int, joint: str) -> list[str]:
    parts: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + len(joint) + len(unit) > max_chars:
            parts.append(current)
            current = unit
        else:
            current = f"{current}{joint}{unit}" if current else unit
    if current:
        parts.append(current)
    return parts


def _split_list(lines: list[str], span: markdown.Span, max_chars: int) -> list[str]:
    """A list in parts between its items; an item longer than the limit is split between its
    lines unless it holds a code fence."""
    units: list[str] = []
    for start, end in span.items or [(span.start, span.end)]:
        item = _lines(lines, start, end)
        if not item:
            continue
        if len(item) <= max_chars or "```" in item or "~~~" in item:
            units.append(item)
        else:
            units.extend(_split_lines(item, max_chars))
    return _pack(units, max_chars, "\n")


def _split_table(table: str, max_chars: int) -> list[str]:
    rows = table.split("\n")
    head = rows[:2] if len(rows) > 2 and set(rows[1].replace("|", "").strip()) <= set("-: ") else rows[:1]
    parts, current = [], list(head)
    for row in rows[len(head) :]:
        if len(current) > len(head) and sum(len(r) + 1 for r in current) + len(row) > max_chars:
            parts.append("\n".join(current))
            current = list(head)
        current.append(row)
    parts.append("\n".join(current))
    return parts


def _split_lines(para: str, max_chars: int) -> list[str]:
    parts, current = [], ""
    for line in para.split("\n"):
        while len(line) > max_chars:  # one huge line: cut at the last space before the limit
            cut = line.rfind(" ", 0, max_chars)
            cut = cut if cut > 0 else max_chars
            if current:
                parts.append(current)
                current = ""
            parts.append(line[:cut])
            line = line[cut:].lstrip()
        if current and len(current) + 1 + len(line) > max_chars:
            parts.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current:
        parts.append(current)
    return parts
