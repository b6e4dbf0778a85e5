"""One markdown parse for the engine: sections, tables, list items, paragraphs and sentences.

Built on markdown-it-py (CommonMark plus GFM tables), so code fences, nested lists and tables
are read the same way wherever the engine looks at markdown: the fact extraction of the
verifier, the context's section lookup and the Odoo renderer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt

ABBREVIATIONS = frozenset(
    "z b bzw abs nr lit ca inkl exkl max mind gem lt vgl ziff s art usw etc u a d h ggf idr ivm isd "
    "std mio tsd bzgl dr mag ua dh zb jew vs jän jan feb mär apr jun jul aug sep sept okt nov dez".split()
)


@dataclass
class Node:
    """A block of markdown: ``heading``, ``paragraph``, ``item`` (list item), ``table`` or ``code``."""

    kind: str
    text: str = ""  # inline markdown of headings, paragraphs, list items; code as written
    level: int = 0  # heading level
    header: list[str] = field(default_factory=list)  # table header cells
    rows: list[list[str]] = field(default_factory=list)  # table body cells


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Block structure only: inline markup stays as written in each block's ``content`` (the
    # engine reads text, not emphasis), which keeps a parse well under a millisecond.
    return MarkdownIt("commonmark").enable("table").disable("inline")


def parse(text: str) -> list[Node]:
    """The blocks of ``text`` in document order. A list item's own paragraphs form one ``item``;
    nested lists give their own items. Cached by text: a context block is parsed once."""
    return list(_parse(text))


@lru_cache(maxsize=2048)
def _parse(text: str) -> tuple[Node, ...]:
    tokens = _parser().parse(text)
    nodes: list[Node] = []
    items: list[tuple[int, list[str]]] = []  # open list items: node index, inline parts
    heading: Node | None = None
    table: Node | None = None
    row: list[str] | None = None
    in_head = False
    for tok in tokens:
        t = tok.type
        if t == "list_item_open":
            nodes.append(Node("item"))
            items.append((len(nodes) - 1, []))
        elif t == "list_item_close":
            idx, parts = items.pop()
            nodes[idx].text = " ".join(parts).strip()
        elif t == "heading_open":
            heading = Node("heading", level=int(tok.tag[1:]))
        elif t == "heading_close":
            nodes.append(heading)
            heading = None
        elif t == "table_open":
            table = Node("table")
        elif t == "table_close":
            nodes.append(table)
            table = None
        elif t == "thead_open":
            in_head = True
        elif t == "thead_close":
            in_head = False
        elif t == "tr_open":
            row = []
        elif t == "tr_close" and table is not None:
            if in_head:
                table.header = row or []
            else:
                table.rows.append(row or [])
            row = None
        elif t in ("fence", "code_block"):
            nodes.append(Node("code", text=tok.content))
        elif t == "inline":
            if heading is not None:
                heading.text = tok.content
            elif row is not None:
                row.append(tok.content.strip())
            elif items:
                items[-1][1].append(tok.content)
            else:
                nodes.append(Node("paragraph", text=tok.content))
    return tuple(n for n in nodes if n.kind != "item" or n.text)


def h2_headings(body: str) -> list[tuple[int, str]]:
    """(0-based line, heading text) of every top-level ``## `` heading (ATX only: a line of
    dashes under text is a rule in an entry, never a heading; code fences are respected)."""
    tokens = _parser().parse(body)
    return [(tok.map[0], tokens[i + 1].content.strip()) for i, tok in enumerate(tokens)
            if tok.type == "heading_open" and tok.tag == "h2" and tok.markup == "##" and tok.level == 0 and tok.map]


def sections(body: str) -> dict[str, str]:
    """H2 sections of an entry body: heading text → markdown below it (code fences respected)."""
    lines = body.splitlines(keepends=True)
    starts = h2_headings(body)
    out: dict[str, str] = {}
    for n, (line, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        out.setdefault(name, "".join(lines[line + 1 : end]).strip())
    return out


def section_text(body: str, name: str) -> str:
    """The markdown of one H2 section of an entry's body, without its heading."""
    return sections(body).get(name, "")


@dataclass
class Span:
    """A top-level block of ``text.split("\n")`` as lines ``[start, end)``: ``table``, ``list``
    (with its items' line ranges), ``code`` (fenced or indented), or ``other`` (paragraph,
    heading, quote, rule). A block runs to the next block's start, so no line is left out."""

    kind: str
    start: int
    end: int
    items: list[tuple[int, int]] = field(default_factory=list)


def spans(text: str) -> list[Span]:
    """The top-level blocks of ``text`` with their line ranges (for splitting long text
    between blocks, table rows and list items, never inside a code fence)."""
    lines = text.split("\n")
    out: list[Span] = []
    for tok in _parser().parse(text):
        if not tok.map:
            continue
        if tok.level == 0 and tok.nesting >= 0:
            kind = {"table_open": "table", "bullet_list_open": "list", "ordered_list_open": "list",
                    "fence": "code", "code_block": "code"}.get(tok.type, "other")
            out.append(Span(kind, tok.map[0], tok.map[1]))
        elif tok.type == "list_item_open" and tok.level == 1 and out and out[-1].kind == "list":
            out[-1].items.append((tok.map[0], tok.map[1]))
    if out:
        out[0].start = 0
    for a, b in zip(out, out[1:]):
        a.end = b.start
    if out:
        out[-1].end = len(lines)
    for span in out:  # items run to the next item's start (or the list's end)
        starts = [i for i, _ in span.items] + [span.end]
        span.items = [(a, b) for a, b in zip(starts, starts[1:])]
    return out


def line_kinds(text: str) -> list[str]:
    """Per line of ``text.split("\\n")``: ``heading``, ``item`` (first line of a list item),
    ``row`` (a table row), ``code`` (inside a code block), ``prose`` or ``blank`` (also table
    separators, fence lines and rules) – what the verifier splits an answer into."""
    lines = text.split("\n")
    kinds = ["prose" if line.strip() else "blank" for line in lines]
    for tok in _parser().parse(text):
        if not tok.map:
            continue
        first, end = tok.map
        if tok.type == "heading_open":
            kinds[first] = "heading"
            for i in range(first + 1, end):  # the underline of a setext heading
                kinds[i] = "blank"
        elif tok.type in ("fence", "code_block"):
            for i in range(first, min(end, len(lines))):
                kinds[i] = "code" if lines[i].strip() else "blank"
            if tok.type == "fence":
                kinds[first] = "blank"
                if end - 1 > first and lines[end - 1].strip().startswith(tok.markup):
                    kinds[end - 1] = "blank"
        elif tok.type == "table_open":
            for i in range(first, end):
                kinds[i] = "blank"
        elif tok.type == "tr_open":
            kinds[first] = "row"
        elif tok.type == "list_item_open":
            kinds[first] = "item"
        elif tok.type == "hr":
            kinds[first] = "blank"
    return kinds


_SENTENCE_END = re.compile(r"[.!?](\s+)(?=[A-ZÄÖÜ0-9„\"(\[*⚠])")


def sentences(text: str) -> list[str]:
    """Sentences of one paragraph or list item; abbreviations ("z.B.", "Abs.") and ordinals
    ("1. Jänner", "13. Bezug") do not end a sentence."""
    text = " ".join(text.split())
    cuts = [0]
    for m in _SENTENCE_END.finditer(text):
        before = re.search(r"(\S+)$", text[: m.start()])
        word = before.group(1).lower().strip("(„\"") if before else ""
        if word.split(".")[-1] in ABBREVIATIONS or re.fullmatch(r"\d+", word):
            continue
        cuts.append(m.end())
    cuts.append(len(text))
    return [text[a:b].strip() for a, b in zip(cuts, cuts[1:]) if text[a:b].strip()]


def plain(inline: str) -> str:
    """Inline markdown without emphasis marks and code ticks (links keep their text)."""
    s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", inline)
    return re.sub(r"(\*\*|__|\*|`)", "", s)
