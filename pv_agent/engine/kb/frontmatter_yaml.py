"""The YAML frontmatter of an entry file, read strictly.

An entry's frontmatter is a handful of flat fields. YAML can say far more: an anchor with
nested aliases lets about 630 bytes stand for gigabytes once a value is turned into text (a
knowledge-base file or a manager's merged text in Odoo would be enough to exhaust a worker).
So anchors and aliases are refused, the frontmatter has a size cap, and only the safe loader's
plain types come out. The split of frontmatter and body is python-frontmatter's own.
"""
from __future__ import annotations

import re

import yaml

BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)
# The largest frontmatter of the shipped knowledge base has about 1.5 KB.
MAX_FRONTMATTER_BYTES = 8 * 1024


class FrontmatterRefused(ValueError):
    """Frontmatter that is valid YAML but not allowed in an entry; ``line`` is the file's line."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


# libyaml's safe loader when PyYAML has it (what python-frontmatter used: the pure-Python one
# makes loading the shipped knowledge base about a third slower).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_anchors(fm: str) -> None:
    """Anchors (``&a``) and aliases (``*a``, also ``<<: *a``), found in the event stream before
    anything is built from it."""
    for event in yaml.parse(fm, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise FrontmatterRefused(event.start_mark.line + 1,
                                     f"YAML-Alias '*{event.anchor}' im Frontmatter nicht erlaubt")
        if getattr(event, "anchor", None) is not None:
            raise FrontmatterRefused(event.start_mark.line + 1,
                                     f"YAML-Anker '&{event.anchor}' im Frontmatter nicht erlaubt")


def split(text: str) -> tuple[object, str]:
    """(metadata, body) of an entry text that starts with ``---``.

    Raises ``yaml.YAMLError`` (with the file's line in its marks) or ``FrontmatterRefused``."""
    text = text.strip()
    try:
        _, fm, content = BOUNDARY.split(text, 2)
    except ValueError:
        return {}, text
    size = len(fm.encode("utf-8"))
    if size > MAX_FRONTMATTER_BYTES:
        raise FrontmatterRefused(1, f"Frontmatter zu groß ({size} Bytes, höchstens {MAX_FRONTMATTER_BYTES})")
    # fm starts with the rest of the opening '---' line, so the loader's line 0 is the file's line 1
    _refuse_anchors(fm)
    return yaml.load(fm, Loader=_LOADER), content.strip()  # noqa: S506 - a safe loader
