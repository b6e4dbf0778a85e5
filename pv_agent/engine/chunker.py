"""Chunk entries into retrieval units (design.md §2).

One chunk per H2 section, each with a header line naming the entry, so a chunk read alone
still says where it comes from. ``Kernwerte & Fristen`` is always a chunk of its own.
A section longer than the limit is split at paragraph boundaries — a table is split only
between rows, and its header rows are repeated in every part.
"""
from __future__ import annotations

import hashlib

from .loader import h2_headings
from .types import SECTION_KEY_VALUES, SECTION_REFERENCES, Chunk, Entry

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
    if len(text) <= max_chars:
        return [text]
    units: list[str] = []
    for para in _paragraphs(text):
        if len(para) <= max_chars:
            units.append(para)
        elif _is_table(para):
            units.extend(_split_table(para, max_chars))
        else:
            units.extend(_split_lines(para, max_chars))
    parts: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + 2 + len(unit) > max_chars:
            parts.append(current)
            current = unit
        else:
            current = f"{current}\n\n{unit}" if current else unit
    if current:
        parts.append(current)
    return parts


def _paragraphs(text: str) -> list[str]:
    return [p.strip("\n") for p in text.split("\n\n") if p.strip()]


def _is_table(para: str) -> bool:
    return all(line.lstrip().startswith("|") for line in para.split("\n"))


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
