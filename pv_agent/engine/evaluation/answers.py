"""Answer evaluation over the goldset (design.md §6): the answer half of ``pv-agent eval --answers``.

Runs ``ask`` for every goldset question and scores the model's text against the goldset's
answer keys (``expect_figures``), never against the verifier's own verdict: which expected
figures the model wrote (in any notation), whether it cited the expected entries, refused
when it should, asked back, and marked both sides of a conflict with ⚠ itself (a ⚠ the
system adds in its notices does not count). Metrics that do come from the verifier say so
in their name. Plus latency (mean, p95). The reports (JSON, HTML with charts) are written by report.py.
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from datetime import date, datetime
from typing import Callable

from .. import figures as fg
from ..answer import prompts
from ..answer.ask import ask
from ..answer.verification.units import _CITATION
from ..config import Settings
from .retrieval import GoldQuestion
from ..llm_clients import ModelClient, make_client

REFUSING_STATES = ("refused", "off_topic")
ANSWERING_STATES = ("answered", "answered_after_retry", "uncertain")
# No answer of the model's: the entries a state shows are the retrieval's, not citations the model made.
UNCITED_STATES = ("sources_only", "unanswered")

# (key, German label, kind): "rate" is a share 0..1, "ms" a latency.
METRICS = (
    ("expected_figures_recall", "Erwartete Zahlen im Antworttext (Anteil der Zahlen)", "rate"),
    ("all_expected_figures_rate", "Antworten mit allen erwarteten Zahlen", "rate"),
    ("cited_ids_retrieved_rate", "Zitierte IDs unter den gefundenen Einträgen", "rate"),
    ("refusal_agreement_rate", "Verweigert genau bei refuse-Fragen", "rate"),
    ("expected_source_cited_rate", "Erwartete Quelle zitiert", "rate"),
    ("clarify_question_rate", "Rückfrage bei clarify-Fragen gestellt", "rate"),
    ("conflict_both_sides_warned_rate", "Konflikt: beide Seiten zitiert, ⚠ vom Modell", "rate"),
    ("verifier_no_unsupported_figure_rate", "Prüfer: keine Zahl beanstandet", "rate"),
    ("verifier_passed_first_draft_rate", "Prüfer: erster Entwurf bestanden", "rate"),
    # the model refused (or cited nothing) where the knowledge base covers the question (issue 28)
    ("unanswered_rate", "Abgedeckte Fragen ohne belegte Antwort des Modells", "rate"),
    ("latency_mean_ms", "Latenz Mittelwert", "ms"),
    ("latency_p95_ms", "Latenz p95", "ms"),
)


@dataclass
class ItemResult:
    id: str
    kind: str
    question: str
    state: str
    expected: list[str]
    cited: list[str]
    retrieved: list[str]
    unsupported_figures: int
    unknown_citations: int
    one_sided_conflicts: int
    has_question: bool
    has_warning: bool  # a ⚠ the model wrote (not one of the system's notices)
    total_ms: float
    llm_ms: float
    llm_calls: int
    expect_figures: list[str] = None  # the answer key
    found_figures: list[str] = None  # those of the key the model's text states

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def evaluate_answers(
    goldset: list[GoldQuestion],
    index,
    settings: Settings,
    *,
    client: ModelClient | None = None,
    now: date | None = None,
    progress: Callable[[int, int, ItemResult], None] | None = None,
) -> dict:
    """Ask every goldset question; return the report (plain dict, JSON-ready)."""
    client = client or make_client(settings)
    results: list[ItemResult] = []
    started = time.monotonic()
    for n, item in enumerate(goldset, 1):
        answer = ask(item.question, index, settings, client=client, now=now)
        d = answer.as_dict()
        flags = d["flags"]
        text = model_text(answer.answer)
        res = ItemResult(
            id=item.id,
            kind=item.kind,
            question=item.question,
            state=answer.state,
            expected=list(item.expected_ids),
            cited=[c["id"] for c in answer.citations if answer.state not in UNCITED_STATES],
            retrieved=[r["id"] for r in answer.retrieved],
            unsupported_figures=len(flags["unsupported_figures"]),
            unknown_citations=len(flags["unknown_citations"]),
            one_sided_conflicts=sum(1 for c in flags["conflicts"] if c.get("one_sided")),
            has_question="?" in text,
            has_warning="⚠" in text,
            total_ms=d["timings"]["total_ms"],
            llm_ms=d["timings"]["llm_ms"],
            llm_calls=answer.llm_calls,
            expect_figures=list(item.expect_figures),
            # a cell name in a citation ("[pv-abf-01 · nach 20 Jahren]") states no figure
            found_figures=figures_found(item.expect_figures, _CITATION.sub(" ", text))
            if answer.state in ANSWERING_STATES else [],
        )
        results.append(res)
        if progress:
            progress(n, len(goldset), res)
    return {
        "created": datetime.now().isoformat(timespec="seconds"),
        "model": settings.chat_model,
        "embed_model": settings.embed_model,
        "prompt_version": prompts.PROMPT_VERSION,
        "settings": {k: getattr(settings, k) for k in ("temperature", "num_ctx", "num_predict", "top_k", "max_context_chars")},
        "questions": len(results),
        "duration_s": round(time.monotonic() - started, 1),
        "metrics": metrics(results),
        "states": _count(r.state for r in results),
        "items": [r.as_dict() for r in results],
    }


_SYSTEM_LINES = re.compile(r"^(?:> ?⚠.*|>\s*|_Die Wissensbasis enthält dazu nur den Stand .*_)$", re.MULTILINE)
_SYSTEM_MARKS = re.compile(r"\s*\*\*⟨[^⟩]*⟩\*\*|\s*\[[a-z0-9-]+ – nicht in den Quellen\]")


def model_text(answer: str) -> str:
    """The model's own text of an answer: without the notices and marks the system adds
    (uncertain/conflict/truncated notices, the other-year line, ⟨nicht belegt⟩ marks)."""
    return _SYSTEM_MARKS.sub("", _SYSTEM_LINES.sub("", answer)).strip()


def figures_found(expected: tuple[str, ...] | list[str], text: str) -> list[str]:
    """The answer-key figures that ``text`` states, in any notation (6.930 € = 6930,00 EUR)."""
    written = fg.extract(text)
    found = []
    for key in expected:
        wanted = fg.extract(key)
        if wanted and any(fg.same_value(w, f) or (w.kind == "date" and f.kind == "date" and w.value == f.value)
                          for w in wanted[:1] for f in written):
            found.append(key)
    return found


def metrics(results: list[ItemResult]) -> dict:
    answering = [r for r in results if r.state in ANSWERING_STATES]
    cited = sum(len(r.cited) for r in answering)
    valid = sum(sum(1 for c in r.cited if c in r.retrieved) for r in answering)
    judged = [r for r in results if r.state != "sources_only"]
    refusal_ok = [(r.kind == "refuse") == (r.state in REFUSING_STATES) for r in judged]
    with_expected = [r for r in judged if r.kind != "refuse" and r.expected]
    clarify = [r for r in judged if r.kind == "clarify"]
    conflict = [r for r in judged if r.kind == "conflict"]
    latencies = sorted(r.total_ms for r in judged if r.llm_calls)
    # answer keys: every judged question with a key counts; a refusal states none of its figures
    keyed = [r for r in judged if r.expect_figures]
    return {
        "expected_figures_recall": _share(sum(len(r.found_figures or ()) for r in keyed),
                                          sum(len(r.expect_figures) for r in keyed)),
        "all_expected_figures_rate": _share(
            sum(1 for r in keyed if len(r.found_figures or ()) == len(r.expect_figures)), len(keyed)),
        "cited_ids_retrieved_rate": _share(valid, cited),
        "refusal_agreement_rate": _share(sum(refusal_ok), len(refusal_ok)),
        "expected_source_cited_rate": _share(
            sum(1 for r in with_expected if set(r.cited) & set(r.expected)), len(with_expected)),
        "clarify_question_rate": _share(
            sum(1 for r in clarify if r.state in ANSWERING_STATES and r.has_question), len(clarify)),
        "conflict_both_sides_warned_rate": _share(
            sum(1 for r in conflict if set(r.expected) <= set(r.cited) and r.has_warning), len(conflict)),
        "verifier_no_unsupported_figure_rate": _share(
            sum(1 for r in answering if not r.unsupported_figures), len(answering)),
        "verifier_passed_first_draft_rate": _share(sum(1 for r in answering if r.state == "answered"), len(answering)),
        "latency_mean_ms": round(sum(latencies) / len(latencies), 1) if latencies else None,
        "latency_p95_ms": round(_percentile(latencies, 95), 1) if latencies else None,
        "unanswered_rate": _share(sum(1 for r in judged if r.kind != "refuse" and r.state == "unanswered"),
                                  sum(1 for r in judged if r.kind != "refuse")),
        "sources_only": sum(1 for r in results if r.state == "sources_only"),
        "unanswered": sum(1 for r in results if r.state == "unanswered"),
    }


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _percentile(values: list[float], p: float) -> float:
    rank = max(0, math.ceil(p / 100 * len(values)) - 1)
    return values[rank]


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out
