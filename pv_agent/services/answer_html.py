"""Answers as HTML: one renderer for the panel, Discuss and chatter, on the engine's markdown
parser (markdown-it-py, CommonMark plus tables) so an answer is read the same way here as by
the verifier.

Raw HTML in the answer is escaped (``html`` off), markdown links, images and autolinks are
switched off (answers cite entries, they do not link out), so no tag, attribute or URL from
the answer text ever reaches the output. Headings become ``h5``/``h6`` (an answer sits inside
the panel), tables get Bootstrap classes. Citations ``[pv-sv-01]`` / ``[⚠ pv-a-01, pv-b-02]``
become links to the cited entries.
"""
from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup

_ID = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_CITATION = re.compile(rf"\[\s*((?:⚠\s*)?{_ID}(?:\s*[,;]\s*(?:⚠\s*)?{_ID})*)\s*\](?!\()")

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
    rules["text"] = lambda tokens, i, options, env: _CITATION.sub(
        lambda m: _citation(m, env["link"]), html.escape(tokens[i].content, quote=True))
    return md


def render(text: str, entry_url: EntryLink | None = None) -> Markup:
    """Markdown → safe HTML. ``entry_url`` turns citation ids into links."""
    source = (text or "").replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    out = _markdown().render(source, {"link": entry_url or (lambda _id: None)})
    # no whitespace between tags (escaped text holds no "<", so code blocks keep their lines)
    return Markup(re.sub(r"\n+<", "<", out).strip())


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
