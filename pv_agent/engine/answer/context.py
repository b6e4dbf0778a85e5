"""Numbered context blocks for the model, each with a metadata header, within a character budget.

The budget is what is left of ``settings.max_context_chars`` (and of ``num_ctx`` minus the
answer budget, at a conservative 3 characters per token) after the system prompt and the
question: blocks are dropped or cut, never the system prompt. A block is cut only at a line
boundary, so a table row stays whole.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..kb import markdown
from ..config import Settings
from ..types import SECTION_SUMMARY, Hit

CHARS_PER_TOKEN = 3  # German text with bge/qwen tokenizers: ~3.5–4; 3 keeps a margin
MIN_BLOCK_CHARS = 400  # a cut block shorter than this is not worth showing
CONFLICT_MARK = "⚠"
CUT_MARK = "[… gekürzt]"


@dataclass
class ContextBlock:
    number: int
    entry_id: str
    title: str
    stand: str
    topic: str
    source: str
    official: bool
    section: str
    text: str
    cross_refs: tuple[str, ...] = ()
    conflict_marked: bool = False  # the entry is one side of a disagreement of sources (⚠)
    cut: bool = False

    @property
    def header(self) -> str:
        official = "amtlich" if self.official else "nicht amtlich"
        return (
            f"[{self.number}] {self.entry_id} · {self.title} · Stand {self.stand} · "
            f"Thema {self.topic} · Quelle {self.source} · {official} · Abschnitt „{self.section}“"
        )

    def render(self) -> str:
        return f"{self.header}\n{self.text.strip()}"


@dataclass
class Context:
    blocks: list[ContextBlock]
    budget: int
    dropped: list[str] = field(default_factory=list)  # ids left out for the budget

    @property
    def ids(self) -> list[str]:
        return [b.entry_id for b in self.blocks]

    def text(self) -> str:
        return "\n\n".join(b.render() for b in self.blocks)

    def block(self, entry_id: str) -> ContextBlock | None:
        for b in self.blocks:
            if b.entry_id == entry_id:
                return b
        return None


def context_budget(settings: Settings, *, system_chars: int, question_chars: int, overhead: int = 200) -> int:
    """Characters available for the blocks once the system prompt and question are in."""
    by_tokens = (settings.num_ctx - settings.num_predict) * CHARS_PER_TOKEN
    return max(0, min(settings.max_context_chars, by_tokens) - system_chars - question_chars - overhead)


def build_context(
    hits: list[Hit],
    settings: Settings,
    *,
    system_chars: int,
    question: str,
    bodies: dict[str, str] | None = None,
) -> Context:
    """Blocks in rank order, one per entry, until the budget is spent.

    A block shows the hit's section plus the entry's key values (``Hit.block_text``).
    ``bodies`` maps entry ids to their full markdown, to see whether an entry is one side
    of a conflict even when its summary is not the section shown.
    """
    budget = context_budget(settings, system_chars=system_chars, question_chars=len(question))
    bodies = bodies or {}
    blocks: list[ContextBlock] = []
    dropped: list[str] = []
    left = budget
    seen: set[str] = set()
    for hit in hits:
        if hit.entry_id in seen:
            continue
        seen.add(hit.entry_id)
        block = ContextBlock(
            number=len(blocks) + 1,
            entry_id=hit.entry_id,
            title=hit.title,
            stand=hit.stand,
            topic=hit.topic,
            source=hit.source,
            official=hit.official,
            section=hit.section,
            text=hit.block_text.strip(),
            cross_refs=tuple(hit.cross_refs),
            conflict_marked=is_conflict_side(hit, bodies.get(hit.entry_id)),
        )
        size = len(block.render()) + 2
        if size <= left:
            blocks.append(block)
            left -= size
            continue
        room = left - len(block.header) - len(CUT_MARK) - 3
        if room >= MIN_BLOCK_CHARS or not blocks:
            block.text = cut_at_line(block.text, max(room, 0)) + "\n" + CUT_MARK
            block.cut = True
            blocks.append(block)
            left = 0
        else:
            dropped.append(hit.entry_id)
    return Context(blocks=blocks, budget=budget, dropped=dropped)


def cut_at_line(text: str, limit: int) -> str:
    """The longest prefix of whole lines within ``limit`` characters (never half a table row)."""
    if len(text) <= limit:
        return text
    out: list[str] = []
    used = 0
    for line in text.splitlines():
        if used + len(line) + 1 > limit:
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out).rstrip()


def is_conflict_side(hit: Hit, body: str | None) -> bool:
    """An entry is one side of a conflict when its title or summary carries the ⚠ mark
    (kb-spec: both entries of a conflict pair mark the disagreement). A ⚠ elsewhere — a
    note in the key values, a cross-reference title in "Verweise" — only points to one."""
    if CONFLICT_MARK in hit.title:
        return True
    if body is None:  # no full entry at hand: the shown section decides
        return CONFLICT_MARK in hit.text
    return CONFLICT_MARK in body and _summary_marked(body)


@lru_cache(maxsize=512)
def _summary_marked(body: str) -> bool:
    # Parsing a whole entry body takes milliseconds (long tables); an answer's context holds
    # up to a dozen entries, so the parse is done once per entry text and only for bodies
    # that carry the mark at all.
    return CONFLICT_MARK in section_text(body, SECTION_SUMMARY)


def section_text(body: str, name: str) -> str:
    """The markdown of one H2 section of an entry's body, without its heading (code fences
    respected: the engine's one markdown parse)."""
    return markdown.section_text(body, name)
