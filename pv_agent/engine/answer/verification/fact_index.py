"""The facts of the blocks an answer may cite, parsed when first needed and looked up by value."""
from __future__ import annotations

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
