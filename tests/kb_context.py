"""Context blocks built from the shipped knowledge base, as ``build_context`` shows them (the
summary plus the key values), for the verifier tests."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pv_agent.engine.answer.context import Context, ContextBlock, is_conflict_side
from pv_agent.engine.kb.loader import load_knowledge_base
from pv_agent.engine.kb.markdown import section_text
from pv_agent.engine.types import SECTION_KEY_VALUES, SECTION_SUMMARY, Hit

KB = Path(__file__).resolve().parents[1] / "wissensbasis"


@lru_cache(maxsize=1)
def entries() -> dict:
    loaded = load_knowledge_base(KB)
    return {e.id: e for e in loaded.entries}


def block(entry_id: str, number: int = 1, section: str = SECTION_SUMMARY) -> ContextBlock:
    e = entries()[entry_id]
    text = section_text(e.body, section)
    key_values = section_text(e.body, SECTION_KEY_VALUES)
    if section != SECTION_KEY_VALUES and key_values:
        text = f"{text}\n\n### {SECTION_KEY_VALUES}\n{key_values}"
    hit = Hit(entry_id=e.id, title=e.title, stand=e.stand, topic=e.topic, source=e.source, official=e.official,
              section=section, chunk_id=f"{e.id}#1", chunk_hash="0" * 8, text=text, header=e.title, score=1.0,
              cross_refs=e.cross_refs)
    return ContextBlock(number=number, entry_id=e.id, title=e.title, stand=e.stand, topic=e.topic, source=e.source,
                        official=e.official, section=section, text=text, cross_refs=tuple(e.cross_refs),
                        conflict_marked=is_conflict_side(hit, e.body))


def kb_context(*ids: str) -> Context:
    return Context(blocks=[block(i, n + 1) for n, i in enumerate(ids)], budget=100_000)
