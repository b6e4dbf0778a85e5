"""Conversations and their messages; a question is answered by a queued job, not in the request.

``action_ask`` stores the question at once (state ``pending``) and wakes the cron. The cron
(``_cron_answer_pending``) commits before the language-model call, so the wait holds no
database transaction, then stores the answer with its full answer object — the audit trail —
and pushes it to the asker over the bus. A failure leaves the question in state ``error``.
"""
from __future__ import annotations

import json
import logging
import time

import psycopg2

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError

from ..engine.ollama import OllamaClient
from . import engine_bridge

_logger = logging.getLogger(__name__)

BUS_TYPE = "pv_agent/answer"
MAX_QUESTION_CHARS = 4000
RUNNING_STUCK_MINUTES = 15
PARAM_MAX_PENDING = "pv_agent.max_pending_per_user"
DEFAULT_MAX_PENDING = 3
MIN_SECONDS_PER_QUESTION = 20  # less left in a cron run: the next run answers it
ANSWER_CRONS = ("pv_agent.ir_cron_pv_agent_answer", "pv_agent.ir_cron_pv_agent_answer_2")
ANSWER_STATES = [
    ("answered", "Answered"),
    ("answered_after_retry", "Answered after a correction"),
    ("uncertain", "Uncertain"),
    ("refused", "No statement in the knowledge base"),
    ("off_topic", "Off topic"),
    ("sources_only", "Sources only (no language model reachable)"),
]
MESSAGE_STATES = [("pending", "Waiting"), ("running", "Being answered"), ("done", "Answered"),
                  ("error", "Failed")] + ANSWER_STATES


def max_pending(env) -> int:
    raw = env["ir.config_parameter"].sudo().get_param(PARAM_MAX_PENDING)
    try:
        return max(1, int(raw)) if raw else DEFAULT_MAX_PENDING
    except ValueError:
        return DEFAULT_MAX_PENDING


def wake_answer_crons(env):
    """Wake every answer cron: Odoo runs each in its own cron worker when it has several."""
    for xmlid in ANSWER_CRONS:
        cron = env.ref(xmlid, raise_if_not_found=False)
        if cron:
            cron.sudo()._trigger()


def check_queue_room(env, user, adding=1):
    """One user may have only so many questions waiting (Settings): nobody starves the others."""
    waiting = env["pv_agent.message"].sudo().search_count([
        ("role", "=", "question"), ("state", "in", ("pending", "running")), ("author_id", "=", user.id)])
    limit = max_pending(env)
    if waiting + adding > limit:
        raise UserError(env._("You already have %s questions waiting for an answer; please wait for them "
                              "before asking more.", waiting))


def _check_user(env):
    if not env.user.has_group("pv_agent.group_user"):
        raise AccessError(env._("You have no access to PV-Agent."))


class PvAgentConversation(models.Model):
    _name = "pv_agent.conversation"
    _description = "PV-Agent: conversation"
    _order = "last_message_at desc, id desc"

    name = fields.Char("Title", required=True, default=lambda self: self.env._("New conversation"))
    user_id = fields.Many2one("res.users", "User", required=True, index=True, readonly=True,
                              default=lambda self: self.env.user, ondelete="restrict")  # keep audit trails
    message_ids = fields.One2many("pv_agent.message", "conversation_id", "Messages")
    message_count = fields.Integer("Number of messages", compute="_compute_message_count")
    last_message_at = fields.Datetime("Last message", readonly=True, index=True)
    # Questions from Discuss or a record's chatter land in one conversation per user and thread.
    origin_model = fields.Char("Origin (model)", readonly=True, index="btree_not_null")
    origin_res_id = fields.Many2oneReference("Origin (record)", model_field="origin_model", readonly=True)

    @api.depends("message_ids")
    def _compute_message_count(self):
        for conv in self:
            conv.message_count = len(conv.message_ids)

    @api.model
    def action_ask(self, question, conversation_id=None):
        """Store ``question`` in the user's conversation (a new one if none) and queue the answer.

        Returns ``{conversation_id, message_id, state}``; the answer arrives over the bus
        (type ``pv_agent/answer``) and is stored as a message of the conversation.
        """
        _check_user(self.env)
        conv = self.browse()
        if conversation_id:
            conv = self.browse(int(conversation_id)).exists()
            if not conv:
                raise UserError(self.env._("The conversation no longer exists."))
            conv.check_access("read")  # conversations are read-only for everybody; only the queue writes
            if conv.user_id != self.env.user:
                raise AccessError(self.env._("You can only ask in your own conversations."))
        message = self._queue_question(question, self.env.user, conversation=conv)
        return {"conversation_id": message.conversation_id.id, "message_id": message.id, "state": message.state}

    @api.model
    def _queue_question(self, question, user, conversation=None, source="panel", origin=None):
        """The one way into the answering job, for the panel, Discuss and the chatter.

        Stores the question (state ``pending``) in ``conversation``, or in the user's
        conversation of ``origin`` (a ``discuss.channel`` or any record with a chatter), or
        in a new one, and wakes the cron. Callers have checked that ``user`` may ask.
        """
        question = (question or "").strip()
        if not question:
            raise UserError(self.env._("Please enter a question."))
        if len(question) > MAX_QUESTION_CHARS:
            raise UserError(self.env._("The question is too long (at most %s characters).", MAX_QUESTION_CHARS))
        check_queue_room(self.env, user)
        Conversation = self.sudo()
        conv = conversation
        if not conv and origin:
            conv = Conversation.search([("user_id", "=", user.id), ("origin_model", "=", origin._name),
                                        ("origin_res_id", "=", origin.id)], limit=1)
            if not conv:
                conv = Conversation.create({"user_id": user.id, "name": origin.sudo().display_name or question[:60],
                                            "origin_model": origin._name, "origin_res_id": origin.id})
        if not conv:
            title = question if len(question) <= 60 else question[:57].rstrip() + "…"
            conv = Conversation.create({"name": title, "user_id": user.id})
        message = self.env["pv_agent.message"].sudo().create({
            "conversation_id": conv.id, "role": "question", "body": question,
            "state": "pending", "author_id": user.id, "source": source,
            # where to post the answer: fixed on the question, which nobody but this job writes
            "origin_model": origin._name if origin else False, "origin_res_id": origin.id if origin else False,
        })
        conv.sudo().last_message_at = fields.Datetime.now()
        wake_answer_crons(self.env)
        return message


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

    def _compute_answer_id(self):
        answers = self.search([("question_id", "in", self.ids)]) if self.ids else self.browse()
        by_question = {a.question_id.id: a for a in answers}
        for msg in self:
            msg.answer_id = by_question.get(msg.id, False)

    def action_retry(self):
        """Queue a failed question again."""
        _check_user(self.env)
        for msg in self:
            msg.check_access("read")
            if msg.role != "question" or msg.state != "error":
                raise UserError(self.env._("Only failed questions can be asked again."))
            if msg.author_id != self.env.user and not self.env.user.has_group("pv_agent.group_manager"):
                raise AccessError(self.env._("You can only ask your own questions again."))
        for author in self.author_id:
            check_queue_room(self.env, author, adding=len(self.filtered(lambda m: m.author_id == author)))
        self.sudo().write({"state": "pending", "error": False})
        wake_answer_crons(self.env)
        return True

    # -- the job -----------------------------------------------------------------------------
    @api.model
    def _cron_answer_pending(self):
        """Answer pending questions (the crons ``PV-Agent: answer questions``), user by user.

        Each question is claimed with a row lock that other cron workers skip, so several
        workers answer side by side. A run stops before Odoo's worker time limit and wakes
        the crons for the rest."""
        cron = self.env["ir.cron"]
        self._fail_stuck()
        run_deadline = engine_bridge.cron_run_deadline(self.env.context)
        while True:
            remaining = self.search_count([("role", "=", "question"), ("state", "=", "pending")])
            if not remaining:
                break
            if run_deadline is not None and run_deadline - time.monotonic() < min(
                    MIN_SECONDS_PER_QUESTION, engine_bridge.model_time_budget() / 2):
                wake_answer_crons(self.env)  # a fresh run (and worker time limit) takes the rest
                cron._commit_progress(0, remaining=remaining)
                break
            question = self._claim_next()
            if not question:
                break  # all pending questions are being claimed by other workers
            question._answer(deadline=run_deadline)
            if not cron._commit_progress(1, remaining=max(remaining - 1, 0)):
                break

    @api.model
    def _next_questions(self):
        """Pending questions in answering order: round-robin over the askers, whoever was served
        least recently first, each asker's oldest question first."""
        pending = self.search([("role", "=", "question"), ("state", "=", "pending")], order="id")
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
        limit = fields.Datetime.subtract(fields.Datetime.now(), minutes=RUNNING_STUCK_MINUTES)
        stuck = self.search([("role", "=", "question"), ("state", "=", "running"), ("write_date", "<", limit)])
        for question in stuck:
            question = question.with_context(lang=question.author_id.lang or self.env.lang)
            question._fail(question.env._("Answering was interrupted. Please ask again."))

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
        settings = engine_bridge.engine_settings(self.env)
        question_text = self.body
        self.write({"state": "running"})
        self.env["ir.cron"]._commit_progress(0)  # no transaction stays open during the model call
        started = time.monotonic()
        try:
            from ..engine.ask import ask

            if deadline is None:
                budget = engine_bridge.model_time_budget()
                deadline = started + budget if budget is not None else None
            with engine_bridge.using_index(self.env.cr.dbname, self.env) as index:
                if index is None:
                    return self._fail(self.env._(
                        "There is no index yet. A PV-Agent manager has to import the knowledge base "
                        "and reindex."))
                data = ask(question_text, index, settings, client=OllamaClient(settings),
                           deadline=deadline).as_dict()
        except Exception as exc:  # any failure must leave the question visibly failed, never lost
            _logger.exception("pv_agent: answering message %s failed", self.id)
            self.env.cr.rollback()
            return self._fail(engine_bridge.failure_text(self.env, exc))
        self._store_answer(data, int((time.monotonic() - started) * 1000))

    def _store_answer(self, data: dict, duration_ms: int):
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
        })
        self.write({"state": "done"})
        self.conversation_id.last_message_at = fields.Datetime.now()
        self._notify(answer)
        return answer

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
