"""Answers as HTML: one renderer for the panel, Discuss and chatter, on the engine's markdown
parser (markdown-it-py, CommonMark plus tables) so an answer is read the same way here as by
the verifier.

Raw HTML in the answer is escaped (``html`` off), markdown links, images and autolinks are
switched off (answers cite entries, they do not link out), so no tag, attribute or URL from
the answer text ever reaches the output. Headings become ``h5``/``h6`` (an answer sits inside
the panel), tables get Bootstrap classes. Citations ``[pv-sv-01]`` / ``[⚠ pv-a-01, pv-b-02]``
become links to the cited entries; a cell the citation names (``[pv-gfb-02 · Betrag · 2026]``)
follows the link as muted text. Citations are read with the verifier's grammar (one parser).
"""
from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup

from ..engine.answer.verification.units import _CITATION, _ID, citation_parts

EntryLink = Callable[[str], "str | None"]  # entry id → URL, or None for an unknown id


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "xhtmlOut": False})
    md.enable("table").disable(["link", "image", "autolink"])
    rules = md.renderer.rules
    rules["table_open"] = lambda *a: '<table class="table table-sm table-bordered">'
    rules["heading_open"] = lambda tokens, i, *a: f"<h{5 if int(tokens[i].tag[1]) <= 3 else 6}>"
    rules["heading_close"] = lambda tokens, i, *a: f"</h{5 if int(tokens[i].tag[1]) <= 3 else 6}>"
    rules["fence"] = rules["code_block"] = lambda tokens, i, *a: (
        "<pre><code>" + html.escape(tokens[i].content.rstrip("\n")) + "</code></pre>")
    rules["text"] = lambda tokens, i, options, env: _with_citations(tokens[i].content, env["link"])
    return md


def render(text: str, entry_url: EntryLink | None = None) -> Markup:
    """Markdown → safe HTML. ``entry_url`` turns citation ids into links."""
    source = (text or "").replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    out = _markdown().render(source, {"link": entry_url or (lambda _id: None)})
    # no whitespace between tags (escaped text holds no "<", so code blocks keep their lines)
    return Markup(re.sub(r"\n+<", "<", out).strip())


def _with_citations(text: str, link: EntryLink) -> str:
    """Escaped text with its citations as links (read on the raw text: "&lt;" holds a ";")."""
    out, pos = [], 0
    for m in _CITATION.finditer(text):
        out += [html.escape(text[pos:m.start()], quote=True), _citation(m, link)]
        pos = m.end()
    out.append(html.escape(text[pos:], quote=True))
    return "".join(out)


def _citation(m: re.Match, link: EntryLink) -> str:
    inside = m.group(0)[1:-1]  # the bracket's text, with a leading "⚠" of the first id
    # the pieces citation_parts reads: ";" between ids, "," too where no cell is named
    pieces = []
    for n, chunk in enumerate(re.split(r"(\s*;\s*)", inside)):
        pieces += [chunk] if n % 2 or "·" in chunk else re.split(r"(\s*,\s*)", chunk)
    out = []
    for n, chunk in enumerate(pieces):
        parts = citation_parts(chunk) if n % 2 == 0 else []
        cid, cell = parts[0] if parts else ("", "")
        url = link(cid) if cid and re.fullmatch(_ID, cid) else None
        if url:
            warn = "⚠ " if "⚠" in chunk.partition("·")[0] else ""
            named = f' · <span class="o_pv_agent_cell text-muted">{html.escape(cell, quote=True)}</span>' if cell else ""
            out.append(f'{warn}<a href="{html.escape(url, quote=True)}" class="o_pv_agent_cite" '
                       f'data-pv-entry="{html.escape(cid, quote=True)}">{cid}</a>{named}')
        else:
            out.append(html.escape(chunk, quote=True))  # a separator, or an id with no entry
    return "[" + "".join(out) + "]"
