"""The answer split into units – sentences of prose, list items, table rows, headings – each
with the citations it carries or inherits; the citations of a text.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ...kb import markdown as md

_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"
# "[pv-gfb-02 · Geringfügigkeitsgrenze monatlich · 2026]": an id may name the cell it quotes
# (system prompt v3, rule 4; named_cells.py) – after a "·", up to the next ";" or the bracket
_CELL = r"(?:\s*·\s*[^\[\]\n;]*[^\s\[\];])?"
_ONE = rf"(?:⚠\s*)?{_ID}{_CELL}"
_CITATION = re.compile(rf"\[\s*(?:⚠\s*)?({_ID}{_CELL}(?:\s*[,;]\s*{_ONE})*)\s*\](?!\()")
_LEADING_CITATIONS = re.compile(rf"(?:\[\s*{_ONE}(?:\s*[,;]\s*{_ONE})*\s*\][\s.,;]*)+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}")
_ABBREVIATIONS = md.ABBREVIATIONS


@dataclass
class Unit:
    """A sentence, list item or table row of the answer, with its citations."""

    start: int
    end: int
    text: str
    citations: list[str]
    kind: str  # prose | item | row | heading | code
    lead_of: list | None = None  # a bold lead split off a sentence: that sentence's citations
    continues: str = ""  # a part after ";" (or a later sentence of an item): the text before it



def leaks_prompt(answer: str, system_prompt: str, min_run: int = 60) -> bool:
    """True when the answer contains a run of at least ``min_run`` characters of the system
    prompt (whitespace folded): what a successful "repeat your instructions" injection looks like."""
    a = " ".join(answer.split()).lower()
    s = " ".join(system_prompt.split()).lower()
    if len(a) < min_run:
        return False
    match = difflib.SequenceMatcher(None, a, s, autojunk=False).find_longest_match(0, len(a), 0, len(s))
    return match.size >= min_run


# -- citations and sentences ----------------------------------------------------------------
def citations_in(text: str) -> list[str]:
    out: list[str] = []
    for m in _CITATION.finditer(text):
        for cid, _cell in citation_parts(m.group(1)):
            if cid not in out:
                out.append(cid)
    return out


def citation_parts(inside: str) -> list[tuple[str, str]]:
    """The ids of one bracket's text, each with the cell it names ("" for none):
    "pv-a-01, ⚠ pv-b-02" → [("pv-a-01", ""), ("pv-b-02", "")]; "pv-gfb-02 · Grenze · 2026"
    → [("pv-gfb-02", "Grenze · 2026")]."""
    out: list[tuple[str, str]] = []
    for chunk in inside.split(";"):
        head, dot, cell = chunk.partition("·")
        ids = [p.replace("⚠", "").strip() for p in (head.split(",") if not dot else [head])]
        out += [(cid, cell.strip() if dot else "") for cid in ids if cid]
    return out


def cited_cells(text: str) -> list[tuple[int, str, str]]:
    """(position, entry id, cell name) of each citation naming a cell, in ``text``'s order."""
    return [(m.start(), cid, cell) for m in _CITATION.finditer(text)
            for cid, cell in citation_parts(m.group(1)) if cell]


def split_units(answer: str) -> list[Unit]:
    """Sentences of prose paragraphs, list items and table rows, with their character spans.

    A citation written after the full stop belongs to the sentence before it. A list item or
    table row without its own citation takes those of the line introducing the list or table;
    a table's header row takes those of all its rows.
    """
    units: list[Unit] = []
    offset = 0
    prose_start: int | None = None
    lines = answer.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    # the engine's markdown parse decides what a line is (code fences, tables, setext headings)
    kinds = md.line_kinds(answer) if "\r" not in answer else [_line_kind(line.strip()) for line in lines]
    for i, line in enumerate(lines + [""]):
        stripped = line.strip()
        kind = kinds[i] if i < len(kinds) else "blank"
        if kind == "prose" and _BOLD_LINE.match(stripped) and not citations_in(stripped):
            kind = "heading"  # "**Sonst: nur die ersten 620 € steuerfrei**" heads what follows
            # (a bold line with its own citation is a sentence backed by that citation)
        if kind != "prose" and prose_start is not None:
            units.extend(_sentences(answer, prose_start, offset))
            prose_start = None
        if kind == "prose" and prose_start is None:
            prose_start = offset
        elif kind in ("item", "row", "heading", "code"):
            start = offset + (len(line) - len(line.lstrip()))
            end = offset + len(line.rstrip())
            units.extend(_item_sentences(answer, start, end) if kind == "item" else
                         [Unit(start, end, answer[start:end], citations_in(stripped), kind)])
        offset += len(line)
    units = [part for u in units for part in _cited_parts(u)]
    _inherit(units, answer)
    return units


def _cited_parts(unit: Unit) -> list[Unit]:
    """"Der Grenzwert … 826,65 € [pv-gfb-07]; die Geringfügigkeitsgrenze … 551,10 €
    [ris-bgbl2-2025-263].": parts joined by ";" that each cite their own entries are backed by
    those alone, as sentences are."""
    if unit.kind not in ("prose", "item") or ";" not in unit.text or len(unit.citations) < 2:
        return [unit]
    cuts = [0] + [m.end() for m in re.finditer(r";\s+", unit.text) if not _inside_brackets(unit.text, m.start())]
    pieces = [(a, b) for a, b in zip(cuts, cuts[1:] + [len(unit.text)])]
    parts = [Unit(unit.start + a, unit.start + a + len(unit.text[a:b].rstrip()), unit.text[a:b].rstrip(),
                  citations_in(unit.text[a:b]), unit.kind) for a, b in pieces]
    if len(parts) < 2 or not all(p.citations for p in parts):
        return [unit]
    parts[0].lead_of = unit.lead_of
    for before, part in zip(parts, parts[1:]):
        part.continues = before.text  # "…; mit 137 g/km liegt das Fahrzeug darunter": said of the part before
    return parts


def _inside_brackets(text: str, at: int) -> bool:
    return text.count("(", 0, at) > text.count(")", 0, at) or text.count("[", 0, at) > text.count("]", 0, at)


# A line that is bold from start to end, without a citation of its own, is a heading the way
# models write them: its figures are backed by the citations of the content under it.
# A paragraph opening with a bold sentence of its own ("**27 %.** Innerhalb …").
_BOLD_LEAD = re.compile(r"(\*\*|__)(?:(?!\1)[^\n])+?[.!?]\1\s+")


def _bare_bold(text: str) -> bool:
    """A bold answer line of little more than figures ("**27 %.**", "**1,5 % (max. 720 € pro Monat).**")."""
    return bool(re.search(r"\d", text)) and len(re.findall(r"[A-Za-zÄÖÜäöüß]{2,}", text)) <= 4


_BOLD_LINE = re.compile(r"^(\*\*|__)(?:(?!\1).)+\1:?$")


def _line_kind(stripped: str) -> str:
    if not stripped or _TABLE_SEP.match(stripped):
        return "blank"
    if stripped.startswith("#"):
        return "heading"
    if stripped.startswith("|"):
        return "row"
    if _LIST_ITEM.match(stripped):
        return "item"
    return "prose"


def _item_sentences(answer: str, start: int, end: int) -> list[Unit]:
    """A list item is one unit – unless it holds several sentences that each cite their own
    entries ("… [pv-sz-01]. Bei 1.800 € … 2.615 € [pv-bg-08]."): then each sentence is backed by
    its own citations only, as in prose."""
    whole = Unit(start, end, answer[start:end], citations_in(answer[start:end]), "item")
    parts = _sentences(answer, start, end)
    if len(parts) < 2 or not all(p.citations for p in parts) or any(p.kind != "prose" for p in parts):
        return [whole]
    out = [Unit(p.start, p.end, p.text, p.citations, "item") for p in parts]
    for before, part in zip(out, out[1:]):
        part.continues = before.text
    return out


def _sentences(answer: str, start: int, end: int) -> list[Unit]:
    text = answer[start:end]
    cuts = [0]
    for m in re.finditer(r"[.!?](\s+)(?=[A-ZÄÖÜ0-9„\"(\[*⚠])", text):
        word = text[max(text.rfind(" ", 0, m.start()), text.rfind("\n", 0, m.start())) + 1 : m.start()]
        word = word.lower().strip("(„\"")
        if word.split(".")[-1] in _ABBREVIATIONS:  # "z.B.", "Abs.", "bzw."
            continue
        if re.fullmatch(r"\d+", word):  # "1. Jänner", "13. Bezug", "im Jahr 2025. Danach"
            continue
        if re.fullmatch(r"\d{1,2}\.\d{1,2}", word) and text[m.end():m.end() + 1] in "([":
            continue  # "am 31.10. (Stand 2024-01) [pv-sb-08 · …] des Vorjahres": the date's own point
        lead = _LEADING_CITATIONS.match(text, m.end())  # ". [id] Next": [id] stays with the sentence before
        cuts.append(lead.end() if lead else m.end())
    cuts.append(len(text))
    units: list[Unit] = []
    for a, b in zip(cuts, cuts[1:]):
        piece = text[a:b]
        if not piece.strip():
            continue
        lead = len(piece) - len(piece.lstrip())
        s, e = start + a + lead, start + a + len(piece.rstrip())
        lead_bold = _BOLD_LEAD.match(answer, s, e) if a == 0 else None
        if lead_bold and lead_bold.end() < e and not citations_in(lead_bold.group(0)) \
                and _bare_bold(lead_bold.group(0)):
            # "**27 %.** Innerhalb des Sechstels gilt: …": the bold answer line heads the text
            # after it, as a heading does
            heading = Unit(s, s + len(lead_bold.group(0).rstrip()), lead_bold.group(0).rstrip(), [], "heading")
            heading.lead_of = citations_in(answer[lead_bold.end():e])  # the sentence it opens
            units.append(heading)
            s = lead_bold.end()
        unit = Unit(s, e, answer[s:e], citations_in(answer[s:e]), "prose")
        if units and _only_citations(unit.text):
            prev = units[-1]
            prev.citations += [c for c in unit.citations if c not in prev.citations]
            prev.end, prev.text = unit.end, answer[prev.start : unit.end]
            continue
        units.append(unit)
    return units


def _only_citations(text: str) -> bool:
    return not re.sub(r"[\s.,;:!?()]", "", _CITATION.sub("", text))


_SOURCE_LINE = re.compile(r"^\W*Quellen?\b", re.IGNORECASE)


def _inherit(units: list[Unit], answer: str) -> None:
    """List items and table rows without their own citation take those of the line introducing
    them, else (tables) those of all rows, else those of a "Quelle: [id]" line right after them."""
    intro: list[str] = []
    table: list[Unit] = []
    orphans: list[Unit] = []  # items/rows still without citations, waiting for a "Quelle:" line
    for u in units + [Unit(0, 0, "", [], "end")]:
        if u.kind == "row":
            table.append(u)
            continue
        if table:  # a table ended: the header row takes the citations of all rows
            rows = [c for r in table for c in r.citations]
            for r in table:
                if not r.citations:
                    r.citations = list(dict.fromkeys(intro or rows))
                    if not r.citations:
                        orphans.append(r)
            table = []
        if u.kind == "item":
            if not u.citations:
                u.citations = list(intro)
                if not u.citations:
                    orphans.append(u)
            continue
        if u.kind == "prose" and orphans and _SOURCE_LINE.match(u.text):
            for o in orphans:
                o.citations = list(u.citations)
        orphans = []
        if u.kind == "prose":
            intro = u.citations
        elif u.kind == "heading":
            intro = []

