"""Answers as HTML: a small, safe markdown subset, one renderer for the panel, Discuss and chatter.

Plain Python (only ``markupsafe``). Everything in the answer is HTML-escaped *first*; the
markup is then built only from a fixed set of tags the renderer writes itself: headings,
paragraphs, bold/italic, inline code and code blocks, lists, tables, block quotes and rules.
No tag, attribute or URL from the answer text ever reaches the output unescaped, and
markdown links are not turned into links (answers cite entries, they do not link out).
Citations ``[pv-sv-01]`` / ``[⚠ pv-a-01, pv-b-02]`` become links to the cited entries.
"""
from __future__ import annotations

import html
import re
from collections.abc import Callable

from markupsafe import Markup

_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_CITATION = re.compile(rf"\[\s*((?:⚠\s*)?{_ID}(?:\s*[,;]\s*(?:⚠\s*)?{_ID})*)\s*\](?!\()")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
_BULLET = re.compile(r"^(\s*)([-*+•])\s+(.*)$")
_ORDERED = re.compile(r"^(\s*)(\d{1,9})[.)]\s+(.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_QUOTE = re.compile(r"^\s*>\s?(.*)$")

# inline, applied to already escaped text
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")

EntryLink = Callable[[str], "str | None"]  # entry id → URL, or None for an unknown id


def render(text: str, entry_url: EntryLink | None = None) -> Markup:
    """Markdown subset → safe HTML. ``entry_url`` turns citation ids into links."""
    lines = (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return Markup("".join(_blocks(lines, entry_url or (lambda _id: None))))


def _blocks(lines: list[str], link: EntryLink) -> list[str]:
    out: list[str] = []
    paragraph: list[str] = []

    def flush():
        if paragraph:
            out.append("<p>" + "<br>".join(_inline(p, link) for p in paragraph) + "</p>")
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            flush()
            i += 1
            continue
        if _FENCE.match(line):
            flush()
            fence = _FENCE.match(line).group(1)
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            out.append("<pre><code>" + html.escape("\n".join(body)) + "</code></pre>")
            i += 1
            continue
        m = _HEADING.match(stripped)
        if m:
            flush()
            level = 5 if len(m.group(1)) <= 3 else 6
            out.append(f"<h{level}>{_inline(m.group(2), link)}</h{level}>")
            i += 1
            continue
        if _RULE.match(stripped):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if _QUOTE.match(line):
            flush()
            quoted = []
            while i < len(lines) and _QUOTE.match(lines[i]):
                quoted.append(_QUOTE.match(lines[i]).group(1))
                i += 1
            out.append("<blockquote>" + "".join(_blocks(quoted, link)) + "</blockquote>")
            continue
        if stripped.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(lines[i].strip())
                i += 1
            out.append(_table(rows, link))
            continue
        if _BULLET.match(line) or _ORDERED.match(line):
            flush()
            items = []
            kind, base = bool(_BULLET.match(line)), _indent(line)
            while i < len(lines) and lines[i].strip():
                cur = lines[i]
                marker = _BULLET.match(cur) or _ORDERED.match(cur)
                if _indent(cur) <= base and (not marker or bool(_BULLET.match(cur)) != kind):
                    break  # a paragraph or the other kind of list starts here
                items.append(cur)
                i += 1
            out.append(_list(items, link))
            continue
        paragraph.append(stripped)
        i += 1
    flush()
    return out


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t").replace("\t", "    ")) if line.strip() else 0


def _list(lines: list[str], link: EntryLink) -> str:
    """A list; lines indented deeper than the first item's marker nest under the item before."""
    base = _indent(lines[0])
    first = _BULLET.match(lines[0])
    tag = "ul" if first else "ol"
    items: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _BULLET.match(line) or _ORDERED.match(line)
        if m and _indent(line) <= base:
            items.append((m.group(3), []))
        elif items:
            items[-1][1].append(line)
        else:
            items.append((line.strip(), []))
    parts = []
    for head, rest in items:
        inner = _inline(head, link)
        nested = [r for r in rest if r.strip()]
        if nested:
            if _BULLET.match(nested[0]) or _ORDERED.match(nested[0]):
                inner += _list(nested, link)
            else:
                inner += "<br>" + "<br>".join(_inline(r.strip(), link) for r in nested)
        parts.append(f"<li>{inner}</li>")
    return f"<{tag}>" + "".join(parts) + f"</{tag}>"


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)]


def _table(rows: list[str], link: EntryLink) -> str:
    head: list[str] | None = None
    body = rows
    if len(rows) >= 2 and _TABLE_SEP.match(rows[1]):
        head, body = _cells(rows[0]), rows[2:]
    html_rows = []
    if head is not None:
        html_rows.append("<thead><tr>" + "".join(f"<th>{_inline(c, link)}</th>" for c in head) + "</tr></thead>")
    cells = ["<tr>" + "".join(f"<td>{_inline(c, link)}</td>" for c in _cells(r)) + "</tr>"
             for r in body if not _TABLE_SEP.match(r)]
    if cells:
        html_rows.append("<tbody>" + "".join(cells) + "</tbody>")
    return '<table class="table table-sm table-bordered">' + "".join(html_rows) + "</table>"


def _inline(text: str, link: EntryLink) -> str:
    """Escape, then code spans (kept verbatim), bold, italic and citations."""
    codes: list[str] = []

    def keep_code(m):
        codes.append(f"<code>{m.group(1)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    s = html.escape(text.replace("\x00", ""), quote=True)
    s = _CODE_SPAN.sub(keep_code, s)
    s = _BOLD.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", s)
    s = _ITALIC.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", s)
    s = _CITATION.sub(lambda m: _citation(m, link), s)
    return re.sub(r"\x00(\d+)\x00", lambda m: codes[int(m.group(1))], s)


def _citation(m: re.Match, link: EntryLink) -> str:
    parts = re.split(r"(\s*[,;]\s*)", m.group(1))
    out = []
    for part in parts:
        cid = part.replace("⚠", "").strip()
        url = link(cid) if cid and re.fullmatch(_ID, cid) else None
        if url:
            warn = "⚠ " if "⚠" in part else ""
            out.append(f'{warn}<a href="{html.escape(url, quote=True)}" class="o_pv_agent_cite" '
                       f'data-pv-entry="{html.escape(cid, quote=True)}">{cid}</a>')
        else:
            out.append(part)
    return "[" + "".join(out) + "]"
