"""``ask()``: one question → one answer object.

gates (off-topic) → plan → retrieve (per sub-query) → gate (nothing relevant) → context →
generate (map-reduce for surveys) → verify → one regeneration with a sharper instruction
naming what was wrong → state. No language model reachable → the best entries' key values,
labelled as not an answer (``sources_only``). A model's "nothing in the knowledge base" (or a
regeneration with nothing cited) is not trusted: the gate decides whether the knowledge base covers
the question, and if it does the clerk gets the matching entries, unchecked (``unanswered``).

About 400 lines: ``ask()`` itself is the pipeline in named steps; the rest are those steps
and the answer objects of each final state, which belong to no other stage.
"""
from __future__ import annotations

import dataclasses
import time
from datetime import date

from . import prompts
from .result import Answer
from .reuse import REUSABLE_STATES, prompt_key, stored_answer
from ..config import Settings
from .context import Context, build_context
from .deadline import DeadlineExceeded, bounded
from ..drift import fingerprints_shown, key_value_fingerprints
from ..index.embedders import query_embedder
from ..retrieval.gates import nothing_relevant, off_topic_reason, supported
from .generate import Generation, generate
from ..llm_clients import ModelClient, make_client
from ..ollama import OllamaError
from ..retrieval.planner import Plan, plan
from ..types import SECTION_KEY_VALUES, Hit, RetrievalResult
from .progress import Progress, rewrite_reason, stoppable
from .sources import merge_results, question_year, retrieve_all as _retrieve, sources_of
from .verification import REASONS, CachedSimilarity, Verification, citations_in, leaks_prompt, mark_unsupported, verify



class _Run:
    """Timings and model calls of one ``ask``."""

    def __init__(self):
        self.started = time.monotonic()
        # retrieve_ms: every sub-query's retrieval (with its query embedding) and the key values'
        # fingerprints; context_ms: the retrieved entries read and the context blocks built;
        # llm_ms: the model calls (HTTP included); verify_ms: every check of a draft
        self.timings = {"retrieve_ms": 0.0, "context_ms": 0.0, "llm_ms": 0.0, "verify_ms": 0.0}
        self.llm_calls = 0
        self.hits: dict[str, Hit] = {}  # retrieved entries by id, for the citations' fingerprints
        self.year: int | None = None  # the one year the question asks about (or today's)
        self.key_values: dict = {}  # entry id → fingerprints of its key values, for the answer's fingerprints
        self.progress = Progress()  # the caller's on_progress/should_stop (progress.py)

    def add_generation(self, gen: Generation) -> Generation:
        self.timings["llm_ms"] += gen.llm_ms
        self.llm_calls += gen.calls
        return gen

    def finish(self) -> dict:
        return {**self.timings, "total_ms": (time.monotonic() - self.started) * 1000}


def ask(
    question: str,
    index,
    settings: Settings,
    *,
    client: ModelClient | None = None,
    now: date | None = None,
    deadline: float | None = None,
    embedder=None,
    similarity=None,
    reuse=None,
    on_progress=None,
    should_stop=None,
) -> Answer:
    """``deadline`` (a ``time.monotonic()`` value) bounds the total model time: once it is
    reached no further call starts and the answer ends ``sources_only`` with the reason.
    ``embedder``: the query embedder (embedders.py); by default the one that fits the index.
    ``similarity`` (texts → L2-normalised vectors) decides whether a claim sentence paraphrases
    its cited section; by default the built-in model's passage vectors when the index uses it
    (the threshold was calibrated on those), else a lexical measure alone.
    ``reuse``: a store of verified answers (answer/reuse.py); an answer stored under this
    prompt's key is returned at once, without a model call. Every answer that built a prompt
    carries its ``prompt_key``, so the caller can store it.
    ``on_progress(stage, info)`` and ``should_stop()``: see progress.py; a true ``should_stop()``
    before a model call raises ``progress.Cancelled``."""
    run = _Run()
    progress = Progress(on_progress, should_stop)
    client = stoppable(bounded(client or make_client(settings), deadline), progress)
    run.progress = progress
    question = question.strip()
    base = dict(question=question, prompt_version=prompts.PROMPT_VERSION, models={"chat": settings.chat_model})

    reason = off_topic_reason(question)
    if reason:
        return Answer(state="off_topic", answer=prompts.text("off_topic"), notice=reason, timings=run.finish(), **base)
    the_plan = _plan_question(question, now, run)
    retrieval, similarity = _retrieve_step(index, the_plan, settings, client, embedder, similarity, run, base)
    if nothing_relevant(retrieval, settings):
        return Answer(state="refused", answer=prompts.REFUSAL, timings=run.finish(), **base)
    progress.report("sources", sources=sources_of(retrieval.hits, question))
    started = time.monotonic()
    entries, system, user_question, context = _context_step(index, retrieval, the_plan, question, settings)
    run.timings["context_ms"] = (time.monotonic() - started) * 1000
    base["prompt_key"] = _prompt_key(the_plan, system, context, user_question, retrieval, settings, similarity, run)
    if reuse is not None:
        found = stored_answer(reuse.lookup(base["prompt_key"]), base["prompt_key"])
        if found:
            return _reused(*found, run, base)

    def exists(entry_id: str) -> bool:
        return entry_id in entries or index.entry(entry_id) is not None

    def check_draft(content: str) -> Verification:
        progress.report("checking")
        # the question as the model saw it: a year hint names a year the answer may name
        return _verify(content, context, exists, run, question=user_question, similarity=similarity)

    try:
        messages, gen = _generate_step(client, settings, the_plan, system, context, user_question, run)
    except OllamaError as exc:
        return _without_model(retrieval, exc, run, base, settings)
    if gen is None:  # a survey whose blocks the model found nothing relevant in
        return _checked_refusal([], retrieval, settings, run, base, lambda: Answer(
            state="refused", answer=prompts.REFUSAL, timings=run.finish(), llm_calls=run.llm_calls, **base))
    check = check_draft(gen.content)
    if _is_refusal(gen.content) or _cites_nothing(check):
        return _checked_refusal([gen.content], retrieval, settings, run, base,
                                lambda: _final("refused", prompts.REFUSAL, check, context, entries, run, base))
    if check.ok and not gen.truncated:
        return _final("answered", gen.content, check, context, entries, run, base)
    return _regenerate_and_decide(client, settings, messages, gen, check, check_draft, retrieval, context, entries, run, base)


# -- the steps of ask() ---------------------------------------------------------------------
def _plan_question(question: str, now: date | None, run: _Run) -> Plan:
    """Sub-queries and years; ``run.year`` is the one year asked about, today's when none is named."""
    the_plan = plan(question, now=now)
    run.year = question_year(the_plan, now)
    return the_plan


def _retrieve_step(index, the_plan: Plan, settings: Settings, client, embedder, similarity, run: _Run, base: dict):
    """Retrieval for every sub-query with the query embedder that fits the index; records the hits,
    their key-value fingerprints and the retrieval facts of the answer in ``run`` and ``base``.
    Returns the merged result and the claim-similarity function to verify with."""
    started = time.monotonic()
    why = ""
    if embedder is None:
        embedder, why = query_embedder(index, settings, client)
    if similarity is None and getattr(embedder, "kind", "") == "builtin":
        similarity = CachedSimilarity(embedder.embed_passages, embedder.model)
    retrieval = _retrieve(index, the_plan, settings, embedder, default_year=run.year, embedder_notice=why)
    base["index"] = {"generation": index.generation, "built_at": index.built_at}
    run.hits = {h.entry_id: h for h in retrieval.hits}
    run.key_values = key_value_fingerprints(index, run.hits)
    run.timings["retrieve_ms"] = (time.monotonic() - started) * 1000
    base.update(
        mode=retrieval.mode,
        notice=retrieval.notice,
        plan=the_plan.as_dict(),
        retrieved=[{"id": h.entry_id, "score": round(h.score, 6)} for h in retrieval.hits],
        models={"chat": settings.chat_model, "embed": index.embed_model if retrieval.mode == "hybrid" else None},
    )
    return retrieval, similarity


def _context_step(index, retrieval: RetrievalResult, the_plan: Plan, question: str, settings: Settings):
    """The retrieved entries, the system prompt, the question as the model sees it and the context."""
    entries = index.entries_by_id(retrieval.ids)
    system = prompts.system_prompt()
    user_question = _with_year_hint(question, the_plan)
    context = build_context(
        retrieval.hits, settings, system_chars=len(system), question=user_question,
        bodies={i: e.body for i, e in entries.items()},
    )
    return entries, system, user_question, context


def _generate_step(client, settings: Settings, the_plan: Plan, system: str, context: Context, user_question: str,
                   run: _Run) -> tuple[list[dict] | None, Generation | None]:
    """The first draft (a survey distils each block first); ``(None, None)`` when a survey's blocks
    had nothing relevant. Ollama errors propagate."""
    run.progress.report("writing", attempt=1)
    if the_plan.kind == "survey":
        messages = _map_reduce(client, settings, system, context, user_question, run)
        if messages is None:
            return None, None
    else:
        messages = _messages(system, context, user_question)
    return messages, run.add_generation(generate(client, messages, settings))


def _without_model(retrieval: RetrievalResult, exc: OllamaError, run: _Run, base: dict, settings: Settings) -> Answer:
    """No first draft: the best entries' key values (``sources_only``), or a refusal naming related
    entries when retrieval did not support an answer."""
    if not supported(retrieval, settings):
        return _refused_with_related(retrieval.hits, exc, run, base, settings.sources_only_entries)
    return _sources_only(retrieval.hits, exc, run, base, settings.sources_only_entries)


def _regenerate_and_decide(client, settings: Settings, messages: list[dict], first: Generation, check: Verification,
                           check_draft, retrieval: RetrievalResult, context: Context, entries, run: _Run,
                           base: dict) -> Answer:
    """One regeneration naming what the verifier found, then the final state."""
    run.progress.report("rewriting", reason=rewrite_reason(check, truncated=first.truncated))
    run.progress.report("writing", attempt=2)
    retry_messages = messages + [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": regeneration_instruction(check, context, truncated=first.truncated)},
    ]
    try:
        gen = run.add_generation(generate(client, retry_messages, settings))
    except DeadlineExceeded as exc:
        return _sources_only(retrieval.hits, exc, run, base, settings.sources_only_entries)
    except OllamaError as exc:
        answer = _uncertain_text(first.content, check, first.truncated)
        result = _final("uncertain", answer, check, context, entries, run, base)
        result.notice = f"{exc.reason}: {exc}"
        return result
    first_flags = check.flags()
    check = check_draft(gen.content)
    if _is_refusal(gen.content) or not check.valid_citations or check.leaked_prompt:
        # a refusal, nothing sourced left, or instructions leaked: no answer to show
        result = _checked_refusal([first.content, gen.content], retrieval, settings, run, base,
                                  lambda: _final("refused", prompts.REFUSAL, check, context, entries, run, base))
    else:
        if check.ok and not gen.truncated:
            state, answer = "answered_after_retry", gen.content
        else:
            state, answer = "uncertain", _uncertain_text(gen.content, check, gen.truncated)
        result = _final(state, answer, check, context, entries, run, base)
    result.first_attempt = {"flags": first_flags, "truncated": first.truncated}
    result.flags["truncated"] = gen.truncated
    return result


def _checked_refusal(drafts: list[str], retrieval: RetrievalResult, settings: Settings, run: _Run, base: dict,
                     refused) -> Answer:
    """The model gave no sourced answer. Whether the knowledge base says nothing is the gate's
    call (gates.supported, calibrated to refuse few covered questions), not the model's: a false
    "nothing in the knowledge base" makes a clerk stop looking. Covered → ``unanswered`` with the
    matching entries, labelled unchecked; else ``refused()``. The audit trail keeps the drafts."""
    result = _unanswered(retrieval.hits, run, base, settings) if supported(retrieval, settings) else refused()
    result.drafts = drafts
    result.reusable = True  # the verdict on a model reply (not on a missing one)
    return result


# -- stages ----------------------------------------------------------------------------------
def _with_year_hint(question: str, the_plan: Plan) -> str:
    if len(the_plan.years) == 1 and str(the_plan.years[0]) not in question:
        return f"{question} {prompts.text('year_hint', year=the_plan.years[0])}"
    return question


def _messages(system: str, context: Context, question: str, note: str = "") -> list[dict]:
    blocks = f"{note}\n\n{context.text()}" if note else context.text()
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": prompts.text("user_message", context=blocks, question=question)},
    ]


def _map_messages(system: str, block, question: str) -> list[dict]:
    prompt = prompts.text("map_instruction", stand=block.stand, id=block.entry_id, block=block.render(), question=question)
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def _map_reduce(client, settings, system, context: Context, question: str, run: _Run) -> list[dict] | None:
    """Survey questions: distil each block with its id, then one synthesis over the distillates.
    Returns the synthesis messages, or None when no block had anything relevant."""
    distilled = []
    for block in context.blocks:
        gen = run.add_generation(generate(client, _map_messages(system, block, question), settings))
        text = gen.content.strip()
        if text and text.strip("–- .") != "":
            distilled.append(dataclasses.replace(block, number=len(distilled) + 1, text=text))
    if not distilled:
        return None
    return _messages(system, Context(distilled, context.budget), question, note=prompts.text("reduce_note"))


def _verify(content: str, context: Context, exists, run: _Run, *, question: str = "", similarity=None) -> Verification:
    started = time.monotonic()
    result = verify(content, context, exists=exists, question=question, similarity=similarity)
    result.leaked_prompt = leaks_prompt(content, prompts.system_prompt())
    run.timings["verify_ms"] += (time.monotonic() - started) * 1000
    return result


def _cites_nothing(check: Verification) -> bool:
    """A draft without a single citation that claims nothing either (only gap sentences or a
    question back, which the verifier lets stand): no sourced answer, so the gate decides, like
    for a refusal — an ``answered`` always cites its sources."""
    return not check.citations and not check.missing_citations


def _is_refusal(content: str) -> bool:
    return prompts.REFUSAL.rstrip(".") in content and not citations_in(content)


def regeneration_instruction(check: Verification, context: Context, *, truncated: bool = False) -> str:
    """The sharper instruction: one line per problem found, naming it."""
    allowed = ", ".join(f"[{i}]" for i in context.ids)
    lines = [prompts.text("regenerate_header")]
    for cid in check.unknown_citations:
        lines.append(prompts.text("regenerate_unknown_citation", id=cid, allowed=allowed))
    for issue in check.unsupported_figures:
        cited = ", ".join(f"[{c}]" for c in issue.cited) or "keine Quelle"
        line = prompts.text("regenerate_unsupported_figure", figure=issue.figure, cited=cited)
        if issue.reason not in ("not_in_block", "other_block"):
            line += " " + prompts.text("regenerate_figure_reason", reason=prompts.text("reason_" + issue.reason))
            if issue.detail:
                line += " " + prompts.text("regenerate_figure_detail", detail=issue.detail)
        elif issue.found_in:
            line += " " + prompts.text("regenerate_figure_found_in", ids=", ".join(f"[{i}]" for i in issue.found_in))
        lines.append(line)
    if check.missing_citations:
        lines.append(prompts.text("regenerate_missing_citations"))
    if check.leaked_prompt:
        lines.append(prompts.text("regenerate_leaked_prompt"))
    if check.claims_mostly_unsupported:
        lines.append(prompts.text("regenerate_unsupported_claims"))
    for group in check.conflicts:
        if group.failing:
            lines.append(prompts.text(
                "regenerate_conflict",
                ids=", ".join(f"[{i}]" for i in group.ids),
                cited=", ".join(f"[{i}]" for i in group.cited),
            ))
            if group.unmarked or group.status_missing:
                lines.append(prompts.text("regenerate_conflict_marks"))
    if truncated:
        lines.append(prompts.text("regenerate_truncated"))
    lines.append(prompts.text("regenerate_footer"))
    return "\n".join(lines)


def _uncertain_text(content: str, check: Verification, truncated: bool) -> str:
    notices = [prompts.text("uncertain_notice")]
    for group in check.conflicts:
        if group.failing and group.one_sided:
            missing = ", ".join(f"[{i}]" for i in group.ids if i not in group.cited)
            notices.append(prompts.text("uncertain_conflict", cited=", ".join(group.cited), missing=missing))
        elif group.failing:  # both sides stated, but without ⚠ or without saying which one applies
            notices.append(prompts.text("uncertain_conflict_marks", ids=", ".join(f"[{i}]" for i in group.ids)))
    if truncated:
        notices.append(prompts.text("truncated_notice"))
    marked = mark_unsupported(
        content, check,
        figure_mark=prompts.text("mark_unsupported_figure"),
        citation_mark=prompts.text("mark_unknown_citation"),
        claim_mark=prompts.text("mark_unsupported_claim"),
        reasons={key: prompts.text("reason_" + key) for key in REASONS},
    )
    return "\n>\n".join(notices) + "\n\n" + marked


def _final(state, answer, check: Verification, context: Context, entries, run: _Run, base: dict) -> Answer:
    citations = []
    if state != "refused":
        for c in check.citations:
            block = context.block(c.id)
            entry = entries.get(c.id)
            citations.append({
                "id": c.id,
                "title": block.title if block else (entry.title if entry else ""),
                "stand": block.stand if block else (entry.stand if entry else ""),
                "section": block.section if block else "",
                "supported": c.supported,
            })
    flags = check.flags()
    flags["truncated"] = False
    flags["checked"]["state_line"] = prompts.checked_line(flags["checked"]) if state != "refused" else ""
    stands = sorted({c["stand"] for c in citations if c["stand"]})
    if state != "refused" and run.year and stands and all(int(s[:4]) != run.year for s in stands):
        # Built only on entries of another year: say so, the clerk may be looking at old values.
        answer = prompts.text("only_other_year", stands=", ".join(stands)) + "\n\n" + answer
        flags["other_year"] = {"asked": run.year, "stands": stands}
    return Answer(state=state, answer=answer, citations=citations, flags=flags, reusable=state in REUSABLE_STATES,
                  fingerprints=_fingerprints(citations, run), timings=run.finish(), llm_calls=run.llm_calls, **base)


# -- reuse (answer/reuse.py) ----------------------------------------------------------------
def _prompt_key(the_plan: Plan, system: str, context: Context, user_question: str, retrieval: RetrievalResult,
                settings: Settings, similarity, run: _Run) -> str:
    """The key of what the first model step would be sent (a survey: every map call) and of
    everything else the verdict depends on."""
    if the_plan.kind == "survey":
        first = [_map_messages(system, block, user_question) for block in context.blocks]
    else:
        first = [_messages(system, context, user_question)]
    similarity_model = "" if similarity is None else getattr(similarity, "model", type(similarity).__name__)
    return prompt_key(first, context, settings, prompt_version=prompts.PROMPT_VERSION, year=run.year,
                      supported=supported(retrieval, settings), similarity_model=similarity_model)


def _reused(stored: dict, origin, run: _Run, base: dict) -> Answer:
    """The stored verdict for this very prompt: its text, state, citations and checks; retrieval,
    timings and the cited sections' fingerprints (the drift check's input) from this run."""
    citations = stored.get("citations") or []
    return Answer(state=stored["state"], answer=stored.get("answer") or "", citations=citations,
                  flags=stored.get("flags") or {}, first_attempt=stored.get("first_attempt") or {},
                  drafts=stored.get("drafts") or [],
                  fingerprints=_fingerprints(citations, run, key_values_only=stored["state"] == "unanswered"),
                  timings=run.finish(), reused={"key": base["prompt_key"], "from": origin}, **base)


def _fingerprints(citations: list[dict], run: _Run, *, key_values_only: bool = False) -> list[dict]:
    """Per cited entry the content hash and text of every section shown of it (the hit's own
    and its key values; a sources-only answer shows the key values alone): the drift check's input."""
    found: dict[tuple[str, str], dict] = {}
    for c in citations:
        if c["id"] in run.hits:
            hit = run.hits[c["id"]]
            for fp in fingerprints_shown(hit, run.key_values.get(hit.entry_id, []), key_values_only=key_values_only):
                found.setdefault((fp.entry_id, fp.chunk_hash), fp.as_dict())
    return list(found.values())


def _refused_with_related(hits: list[Hit], exc: OllamaError, run: _Run, base: dict, count: int) -> Answer:
    """No language model, and nothing retrieved is relevant (gates.supported): the honest
    refusal, with the nearest entries' titles as related topics, never as an answer."""
    parts = [prompts.REFUSAL]
    related = [h for h in hits if h.via == "retrieval"][:count]
    if related:
        parts.append(prompts.text("related_topics_heading"))
        parts.append("\n".join(prompts.text("related_topics_entry", id=h.entry_id, title=h.title, stand=h.stand)
                               for h in related))
    notice = f"{exc.reason}: {exc}"
    if base.get("notice"):
        notice = f"{base['notice']} – {notice}"
    fields = {**base, "notice": notice}
    return Answer(state="refused", answer="\n\n".join(parts), flags={"truncated": False, "related": [h.entry_id for h in related]},
                  timings=run.finish(), llm_calls=run.llm_calls, **fields)


def _sources_only(hits: list[Hit], exc: OllamaError, run: _Run, base: dict, count: int) -> Answer:
    reason = exc.reason
    parts, citations = _entries_shown(hits, count)
    parts.insert(0, prompts.text("sources_only_heading", reason=reason))
    notice = f"{reason}: {exc}"
    if base.get("notice"):
        notice = f"{base['notice']} – {notice}"
    fields = {**base, "notice": notice}
    return Answer(state="sources_only", answer="\n\n".join(parts), citations=citations,
                  flags={"truncated": False}, fingerprints=_fingerprints(citations, run, key_values_only=True),
                  timings=run.finish(), llm_calls=run.llm_calls, **fields)


def _unanswered(hits: list[Hit], run: _Run, base: dict, settings: Settings) -> Answer:
    """The model gave no sourced answer to a question the knowledge base covers: the best entries'
    key values as ``sources_only`` shows them, the further retrieved entries by title, all
    labelled unchecked (nothing of it was verified, nothing of the model's text is shown)."""
    parts, citations = _entries_shown(hits, settings.sources_only_entries)
    parts.insert(0, prompts.text("unanswered_heading"))
    shown = {c["id"] for c in citations}
    more = [h for h in hits if h.via == "retrieval" and h.entry_id not in shown][: max(0, settings.top_k - len(shown))]
    if more:
        parts.append(prompts.text("unanswered_more_heading"))
        parts.append("\n".join(prompts.text("related_topics_entry", id=h.entry_id, title=h.title, stand=h.stand)
                               for h in more))
    return Answer(state="unanswered", answer="\n\n".join(parts), citations=citations,
                  flags={"truncated": False, "related": [h.entry_id for h in more]},
                  fingerprints=_fingerprints(citations, run, key_values_only=True),
                  timings=run.finish(), llm_calls=run.llm_calls, **base)


def _entries_shown(hits: list[Hit], count: int) -> tuple[list[str], list[dict]]:
    """The best ``count`` retrieved entries with their key values (or their shown section when
    they have none), as markdown parts, and their citations (``supported`` None: not checked)."""
    parts: list[str] = []
    shown = [h for h in hits if h.via == "retrieval"][:count]
    citations = []
    for h in shown:
        key_values = h.text.strip() if h.section == SECTION_KEY_VALUES else h.key_values.strip()
        parts.append(prompts.text("sources_only_entry", id=h.entry_id, title=h.title, stand=h.stand))
        if key_values:
            parts.append(key_values)
        else:
            parts.append(prompts.text("sources_only_no_key_values", section=h.section) + "\n\n" + h.text.strip())
        citations.append({"id": h.entry_id, "title": h.title, "stand": h.stand,
                          "section": SECTION_KEY_VALUES if key_values else h.section, "supported": None})
    return parts, citations

