"""Prompts and fixed texts as versioned data files.

``system.v<N>.md`` is the German system prompt (design.md §4), ``texts.v<N>.yaml`` holds the
fixed sentences (refusal, off-topic reply, regeneration instructions, sources-only labels).
Changing wording means adding a new version, so an answer's audit record names the exact
prompt it was produced with (``PROMPT_VERSION``).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

PROMPT_VERSION = "v3"
_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def system_prompt(version: str = PROMPT_VERSION) -> str:
    return (_DIR / f"system.{version}.md").read_text(encoding="utf-8").strip()


@lru_cache(maxsize=None)
def _texts(version: str) -> dict:
    with open(_DIR / f"texts.{version}.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def text(name: str, version: str = PROMPT_VERSION, **values) -> str:
    """A fixed text by name, with ``{placeholders}`` filled from ``values``."""
    raw = _texts(version)[name]
    return raw.format(**values) if values else raw


def state_label(state: str, version: str = PROMPT_VERSION) -> str:
    return _texts(version)["state_labels"][state]


def checked_line(checked: dict, version: str = PROMPT_VERSION) -> str:
    """What verification did, in one line: "4 Zahlen in den zitierten Einträgen geprüft, …"."""
    n = checked.get("figures_checked", 0)
    if n == 1:
        parts = [text("checked_figure_one", version)]
    elif n:
        parts = [text("checked_figures", version, count=n)]
    else:
        parts = [text("checked_no_figures", version)]
    if checked.get("figures_unsupported"):
        parts.append(text("checked_unsupported", version, count=checked["figures_unsupported"]))
    if checked.get("figures_given"):
        parts.append(text("checked_given", version, count=checked["figures_given"]))
    if checked.get("claims"):
        found = checked.get("claims_quote", 0) + checked.get("claims_paraphrase", 0)
        parts.append(text("checked_claims", version, found=found, total=checked["claims"]))
    return ", ".join(parts)


REFUSAL = text("refusal")
