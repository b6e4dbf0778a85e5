"""The entries a question will be answered from, without a language model.

``find_sources`` runs the part of ``ask()`` before the first model call — off-topic check,
plan, retrieval per sub-query, relevance gate — and returns the entries as plain dicts
(id, title, Stand, the key line that matched, score): what the clerk sees while the model
writes. ``ask()`` uses the same steps (``retrieve_all``) and reports the same dicts.
"""
from __future__ import annotations

import re
from datetime import date

from ..config import Settings
from ..index.embedders import index_embedder_kind, query_embedder
from ..llm_clients import make_client
from ..retrieval.gates import nothing_relevant, off_topic_reason, topic_coverage
from ..retrieval.planner import Plan, plan
from ..retrieval.retrieve import retrieve
from ..textnorm import query_terms, stem, tokens
from ..types import SECTION_KEY_VALUES, Hit, RetrievalResult

MAX_LINE_CHARS = 200
_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}")


def question_year(the_plan: Plan, now: date | None = None) -> int | None:
    """The one year the question asks about, today's when it names none, None for several."""
    today = now or date.today()
    return the_plan.years[0] if len(the_plan.years) == 1 else (None if the_plan.years else today.year)


def find_sources(question: str, index, settings: Settings, *, client=None, embedder=None,
                 now: date | None = None) -> list[dict]:
    """The entries ``ask()`` would answer ``question`` from; [] when it would not ask the model
    (off topic, or the relevance gate finds nothing relevant)."""
    question = question.strip()
    if not question or off_topic_reason(question):
        return []
    the_plan = plan(question, now=now)
    why = ""
    if embedder is None:
        embedder, why = query_embedder(index, settings, client or make_client(settings))
    retrieval = retrieve_all(index, the_plan, settings, embedder, default_year=question_year(the_plan, now),
                             embedder_notice=why)
    if nothing_relevant(retrieval, settings):
        return []
    return sources_of(retrieval.hits, question)


def sources_of(hits: list[Hit], question: str) -> list[dict]:
    """The retrieved entries as the clerk sees them before the answer."""
    return [{"id": h.entry_id, "title": h.title, "stand": h.stand, "line": key_line(h, question),
             "score": round(h.score, 6)} for h in hits]


def key_line(hit: Hit, question: str) -> str:
    """The line of the entry's key values that shares the most terms with the question (a line
    with a figure first among equals); the first line of the shown section if it has none."""
    key_values = hit.text if hit.section == SECTION_KEY_VALUES else hit.key_values
    lines = _content_lines(key_values) or _content_lines(hit.text)
    if not lines:
        return ""
    terms = [stem(t) for t in query_terms(question)]

    def matches(line: str) -> tuple[int, bool]:
        words = tokens(line)
        shared = sum(1 for t in terms if any(w.startswith(t) for w in words))
        return shared, any(ch.isdigit() for ch in line)

    best = max(lines, key=matches)  # max keeps the first of equals: the entry's own order
    return best if len(best) <= MAX_LINE_CHARS else best[: MAX_LINE_CHARS - 1].rstrip() + "…"


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _content_lines(markdown: str) -> list[str]:
    """Lines of a section as plain text: bullets without their marker, table rows as
    "label: value" (several value columns named by their header: "label – 2025: x · 2026: y"),
    headings, rules and a table's header row left out."""
    raw = [line.strip() for line in (markdown or "").splitlines()]
    out = []
    header: list[str] = []
    for n, line in enumerate(raw):
        if not line.startswith("|"):
            header = []
        if not line or line.startswith("#") or _TABLE_RULE.match(line):
            continue
        if line.startswith("|"):
            if n + 1 < len(raw) and _TABLE_RULE.match(raw[n + 1]):
                header = _cells(line)  # the header row: column names, no value
                continue
            cells = _cells(line)
            label, values = cells[0], cells[1:]
            if len(values) > 1 and len(header) == len(cells):
                named = [f"{h}: {v}" if h else v for h, v in zip(header[1:], values) if v]
                line = f"{label} – " + " · ".join(named)
            else:
                line = label + (": " + " · ".join(v for v in values if v) if any(values) else "")
        line = re.sub(r"^[-*+]\s+", "", line).replace("**", "").strip()
        if line:
            out.append(line)
    return out


def retrieve_all(index, the_plan: Plan, settings: Settings, embedder, default_year=None, embedder_notice="") -> RetrievalResult:
    """One retrieval per sub-query, each with the full top_k, merged round robin up to top_k
    (a part's best hits come first, none is starved); each steered towards the year it asks
    about (design: figures change every 1 January)."""
    k_total = settings.survey_blocks if the_plan.kind == "survey" else settings.top_k
    results: list[RetrievalResult] = []
    for sub in the_plan.queries:
        year = sub.year or default_year
        result = retrieve(index, sub.text, settings, embedder=embedder, embedder_notice=embedder_notice,
                          scopes=sub.scopes, k=k_total, year=year)
        if result.mode == "lexical" and embedder is not None:
            embedder, embedder_notice = None, result.notice  # the embedder failed once: do not wait for it again
        result.topic_coverage = topic_coverage(index, result)  # for supported(), per part
        if result.mode == "hybrid":  # cosines mean something only for the model they were calibrated on
            result.cosine_model = f"{index_embedder_kind(index)}:{index.embed_model}"
        results.append(result)
    return merge_results(results, k_total, settings.cross_ref_expand)


def merge_results(results: list[RetrievalResult], k: int, cross_ref_limit: int) -> RetrievalResult:
    if len(results) == 1:
        return results[0]
    seen: set[str] = set()
    picked: list[Hit] = []
    primary = [[h for h in r.hits if h.via == "retrieval"] for r in results]
    for rank in range(max(len(p) for p in primary)):  # round robin: every sub-query gets its slots
        for hits in primary:
            if rank < len(hits) and hits[rank].entry_id not in seen and len(picked) < k:
                seen.add(hits[rank].entry_id)
                picked.append(hits[rank])
    refs = [h for r in results for h in r.hits if h.via != "retrieval"]
    for h in refs:
        if h.entry_id not in seen and cross_ref_limit > 0:
            seen.add(h.entry_id)
            picked.append(h)
            cross_ref_limit -= 1
    lexical = [r for r in results if r.mode == "lexical"]
    return RetrievalResult(
        question=results[0].question,
        mode="lexical" if lexical else results[0].mode,
        hits=picked,
        notice=lexical[0].notice if lexical else "",
        terms=tuple(dict.fromkeys(t for r in results for t in r.terms)),
        unknown_terms=tuple(dict.fromkeys(t for r in results for t in r.unknown_terms)),
        unknown_share=max(r.unknown_share for r in results),
        dense_z=max((r.dense_z for r in results if r.dense_z is not None), default=None),
        topic_coverage=max((r.topic_coverage for r in results if r.topic_coverage is not None), default=None),
        cosine_model=next((r.cosine_model for r in results if r.cosine_model), ""),
    )
