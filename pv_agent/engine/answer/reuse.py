"""Reusing a verified answer: the key of the exact prompt, and which answers may be stored.

A verified answer is a function of what the first model call is sent and of the code that checks
the reply. ``prompt_key`` hashes exactly that: the messages of the first model call (the system
prompt with its version, the context blocks with their content, the question as the model sees
it; for a survey every map call's messages), the context blocks' fields the verifier reads beside
their text, the chat model and the server's API kind with the options sent, the year the answer
is checked against, the relevance gate's verdict (it decides refused vs. unanswered) and a digest
of the checking code. An identical key means an identical prompt checked by identical code, so a
stored verdict still holds; anything else — an edited entry, a context another user's rights
would build differently, a new prompt or verifier — gives another key by itself, and no stored
answer needs invalidating.

A store is any object with ``lookup(key) -> {"answer": <answer object>, "from": <anything>} | None``
(``from`` describes the stored answer, e.g. its id and date, and lands in the reused answer's
``reused``). ``MemoryStore`` is the one for the command line and the tests; Odoo keeps its own
(``pv_agent.answer.cache``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

from . import prompts

# the verdicts worth storing: checked answers and the two refusals of a model's reply.
# Never uncertain, sources_only, off_topic, failures or cancelled questions.
REUSABLE_STATES = ("answered", "answered_after_retry", "refused", "unanswered")

# Bump when the checks change in a way the code digest below cannot see (e.g. a dependency's
# behaviour); every code change of the checker changes the digest by itself.
CHECKER_VERSION = "1"

_ENGINE = Path(__file__).resolve().parent.parent
# the code that turns a model reply into a verdict: the decision, the verifier and what it reads
_CHECKER_FILES = ("answer/ask.py", "answer/reuse.py", "answer/verification/*.py", "figures.py", "textnorm.py")


@lru_cache(maxsize=None)
def checker_digest(prompt_version: str = prompts.PROMPT_VERSION) -> str:
    """sha256 over the checking code and the fixed texts of ``prompt_version`` (the regeneration
    instructions, the refusal): once per process."""
    digest = hashlib.sha256(CHECKER_VERSION.encode())
    paths = sorted({p for pattern in _CHECKER_FILES for p in _ENGINE.glob(pattern)})
    paths.append(_ENGINE / "answer" / "prompts" / f"texts.{prompt_version}.yaml")
    for path in paths:
        digest.update(path.relative_to(_ENGINE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def generation_options(settings) -> dict:
    """What the client sends beside the messages and changes the reply (llm_clients/*.py)."""
    options = {"temperature": settings.temperature, "num_predict": settings.num_predict, "seed": settings.seed}
    if settings.llm_api == "ollama":
        options["num_ctx"] = settings.num_ctx  # the OpenAI-compatible servers keep their own window
    return options


def prompt_key(first_messages: list[list[dict]], context, settings, *, prompt_version: str, year: int | None,
               supported: bool, similarity_model: str = "") -> str:
    """The reuse key (hex sha256) of one question's prompt; see the module docstring."""
    payload = {
        "checker": checker_digest(prompt_version),
        "prompt_version": prompt_version,
        "model": settings.chat_model,
        "api": settings.llm_api,
        "options": generation_options(settings),
        "messages": first_messages,
        "blocks": [dataclasses.asdict(b) for b in context.blocks],
        "year": year,
        "supported": supported,
        "similarity": similarity_model,
    }
    raw = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=list)
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()  # a question may hold lone surrogates


def storable(answer: dict) -> bool:
    """Whether an answer object (``Answer.as_dict()``) is a verdict a store may keep: one of
    ``REUSABLE_STATES`` reached from a model reply (a refusal because no model answered is
    not), with its key, and not itself a reused one."""
    return bool(answer.get("reusable") and answer.get("prompt_key") and not answer.get("reused")
                and answer.get("state") in REUSABLE_STATES)


def stored_answer(found, key: str) -> tuple[dict, object] | None:
    """A store's ``lookup`` result as (answer object, from), or None when it is no usable hit
    (nothing, another key, a state that is never reused)."""
    if not isinstance(found, dict) or not isinstance(found.get("answer"), dict):
        return None
    answer = found["answer"]
    if answer.get("prompt_key") != key or answer.get("state") not in REUSABLE_STATES:
        return None
    return answer, found.get("from")


class MemoryStore:
    """A bounded in-memory store (least recently used out): ``remember`` what ``ask`` returned,
    ``lookup`` by key. Counts hits, for the tests and the command line."""

    def __init__(self, limit: int = 2000):
        self.limit = limit
        self.answers: OrderedDict[str, dict] = OrderedDict()
        self.hits = 0

    def lookup(self, key: str):
        if key not in self.answers:
            return None
        self.answers.move_to_end(key)
        self.hits += 1
        return {"answer": self.answers[key], "from": {"key": key}}

    def remember(self, answer: dict) -> bool:
        if not storable(answer):
            return False
        self.answers[answer["prompt_key"]] = answer
        self.answers.move_to_end(answer["prompt_key"])
        while len(self.answers) > self.limit:
            self.answers.popitem(last=False)
        return True
