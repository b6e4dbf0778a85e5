"""A message of a conversation: a question, answered by a queued job, or its answer.

The answering job (``_cron_answer_pending``), its progress (the sources found in the asking
request, then each step of the engine, pushed over the bus) and the clerk's cancel, what the
systray panel reads of a message (``_panel_dict``), the clerk's vote and correction (feedback), and knowledge freshness: every
answer keeps the fingerprints of the chunks it cited, a drift check after each reindex flags
answers whose sources changed and tells the askers (see pv_agent_answer_source.py).
"""
from __future__ import annotations

import json
import logging
import time
from collections import defaultdict

import psycopg2
from markupsafe import Markup

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError
from odoo.tools.misc import format_date

from ..services import answer_html, engine_calls, index_access, odoo_settings, worker_lock
from ..services.engine_calls import CHANGED, REMOVED, UNCHANGED, check_fingerprints
from .pv_agent_answer_source import DRIFT_STATES, SEVERITY
from .pv_agent_bot import entry_url
from .pv_agent_feedback import check_suggestion_room
from .pv_agent_conversation import (
    ANSWER_STATES, BUS_TYPE, MESSAGE_STATES, MIN_SHARE_PER_QUESTION, PROGRESS_STAGES, _check_user,
    check_queue_room, max_pending, wake_answer_crons,
)

_logger = logging.getLogger(__name__)

MAX_SUGGESTION_CHARS = 4000


class PvAgentMessage(models.Model):
    _name = "pv_agent.message"
    _description = "PV-Agent: message"
    _order = "id"
    _rec_name = "conversation_id"

    conversation_id = fields.Many2one("pv_agent.conversation", "Conversation", required=True, index=True,
                                      ondelete="cascade", readonly=True)
    user_id = fields.Many2one(related="conversation_id.user_id", store=True, string="User")
    author_id = fields.Many2one("res.users", "Asked by", readonly=True)
    role = fields.Selection([("question", "Question"), ("answer", "Answer")], "Role", required=True,
                            readonly=True)
    body = fields.Text("Text", readonly=True)
    state = fields.Selection(MESSAGE_STATES, "Status", required=True, default="pending", readonly=True,
                             index=True)
    error = fields.Text("Error", readonly=True)
    source = fields.Selection([("panel", "Panel"), ("discuss", "Discuss"), ("chatter", "Chatter")], "Asked in",
                              default="panel", readonly=True,
                              help="Discuss and chatter: PV-Agent also posts the answer there")
    origin_model = fields.Char("Asked in (model)", readonly=True)
    origin_res_id = fields.Many2oneReference("Asked in (record)", model_field="origin_model", readonly=True)
    question_id = fields.Many2one("pv_agent.message", "Question", readonly=True, ondelete="cascade",
                                  index="btree_not_null")
    answer_id = fields.Many2one("pv_agent.message", "Answer", compute="_compute_answer_id")
    answer_json = fields.Text("Answer object (audit trail)", readonly=True)
    citation_entry_ids = fields.Many2many("pv_agent.entry", "pv_agent_message_citation_rel", "message_id",
                                          "entry_id", string="Cited entries", readonly=True,
                                          context={"active_test": False})
    duration_ms = fields.Integer("Duration (ms)", readonly=True)
    chat_model = fields.Char("Language model", readonly=True)
    embed_model = fields.Char("Embedding model", readonly=True)
    prompt_version = fields.Char("Prompt version", readonly=True)

    # knowledge freshness (see pv_agent_answer_source.py)
    source_ids = fields.One2many("pv_agent.answer.source", "message_id", "Sources (fingerprints)", readonly=True)
    drift_state = fields.Selection(DRIFT_STATES, "Sources since answered", default=UNCHANGED, required=True,
                                   index=True, readonly=True)
    drift_date = fields.Datetime("Source change noticed on", readonly=True)
    reask_of_id = fields.Many2one("pv_agent.message", "Asked again for", readonly=True, index="btree_not_null",
                                  ondelete="set null", help="The earlier answer whose sources changed")

    # reuse of a verified answer (see pv_agent_answer_cache.py)
    answer_fresh = fields.Boolean("Answer without stored answers", readonly=True,
                                  help="Asked with “Answer again”: the model answers, whatever is stored")
    reused_from_id = fields.Many2one("pv_agent.message", "Reused the checked answer", readonly=True,
                                     index="btree_not_null", ondelete="set null", groups="pv_agent.group_manager",
                                     help="The stored answer to the identical prompt this answer was taken from")

    # feedback (see pv_agent_feedback.py)
    feedback_ids = fields.One2many("pv_agent.feedback", "message_id", "Feedback", readonly=True)

    # progress of a question while it waits (written by the asking request and the job only)
    progress = fields.Selection(PROGRESS_STAGES, "Progress", readonly=True)
    progress_detail = fields.Char("Progress detail", readonly=True, help="e.g. why a second attempt is made")
    sources_json = fields.Text("Sources found (before the answer)", readonly=True,
                               help="The entries retrieval found for the question: id, title, Stand, key line, score")
    cancel_requested = fields.Boolean("Cancel requested", readonly=True)
    cancelled_by_id = fields.Many2one("res.users", "Cancelled by", readonly=True)
    cancelled_at = fields.Datetime("Cancelled at", readonly=True)
    post_message_id = fields.Many2one("mail.message", "PV-Agent's message in Discuss/chatter", readonly=True,
                                      ondelete="set null", help="Posted with the sources, edited when the answer is in")

    def _compute_answer_id(self):
        answers = self.search([("question_id", "in", self.ids)]) if self.ids else self.browse()
        by_question = {a.question_id.id: a for a in answers}
        for msg in self:
            msg.answer_id = by_question.get(msg.id, False)

    def action_retry(self):
        """Queue a failed or cancelled question again."""
        _check_user(self.env)
        for msg in self:
            msg.check_access("read")
            if msg.role != "question" or msg.state not in ("error", "cancelled"):
                raise UserError(self.env._("Only failed or cancelled questions can be asked again."))
            if msg.author_id != self.env.user and not self.env.user.has_group("pv_agent.group_manager"):
                raise AccessError(self.env._("You can only ask your own questions again."))
        for author in self.author_id:
            check_queue_room(self.env, author, adding=len(self.filtered(lambda m: m.author_id == author)))
        self.sudo().write({"state": "pending", "error": False, "progress": "queued", "progress_detail": False,
                           "cancel_requested": False, "cancelled_by_id": False, "cancelled_at": False})
        wake_answer_crons(self.env)
        return True

    def action_cancel(self):
        """Cancel the caller's own waiting or running questions. A waiting one ends at once; a
        running one before the engine's next model call (the job reads ``cancel_requested``).
        Questions already answered are left as they are. Returns the ids now cancelled or cancelling."""
        _check_user(self.env)
        for msg in self:
            msg.check_access("read")
            if msg.role != "question":
                raise UserError(self.env._("Only questions can be cancelled."))
            if (msg.author_id or msg.conversation_id.user_id) != self.env.user:
                raise AccessError(self.env._("You can only cancel your own questions."))
        now = fields.Datetime.now()
        stopped = self.browse()
        for msg in self.sudo().filtered(lambda m: m.state in ("pending", "running")):
            msg.write({"cancel_requested": True, "cancelled_by_id": self.env.uid, "cancelled_at": now})
            if msg.state == "pending":
                msg._end_cancelled()
                self.browse()._notify_queue_positions()
            else:
                msg._push_progress()
            stopped |= msg
        return stopped.ids

    # -- the job -----------------------------------------------------------------------------
    @api.model
    def _cron_answer_pending(self):
        """Answer pending questions (the crons ``PV-Agent: answer questions``), user by user.

        Each question is claimed with a row lock that other cron workers skip, so several
        workers answer side by side. A run stops before Odoo's worker time limit and wakes
        the crons for the rest."""
        cron = self.env["ir.cron"]
        self._fail_stuck()
        run_deadline = odoo_settings.cron_run_deadline(self.env.context)
        while True:
            remaining = self.search_count([("role", "=", "question"), ("state", "=", "pending")])
            if not remaining:
                break
            if run_deadline is not None and (
                    run_deadline - time.monotonic() < MIN_SHARE_PER_QUESTION * odoo_settings.model_time_budget()):
                wake_answer_crons(self.env)  # a fresh run (and worker time limit) takes the rest
                cron._commit_progress(0, remaining=remaining)
                break
            question = self._claim_next()
            if not question:
                break  # all pending questions are being claimed by other workers
            # held until the result is committed: while it is, the question is being answered
            with worker_lock.holding(self.env.cr, worker_lock.QUESTIONS, question.id):
                question._answer(deadline=run_deadline)
                more = cron._commit_progress(1, remaining=max(remaining - 1, 0))
            if not more:
                break

    @api.model
    def _next_questions(self):
        """Pending questions in answering order: round-robin over the askers, whoever was served
        least recently first, each asker's oldest question first.

        Every claim asks again, so it reads only a window of each asker's oldest questions (as
        many as one may have waiting): a queue of hundreds costs a claim no more than a few."""
        self.flush_model(["role", "state", "author_id"])
        self.env.cr.execute("""
            SELECT id FROM (
                SELECT id, row_number() OVER (PARTITION BY author_id ORDER BY id) AS place
                  FROM pv_agent_message
                 WHERE role = 'question' AND state = 'pending'
            ) AS queue
             WHERE place <= %s
             ORDER BY id""", [max_pending(self.env)])
        pending = self.browse([row[0] for row in self.env.cr.fetchall()])
        if not pending:
            return pending
        served = dict(self._read_group([("role", "=", "question"), ("state", "not in", ("pending",)),
                                        ("author_id", "in", pending.author_id.ids)],
                                       ["author_id"], ["id:max"]))
        queues: dict = {}
        for question in pending:
            queues.setdefault(question.author_id, []).append(question)
        askers = sorted(queues, key=lambda a: (served.get(a, 0), queues[a][0].id))
        order = []
        while any(queues[a] for a in askers):
            order += [queues[a].pop(0) for a in askers if queues[a]]
        return self.browse([q.id for q in order])

    @api.model
    def _claim_next(self):
        """The next question no other worker has claimed, locked until ``_answer`` marks it running."""
        for question in self._next_questions():
            try:
                with self.env.cr.savepoint():
                    self.env.cr.execute(
                        "SELECT id FROM pv_agent_message WHERE id = %s AND state = 'pending' FOR UPDATE SKIP LOCKED",
                        [question.id])
                    if self.env.cr.fetchone():
                        return question
            except psycopg2.errors.SerializationFailure:
                continue  # another worker took it since this transaction began
        return self.browse()

    @api.model
    def _fail_stuck(self):
        """Fail the questions a dead worker left "running" (killed by Odoo's watchdog, the server
        restarted): nobody holds their lock any more (see services/worker_lock.py)."""
        for question in self.search([("role", "=", "question"), ("state", "=", "running")]):
            if not worker_lock.is_abandoned(self.env.cr, worker_lock.QUESTIONS, question.id):
                continue  # a living worker is answering it
            question = question.with_context(lang=question.author_id.lang or self.env.lang)
            try:
                with self.env.cr.savepoint():
                    question._fail(question.env._("Answering was interrupted. Please ask again."))
            except psycopg2.errors.SerializationFailure:
                continue  # its worker finished it since this transaction began

    def _answer(self, deadline=None):
        """Answer one question. Commits before the model call and after storing the result.

        ``deadline`` (``time.monotonic()``) bounds the model calls; by default the budget of
        one cron run (Odoo's worker time limit)."""
        self.ensure_one()
        asker = self.author_id or self.conversation_id.user_id
        self = self.with_context(lang=asker.lang or self.env.lang)  # messages in the asker's language
        if not asker.has_group("pv_agent.group_user"):
            # Knowledge text reaches a prompt only for users allowed to read it.
            return self._fail(self.env._("The user has no access (any more) to PV-Agent."))
        settings = odoo_settings.engine_settings(self.env)
        question_text = self.body
        self.write({"state": "running"})
        self._notify_queue_positions()  # the questions behind it move up
        self.env["ir.cron"]._commit_progress(0)  # no transaction stays open during the model call
        started = time.monotonic()
        stop = {}  # the cancel request, as should_stop last read it
        try:
            if deadline is None:
                budget = odoo_settings.model_time_budget()
                deadline = started + budget if budget is not None else None
            with index_access.using_index(self.env.cr.dbname, self.env) as index:
                if index is None:
                    return self._fail(self.env._(
                        "There is no index yet. A PV-Agent manager has to import the knowledge base "
                        "and reindex."))
                reuse = None if self.answer_fresh else self.env["pv_agent.answer.cache"]._engine_store()
                data = engine_calls.answer(question_text, index, settings, deadline=deadline, reuse=reuse,
                                           on_progress=self._on_progress, should_stop=lambda: self._should_stop(stop))
        except Exception as exc:  # any failure must leave the question visibly failed, never lost
            self.env.cr.rollback()
            if engine_calls.is_cancelled(exc):
                _logger.info("pv_agent: question %s cancelled while it was answered", self.id)
                return self._end_cancelled(stop.get("by"), stop.get("at"))
            _logger.exception("pv_agent: answering message %s failed", self.id)
            return self._fail(engine_calls.failure_text(self.env, exc))
        if self._should_stop(stop):  # cancelled (or deleted) during the last model call: no answer to show
            _logger.info("pv_agent: question %s cancelled or deleted during its last model call; answer dropped",
                         self.id)
            return self._end_cancelled(stop.get("by"), stop.get("at"))
        self._store_answer(data, int((time.monotonic() - started) * 1000))

    def _store_answer(self, data: dict, duration_ms: int):
        """Store the answer. The model call held no transaction, so meanwhile the clerk may have
        deleted the conversation, or a concurrent transaction changed its rows: that ends this
        question, never the whole run (the other questions of the batch are still answered)."""
        for _attempt in range(2):
            if not self.exists():
                _logger.info("pv_agent: question %s was deleted while it was answered", self.id)
                return self.browse()
            try:
                with self.env.cr.savepoint():
                    answer = self._create_answer(data, duration_ms)
                break
            except (psycopg2.errors.SerializationFailure, psycopg2.errors.ForeignKeyViolation):
                self.env.cr.rollback()  # a fresh snapshot sees the concurrent change
                self.env.invalidate_all()
        else:
            return self._fail(self.env._("The answer could not be stored. Please ask again."))
        self.env["pv_agent.answer.cache"]._remember(self, answer, data)
        try:
            with self.env.cr.savepoint():
                self.conversation_id.last_message_at = fields.Datetime.now()
        except psycopg2.errors.SerializationFailure:
            pass  # a new question in the conversation wrote it meanwhile, just as recently
        self._notify(answer)
        return answer

    def _create_answer(self, data: dict, duration_ms: int):
        cited = [c.get("id") for c in data.get("citations") or [] if c.get("id")]
        entries = self.env["pv_agent.entry"].with_context(active_test=False).search([("entry_id", "in", cited)])
        models_used = data.get("models") or {}
        state = data.get("state") if data.get("state") in dict(ANSWER_STATES) else "uncertain"
        answer = self.create({
            "conversation_id": self.conversation_id.id,
            "role": "answer",
            "question_id": self.id,
            "author_id": self.author_id.id,
            "body": data.get("answer") or "",
            "state": state,
            "answer_json": json.dumps(data, ensure_ascii=False, indent=1, default=str),
            "citation_entry_ids": [fields.Command.set(entries.ids)],
            "duration_ms": duration_ms,
            "chat_model": models_used.get("chat") or models_used.get("chat_model") or "",
            "embed_model": models_used.get("embed") or models_used.get("embed_model") or "",
            "prompt_version": str(data.get("prompt_version") or ""),
            "reused_from_id": self._reused_origin(data),
        })
        self.write({"state": "done", "progress": "done", "progress_detail": False})
        self._store_fingerprints(answer, data.get("fingerprints") or [])
        return answer

    def _reused_origin(self, data: dict):
        """The original answer a reused one was taken from, while it exists."""
        origin = ((data.get("reused") or {}).get("from") or {}).get("answer_id")
        return self.browse(int(origin)).exists().id if origin else False

    def _store_fingerprints(self, answer, fingerprints):
        """Keep the cited chunks as they were when answered: the drift check's input."""
        if fingerprints:
            Entry = self.env["pv_agent.entry"].with_context(active_test=False)
            by_id = {e.entry_id: e.id for e in Entry.search([("entry_id", "in", [f["id"] for f in fingerprints])])}
            self.env["pv_agent.answer.source"].sudo().create([{
                "message_id": answer.id, "entry_ref": f["id"], "entry_id": by_id.get(f["id"], False),
                "section": f.get("section") or "", "chunk_hash": f["chunk_hash"], "text": f.get("text") or "",
            } for f in fingerprints])

    def _fail(self, reason: str):
        self.write({"state": "error", "error": reason})
        self._notify(None)

    def _notify(self, answer):
        """Push the result to the asker's browser tabs (channel: their partner)."""
        user = self.conversation_id.user_id
        payload = {
            "conversation_id": self.conversation_id.id,
            "question_id": self.id,
            "question_state": self.state,
            "error": self.error or False,
        }
        if answer:
            payload.update({
                "answer_id": answer.id,
                "state": answer.state,
                "body": answer.body,
                "citations": json.loads(answer.answer_json).get("citations") or [],
            })
        if self.source in ("discuss", "chatter"):
            # posted first, so that the browser told below finds PV-Agent's message there
            self.env["pv_agent.bot"]._post_result(self, answer)
            payload.update(origin_model=self.origin_model, origin_res_id=self.origin_res_id)
        user._bus_send(BUS_TYPE, payload)

    # -- progress and cancel ----------------------------------------------------------------
    def _find_early_sources(self):
        """In the asking request, right after queuing: the entries the answer will come from
        (retrieval and the relevance gate, no model; milliseconds), stored and pushed, so the
        clerk need not wait for a free answer worker to see them. Any failure (no index yet, …)
        only skips them: it never fails the ask."""
        self.ensure_one()
        try:
            with self.env.cr.savepoint():
                settings = odoo_settings.engine_settings(self.env)
                with index_access.using_index(self.env.cr.dbname, self.env) as index:
                    if index is None:
                        return []
                    sources = engine_calls.find_sources(self.body or "", index, settings)
                self.sudo().sources_json = json.dumps(sources, ensure_ascii=False)
        except Exception:
            _logger.warning("pv_agent: no early sources for question %s", self.id, exc_info=True)
            return []
        self._push_progress()
        if sources and self.source in ("discuss", "chatter"):
            self.env["pv_agent.bot"]._post_sources(self)
        return sources

    def _answer_from_store(self):
        """In the asking request, after the sources: an identical prompt's verified answer
        (pv_agent_answer_cache.py) becomes this question's answer at once — no model call, no wait
        for a free answer worker. Nothing stored, or anything failing: the question waits for the
        answering job as before (never a failed ask)."""
        self.ensure_one()
        store = self.env["pv_agent.answer.cache"]._request_store()
        asker = self.author_id or self.conversation_id.user_id
        if store is None or not asker.has_group("pv_agent.group_user"):
            return False
        self = self.with_context(lang=asker.lang or self.env.lang)
        started = time.monotonic()
        try:
            with self.env.cr.savepoint():
                settings = odoo_settings.engine_settings(self.env)
                with index_access.using_index(self.env.cr.dbname, self.env) as index:
                    data = engine_calls.stored_answer(self.body or "", index, settings, store) if index else None
                if not data:
                    return False
                answer = self._create_answer(data, int((time.monotonic() - started) * 1000))
                self.env["pv_agent.answer.cache"]._remember(self, answer, data)
        except Exception:
            _logger.warning("pv_agent: question %s: the stored answer could not be used", self.id, exc_info=True)
            return False
        self._notify(answer)
        return answer

    def _sources_for_panel(self):
        """The stored sources with the record to open for each (False if the user may not read it)."""
        try:
            sources = json.loads(self.sources_json or "[]")
        except ValueError:
            return []
        ids = [s.get("id") for s in sources if s.get("id")]
        entries = self.env["pv_agent.entry"].with_context(active_test=False).search([("entry_id", "in", ids)])
        by_id = {e.entry_id: e.id for e in entries}
        return [{"id": s.get("id"), "title": s.get("title") or "", "stand": s.get("stand") or "",
                 "line": s.get("line") or "", "score": s.get("score"), "record_id": by_id.get(s.get("id"), False)}
                for s in sources]

    def _queue_position(self):
        """1-based place among the waiting questions, in the order the job takes them; False if not waiting."""
        if self.state != "pending":
            return False
        order = self.sudo()._next_questions().ids  # sudo: only the place is told, no other asker's data
        return order.index(self.id) + 1 if self.id in order else False

    def _progress_dict(self, queue_position=None):
        self.ensure_one()
        return {"stage": self.progress or ("queued" if self.state == "pending" else False),
                "detail": self.progress_detail or "", "sources": self._sources_for_panel(),
                "queue_position": self._queue_position() if queue_position is None else queue_position,
                "cancel_requested": self.cancel_requested}

    def _push_progress(self, queue_position=None):
        """Tell the asker's browser tabs where the question stands (the final result: ``_notify``)."""
        self.conversation_id.user_id._bus_send(BUS_TYPE, {
            "conversation_id": self.conversation_id.id, "question_id": self.id,
            "progress": self._progress_dict(queue_position)})

    @api.model
    def _notify_queue_positions(self):
        """A question left the queue: the others waiting move up."""
        for place, question in enumerate(self.sudo()._next_questions(), start=1):
            question._push_progress(queue_position=place)

    def _on_progress(self, stage: str, info: dict):
        """The engine's progress (engine/answer/progress.py), stored and pushed. Each step is
        committed at once: the job keeps no transaction open across the model call that follows."""
        if stage == "writing" and info.get("attempt", 1) > 1:
            return  # "rewriting" just said so, with the reason
        vals = {"progress": stage, "progress_detail": info.get("reason") or False}
        if stage == "sources":
            vals["sources_json"] = json.dumps(info.get("sources") or [], ensure_ascii=False)
        for _attempt in range(2):
            try:
                if not self.exists():
                    return
                self.sudo().write(vals)
                self._push_progress()
                self.env["ir.cron"]._commit_progress(0)
                return
            except psycopg2.errors.SerializationFailure:  # the clerk's cancel wrote the row meanwhile
                self.env.cr.rollback()
                self.env.invalidate_all()
        _logger.info("pv_agent: progress %s of question %s not stored", stage, self.id)

    def _should_stop(self, stop: dict) -> bool:
        """Has the clerk cancelled (or deleted) the question? One short query, committed at once
        (no transaction held during the model call); what it read goes into ``stop``."""
        self.env.cr.execute(
            "SELECT cancel_requested, cancelled_by_id, cancelled_at FROM pv_agent_message WHERE id = %s", [self.id])
        row = self.env.cr.fetchone()
        self.env["ir.cron"]._commit_progress(0)
        if row is None:
            return True  # deleted while it was answered: nobody waits for it
        if row[0]:
            stop.update(by=row[1], at=row[2])
        return bool(row[0])

    def _end_cancelled(self, by=None, at=None):
        """End a cancelled question; its audit trail (``error``) says who cancelled it, and when."""
        if not self.exists():
            return
        asker = self.author_id or self.conversation_id.user_id
        self = self.with_context(lang=asker.lang or self.env.lang)
        user = self.env["res.users"].browse(by) if by else self.cancelled_by_id
        at = at or self.cancelled_at or fields.Datetime.now()
        local = fields.Datetime.context_timestamp(self.with_context(tz=asker.tz or "Europe/Vienna"), at)
        self.sudo().write({
            "state": "cancelled", "progress": "cancelled", "cancel_requested": True,
            "cancelled_by_id": user.id, "cancelled_at": at,
            "error": self.env._("Cancelled by %(user)s at %(time)s", user=user.sudo().name or "?",
                                time=local.strftime("%Y-%m-%d %H:%M:%S")),
        })
        self._notify(None)

    # -- the systray panel ------------------------------------------------------------------
    def _panel_dict(self):
        self.ensure_one()
        out = {
            "id": self.id,
            "role": self.role,
            "state": self.state,
            "question_id": self.question_id.id,
            "created": fields.Datetime.to_string(self.create_date),
            "source": self.source,
        }
        if self.role == "question":
            out.update(body=self.body or "", error=self.error or False,
                       pending=self.state in ("pending", "running"))
            if out["pending"]:
                progress = self._progress_dict()
                out.update(progress=progress["stage"], progress_detail=progress["detail"],
                           sources=progress["sources"], queue_position=progress["queue_position"],
                           cancel_requested=progress["cancel_requested"])
            else:
                out.update(progress=self.progress or False, progress_detail=self.progress_detail or "", sources=[],
                           queue_position=False, cancel_requested=self.cancel_requested)
            return out
        data = json.loads(self.answer_json or "{}")
        by_id = {e.entry_id: e for e in self.citation_entry_ids}
        out.update(
            html=answer_html.render(self.body or "", lambda i: entry_url(by_id[i].id) if i in by_id else None),
            state_line=self._state_line(data),
            citations=[{
                "id": c.get("id"),
                "stand": c.get("stand") or "",
                "title": c.get("title") or "",
                "record_id": by_id[c["id"]].id if c.get("id") in by_id else False,
                "supported": c.get("supported"),
            } for c in data.get("citations") or []],
            vote=self._my_vote(),
        )
        labels = dict(self._fields["drift_state"]._description_selection(self.env))
        drifted = self.source_ids.filtered(lambda s: s.status != UNCHANGED)
        out["drift"] = {
            "state": self.drift_state,
            "label": labels[self.drift_state],
            "sources": [s._panel_dict() for s in drifted],
        } if self.drift_state != UNCHANGED else False
        out["reasked"] = bool(self.search_count([("reask_of_id", "=", self.id)], limit=1))
        out["reused"] = self._reused_label(data, self.env.user)
        return out

    def _reused_label(self, data: dict, reader):
        """For a reused answer: "Already checked answer of <date>", and the original answer's id
        when ``reader`` may open it (their own; a manager's any), else False."""
        reused = data.get("reused")
        if not reused:
            return False
        date = (reused.get("from") or {}).get("date") or fields.Datetime.to_string(self.create_date)
        original = self.sudo().reused_from_id  # another clerk's answer, maybe: its id only if the reader may open it
        return {
            "label": self.env._("Already checked answer of %(date)s", date=format_date(self.env, date)),
            "answer_id": original.id if original and original.with_user(reader).has_access("read") else False,
        }

    def _state_line(self, data=None):
        """The answer's state in one line: ``{text, level}`` (level: a Bootstrap colour)."""
        self.ensure_one()
        data = data if data is not None else json.loads(self.answer_json or "{}")
        _ = self.env._
        flags = data.get("flags") or {}
        conflict = bool(flags.get("conflicts"))
        state = self.state
        # what verification did, as the engine worded it ("4 Zahlen in den zitierten Einträgen geprüft")
        checked = (flags.get("checked") or {}).get("state_line") or _("figures and statements checked against the cited entries")
        if state in ("answered", "answered_after_retry") and conflict:
            return {"text": _("⚠ Conflict in the sources: the entries state different values, both are cited – "
                              "check which one applies."), "level": "warning", "conflict": True}
        if state == "uncertain" and conflict:
            return {"text": _("⚠ Conflict in the sources, uncertain: only one side is cited; please check the "
                              "sources."), "level": "danger", "conflict": True}
        lines = {
            "answered": (_("Answered: %(checked)s.", checked=checked), "success"),
            "answered_after_retry": (_("Answered after a correction (the first draft failed the source check "
                                       "and was rewritten): %(checked)s.", checked=checked), "success"),
            "uncertain": (_("Uncertain: parts of the answer are not backed by the knowledge base and are marked."),
                          "danger"),
            "unanswered": (_("No checked answer: the language model gave no sourced answer, but the knowledge base "
                             "has entries on this question – the best-matching ones, not checked."), "warning"),
            "refused": (_("No statement in the knowledge base: it has no entry on this question."), "secondary"),
            "off_topic": (_("Outside payroll: PV-Agent only answers questions on Austrian payroll."), "secondary"),
            "sources_only": (_("Sources only – language model not reachable: the best-matching entries, not a "
                               "checked answer."), "warning"),
        }
        text, level = lines.get(state, (dict(self._fields["state"]._description_selection(self.env)).get(state, state),
                                        "secondary"))
        return {"text": text, "level": level, "conflict": False}

    def _my_vote(self):
        vote = self.env["pv_agent.feedback"].sudo().search(
            [("message_id", "=", self.id), ("user_id", "=", self.env.uid), ("kind", "in", ("up", "down"))],
            order="id desc", limit=1)
        return vote.kind or False

    def _check_own_answer(self):
        """The answer must be readable by the user (record rules) and the user must have asked it."""
        _check_user(self.env)
        self.ensure_one()
        self.check_access("read")
        if self.role != "answer":
            raise AccessError(self.env._("Only answers can be rated."))
        if (self.author_id or self.conversation_id.user_id) != self.env.user:
            raise AccessError(self.env._("Only the user who asked can rate an answer or suggest a correction."))

    # -- feedback --------------------------------------------------------------------------
    def action_vote(self, vote):
        """Thumbs up/down (``"up"``/``"down"``) for the user's answer; ``False`` takes the vote back."""
        self._check_own_answer()
        if vote not in ("up", "down", False, None):
            raise UserError(self.env._("Unknown vote %s.", vote))
        Feedback = self.env["pv_agent.feedback"].sudo()
        # a vote a manager has already reviewed stays (the review is history); an open one is replaced
        Feedback.search([("message_id", "=", self.id), ("user_id", "=", self.env.uid),
                         ("kind", "in", ("up", "down")), ("state", "in", ("new", "noted"))]).unlink()
        if vote:
            Feedback.create({"message_id": self.id, "user_id": self.env.uid, "kind": vote,
                             "state": "noted" if vote == "up" else "new"})
        return vote or False

    def action_suggest_correction(self, entry_record_id, text):
        """Queue a correction of an entry (by its record id) for the managers."""
        self._check_own_answer()
        text = (text or "").strip()
        if not text:
            raise UserError(self.env._("Please describe the correction."))
        if len(text) > MAX_SUGGESTION_CHARS:
            raise UserError(self.env._("The suggestion is too long (at most %s characters).", MAX_SUGGESTION_CHARS))
        entry = self.env["pv_agent.entry"].with_context(active_test=False).browse(int(entry_record_id or 0)).exists()
        if not entry:
            raise UserError(self.env._("Please choose the entry to correct."))
        entry.check_access("read")
        check_suggestion_room(self.env, self.env.user)
        feedback = self.env["pv_agent.feedback"].sudo().create({
            "message_id": self.id, "user_id": self.env.uid, "kind": "correction", "entry_id": entry.id, "text": text,
        })
        return feedback.id

    # -- knowledge freshness ---------------------------------------------------------------
    def action_reanswer(self):
        """Ask the question of this answer again against the current knowledge base."""
        self._check_own_answer()
        if self.conversation_id.user_id != self.env.user:
            raise UserError(self.env._("Only the clerk who asked can ask again."))
        question = self.env["pv_agent.conversation"]._queue_question(
            self.question_id.body, self.env.user, conversation=self.conversation_id)
        question.reask_of_id = self
        return {"conversation_id": question.conversation_id.id, "message_id": question.id, "state": question.state}

    def action_answer_fresh(self):
        """"Answer again" beside a reused answer: the same question, answered by the model whatever
        is stored; the fresh verdict replaces the stored one (pv_agent_answer_cache._remember)."""
        self._check_own_answer()
        question = self.env["pv_agent.conversation"]._queue_question(
            self.question_id.body, self.env.user, conversation=self.conversation_id, answer_fresh=True)
        question.write({"reask_of_id": self.id})
        return {"conversation_id": question.conversation_id.id, "message_id": question.id, "state": question.state}

    def action_reanswer_from_form(self):
        self.action_reanswer()
        return {"type": "ir.actions.client", "tag": "display_notification", "params": {
            "title": self.env._("Asked again"), "type": "info",
            "message": self.env._("The new answer appears in the PV-Agent panel, beside the old one."),
            "next": {"type": "ir.actions.client", "tag": "soft_reload"}}}

    @api.model
    def _check_drift(self, index) -> dict:
        """Compare all stored fingerprints with ``index``; returns counts and the newly flagged answers.

        Identical fingerprints (many answers cite the same chunk) are checked once."""
        Source = self.env["pv_agent.answer.source"].sudo()
        sources = Source.search([])
        unique = {}
        for src in sources:
            unique.setdefault((src.entry_ref, src.section or "", src.chunk_hash), src._fingerprint())
        verdicts = dict(zip(unique, check_fingerprints(list(unique.values()), index)))
        now = fields.Datetime.now()
        by_answer = defaultdict(lambda: UNCHANGED)
        for src in sources:
            verdict = verdicts[(src.entry_ref, src.section or "", src.chunk_hash)]
            if (src.status, src.diff or "") != (verdict.status, verdict.diff or ""):
                src.write({"status": verdict.status, "diff": verdict.diff or False, "checked_at": now})
            if SEVERITY[verdict.status] >= SEVERITY[by_answer[src.message_id.id]]:
                by_answer[src.message_id.id] = verdict.status
        answers = self.browse(list(by_answer))
        newly = self.browse()
        for answer in answers:
            status = by_answer[answer.id]
            if status == answer.drift_state:
                continue
            if SEVERITY[status] > SEVERITY[answer.drift_state]:
                newly |= answer
            answer.write({"drift_state": status, "drift_date": now if status != UNCHANGED else False})
        self._notify_drift(newly)
        return {"answers": len(answers), "changed": sum(1 for s in by_answer.values() if s == CHANGED),
                "removed": sum(1 for s in by_answer.values() if s == REMOVED), "newly_flagged": newly}

    def _notify_drift(self, answers):
        """One Discuss message from PV-Agent per asker, listing their newly affected answers."""
        Bot = self.env["pv_agent.bot"]
        for user in answers.mapped("user_id"):
            mine = answers.filtered(lambda a: a.user_id == user).with_context(lang=user.lang or self.env.lang)
            Bot._notify_user(user, mine._drift_message())
            user._bus_send(BUS_TYPE, {"drift": mine.ids})

    def _drift_message(self) -> Markup:
        _ = self.env._
        labels = dict(self._fields["drift_state"]._description_selection(self.env))
        items = []
        for answer in self:
            cited = Markup(", ").join(
                Markup('<a href="%s">[%s]</a> %s') % (entry_url(s.entry_id.id), s.entry_ref, s.section)
                if s.entry_id else Markup("[%s] %s") % (s.entry_ref, s.section)
                for s in answer.source_ids.filtered(lambda s: s.status != UNCHANGED))
            items.append(Markup('<li>„%s“ – <strong>%s</strong>: %s – <a href="/odoo/pv_agent.message/%s">%s</a></li>') % (
                (answer.question_id.body or "")[:160], labels[answer.drift_state], cited, answer.id,
                _("open the answer")))
        intro = _("The sources of %s of your answers have changed since they were given:", len(self))
        outro = _("In the PV-Agent panel each of them shows the change; “Answer again” answers it against the "
                  "current knowledge base and keeps the old answer beside the new one.")
        return Markup("<p>%s</p><ul>%s</ul><p>%s</p>") % (intro, Markup("").join(items), outro)
