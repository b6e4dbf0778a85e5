"""The answer object: what the clerk sees and what the audit trail records (design.md §5)."""
from __future__ import annotations

from dataclasses import dataclass, field

STATES = ("answered", "answered_after_retry", "uncertain", "unanswered", "refused", "off_topic", "sources_only")
# unanswered: the model gave no sourced answer (it refused, or cited nothing valid) to a question
# the gate finds covered; the matching entries are shown, unchecked, as sources_only shows them.


TIMINGS = ("retrieve_ms", "context_ms", "llm_ms", "verify_ms", "total_ms")  # the stages ask() times


@dataclass
class Answer:
    question: str
    state: str  # one of STATES
    answer: str  # markdown
    citations: list[dict] = field(default_factory=list)  # {id, title, stand, section, supported}
    retrieved: list[dict] = field(default_factory=list)  # {id, score}
    flags: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)  # retrieve_ms, context_ms, llm_ms, verify_ms, total_ms
    models: dict = field(default_factory=dict)
    prompt_version: str = ""
    mode: str = ""  # "hybrid" | "lexical" | "" (no retrieval)
    notice: str = ""  # why retrieval was lexical, why only sources, …
    plan: dict = field(default_factory=dict)
    llm_calls: int = 0
    first_attempt: dict = field(default_factory=dict)  # flags of the answer that was regenerated
    fingerprints: list[dict] = field(default_factory=list)  # {id, section, chunk_hash, text} per citation
    index: dict = field(default_factory=dict)  # {generation, built_at} of the index that answered
    drafts: list[str] = field(default_factory=list)  # the model's texts when it gave no sourced answer (audit)
    # reuse (answer/reuse.py): the key of the prompt, whether a store may keep this verdict, and
    # for an answer taken from a store {key, from: what the store said of the stored answer}
    prompt_key: str = ""
    reusable: bool = False
    reused: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.state not in STATES:
            raise ValueError(f"unknown answer state {self.state!r}")

    def as_dict(self) -> dict:
        out = {
            "question": self.question,
            "state": self.state,
            "answer": self.answer,
            "citations": self.citations,
            "retrieved": self.retrieved,
            "flags": {
                "unknown_citations": self.flags.get("unknown_citations", []),
                "unsupported_figures": self.flags.get("unsupported_figures", []),
                "conflicts": self.flags.get("conflicts", []),
                **{k: v for k, v in self.flags.items() if k not in ("unknown_citations", "unsupported_figures", "conflicts")},
            },
            "timings": {k: round(self.timings.get(k, 0.0), 1) for k in TIMINGS},
            "models": self.models,
            "prompt_version": self.prompt_version,
            "mode": self.mode,
            "notice": self.notice,
            "plan": self.plan,
            "llm_calls": self.llm_calls,
            "fingerprints": self.fingerprints,
            "index": self.index,
        }
        if self.first_attempt:
            out["first_attempt"] = self.first_attempt
        if self.drafts:
            out["drafts"] = self.drafts
        if self.prompt_key:
            out["prompt_key"] = self.prompt_key
            out["reusable"] = self.reusable
        if self.reused:
            out["reused"] = self.reused
        return out
