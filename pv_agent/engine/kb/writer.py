"""Write entries back as markdown files in the knowledge base's own format.

The counterpart of ``loader.parse_entry_text``: frontmatter in the repository's key order,
then the body with its H2 sections. ``parse_entry_text(entry_to_markdown(e))`` gives ``e``
back (same metadata, same body), so an entry edited in Odoo can go back into the folder,
pass ``validate`` and be imported again without changing.
"""
from __future__ import annotations

import difflib
import json
import re

from .loader import ID_PATTERN, h2_headings
from ..types import Entry

# Unquoted in the repository's files: ids, the Stand, the cluster and the source family.
_PLAIN = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=False)


# Words YAML would read as something other than text (a number, a date, a boolean, null).
_YAML_TYPED = re.compile(r"[0-9]+|[0-9]{4}-[0-9]{2}(-[0-9]{2})?|true|false|yes|no|on|off|null|y|n")


def _scalar(text: str) -> str:
    """An id unquoted (as the repository writes cross_refs), anything else quoted."""
    return text if _PLAIN.match(text) and not _YAML_TYPED.fullmatch(text) else _quoted(text)


def _list(values, plain=False) -> str:
    return "[" + ", ".join(_scalar(v) if plain else _quoted(v) for v in values) + "]"


def entry_to_markdown(entry: Entry) -> str:
    """The file text of ``entry`` (frontmatter + body), ending with one newline."""
    lines = [
        "---",
        f"id: {entry.id}",
        f"title: {_quoted(entry.title.strip())}",
        f"stand: {entry.stand}",
        f"topic: {entry.topic}",
        f"tags: {_list(entry.tags)}",
        f"legal_bases: {_list(entry.legal_bases)}",
        f"cross_refs: {_list(entry.cross_refs, plain=True)}",
        f"source: {entry.source}",
        f"official: {'true' if entry.official else 'false'}",
        f"source_ref: {_quoted(entry.source_ref.strip())}",
        "---",
        "",
        entry.body.strip("\n"),
        "",
    ]
    return "\n".join(lines)


def entry_file_path(entry: Entry) -> str:
    """Where the entry's file lives, relative to the knowledge-base folder.

    The path it was imported from; ``dokumente/<id>.md`` for an entry made in Odoo. A path
    that would leave the folder or is not a markdown file named after the id is replaced.
    """
    default = f"dokumente/{entry.id}.md"
    path = (entry.path or "").replace("\\", "/")
    parts = path.split("/")
    if (not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts)
            or parts[-1] != f"{entry.id}.md" or not ID_PATTERN.match(entry.id)):
        return default
    return path


# -- what changed, for the history and the conflict view -----------------------------------
def sections(body: str) -> list[tuple[str, str]]:
    """(heading, text) per H2 section; text before the first H2 has the heading ''."""
    lines = (body or "").strip("\n").split("\n")
    starts = h2_headings("\n".join(lines))
    out = []
    if not starts or starts[0][0] > 0:
        head = "\n".join(lines[: starts[0][0] if starts else len(lines)]).strip("\n")
        if head:
            out.append(("", head))
    for i, (line_no, heading) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(lines)
        out.append((heading, "\n".join(lines[line_no + 1: end]).strip("\n")))
    return out


def changed_sections(old_body: str, new_body: str) -> list[dict]:
    """Per changed, added or removed section: ``{"section", "diff"}`` (a unified diff of it)."""
    old, new = dict(sections(old_body)), dict(sections(new_body))
    order = [h for h, _ in sections(old_body)] + [h for h, _ in sections(new_body) if h not in old]
    changes = []
    for heading in order:
        before, after = old.get(heading), new.get(heading)
        if before == after:
            continue
        diff = difflib.unified_diff((before or "").split("\n") if before is not None else [],
                                    (after or "").split("\n") if after is not None else [],
                                    "vorher", "jetzt", lineterm="", n=1)
        changes.append({"section": heading, "diff": "\n".join(list(diff)[2:]),
                        "status": "added" if before is None else "removed" if after is None else "changed"})
    return changes


def side_by_side(left: str, right: str) -> list[tuple[str, str, str]]:
    """Rows (kind, left line, right line) for a two-column diff; kind is equal/changed/left/right."""
    a, b = (left or "").split("\n"), (right or "").split("\n")
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [("equal", a[i], b[j]) for i, j in zip(range(i1, i2), range(j1, j2))]
            continue
        left_part, right_part = a[i1:i2], b[j1:j2]
        for k in range(max(len(left_part), len(right_part))):
            lt = left_part[k] if k < len(left_part) else None
            rt = right_part[k] if k < len(right_part) else None
            kind = "changed" if lt is not None and rt is not None else "left" if lt is not None else "right"
            rows.append((kind, lt or "", rt or ""))
    return rows
