"""The facts of the blocks an answer may cite, parsed when first needed and looked up by value."""
from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

from ... import figures as nb
from ..context import ContextBlock
from . import alignment as al
from . import facts as fc


class BlockFacts(dict):
    """Facts per block id, parsed when first needed (most answers cite two or three of the
    blocks) and cached by block content: the regeneration and later questions reuse them."""

    def __init__(self, blocks: dict[str, ContextBlock]):
        super().__init__()
        self.blocks = blocks
        self.titles = {i: b.title for i, b in blocks.items()}
        self.aliases: dict[str, str] = {}
        for b in blocks.values():
            self.aliases.update(al.block_aliases(b.text))
        self._indexes: dict[tuple, FactIndex] = {}

    def __missing__(self, entry_id: str):
        b = self.blocks.get(entry_id)
        facts = () if b is None else fc.facts_of_block(entry_id, b.text, b.title, b.stand)
        self[entry_id] = facts
        return facts

    def get(self, entry_id, default=()):
        return self[entry_id] if entry_id in self.blocks else default

    def all(self):
        return [(i, self[i]) for i in self.blocks]

    def holding(self, fig: nb.Figure) -> list[str]:
        """The blocks with a fact of ``fig``'s value. A block not parsed yet is parsed only when
        its text (or title) shows the value's digits at all – parsing every block of the context
        to say where a wrong figure stands would cost more than the rest of the check."""
        probe = _digits_probe(fig)
        return [i for i, b in self.blocks.items()
                if (i in self or probe is None or any(probe.search(t) for t in (b.text, _joined(b.text), b.title)))
                and any(nb.matches(fig, f.figure) for f in self[i])]

    def index(self, ids) -> "FactIndex":
        ids = tuple(ids)
        if ids not in self._indexes:
            self._indexes[ids] = FactIndex([f for c in ids for f in self.get(c, ())])
        return self._indexes[ids]


class FactIndex:
    """The facts of some blocks, looked up by value (a figure is compared with few facts)."""

    def __init__(self, facts: list[fc.Fact]):
        self.facts = facts
        self.years: set[int] = set()
        self.by_key: dict = {}
        for f in facts:
            self.years |= f.role.years
            self.by_key.setdefault(value_key(f.figure), []).append(f)

    def candidates(self, fig: nb.Figure) -> list[fc.Fact]:
        return self.by_key.get(value_key(fig), [])


def value_key(fig: nb.Figure):
    if fig.kind == "date":
        return ("date", fig.value[1])
    if fig.kind == "year":
        return ("year", fig.value)
    return ("value", fig.value)


_DIGIT_GROUP = re.compile(r"(?<=\d)[.\s\u00a0\u202f\u2009](?=\d{3}(?!\d))")


@lru_cache(maxsize=1024)
def _joined(text: str) -> str:
    """``text`` with thousands separators between digit groups removed ("6.930" → "6930")."""
    return _DIGIT_GROUP.sub("", text)


def _digits_probe(fig: nb.Figure) -> re.Pattern | None:
    """A pattern every way of writing ``fig``'s value matches in the text or the joined text
    ("2025 126 g/km" must not become 2025126): "551,10 €" → 551[,.]1, "08" → 0*8; None for dates
    and years (their facts come from the Stand and other forms too)."""
    if not isinstance(fig.value, Decimal):
        return None
    whole, _, fraction = format(abs(fig.value), "f").partition(".")
    fraction = fraction.rstrip("0")  # "6930,00" is 6930
    return re.compile(rf"(?<!\d)0*{whole}" + (rf"[,.]{fraction}" if fraction else r"(?!\d)"))
