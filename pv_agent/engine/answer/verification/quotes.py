"""Quotes in an answer: the words of a cited block, written between quotation marks („2 bis 20 km“),
back the figures inside them – the block's own words need no cell of their own."""
from __future__ import annotations

import re
from functools import lru_cache

from .fact_index import BlockFacts
from ...kb import markdown as md
from ...textnorm import fold

_QUOTE = re.compile(r"[„“\"]([^„“”\"\n]{4,80})[“”\"]")


def quoted_spans(text: str, cites: list[str], facts: BlockFacts, names: list | None = None) -> list[tuple[int, int]]:
    """The spans of ``text`` quoting a cited block word for word (case and spacing folded), with
    at least two words and a figure: „2 bis 20 km“, „nach 25 Jahren“. A quote with a bracket right
    after it quotes that bracket's entry."""
    spans = []
    for m in _QUOTE.finditer(text):
        quote = " ".join(fold(m.group(1)).split())
        if len(quote.split()) < 2 or not any(ch.isdigit() for ch in quote):
            continue
        after = [n for n in names or () if n.start >= m.end() and not _QUOTE_GAP.sub("", text[m.end():n.start])]
        quoted = [after[0].entry_id] if after else cites
        if any(quote in _folded(facts.blocks[c].text) for c in quoted if c in facts.blocks):
            spans.append((m.start(1), m.end(1)))
    return spans


_QUOTE_GAP = re.compile(r"\s|\(Stand \d{4}-\d{2}\)")  # what may stand between a quote and its bracket


@lru_cache(maxsize=512)
def _folded(text: str) -> str:
    return " ".join(fold(md.plain(text)).split())
