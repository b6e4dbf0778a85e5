"""Conversations; a question is answered by a queued job, not in the request.

``action_ask`` stores the question at once (state ``pending``) and wakes the cron. The cron
(``pv_agent.message._cron_answer_pending``) commits before the language-model call, so the wait
holds no database transaction, then stores the answer with its full answer object — the audit
trail — and pushes it to the asker over the bus. A failure leaves the question in state ``error``.

Also here: what the systray panel reads of a conversation, and a user's PV-Agent history going
when they ask for it ("Meinen Verlauf löschen", in their preferences) or when the user is
deleted (res_users.py).
"""
from __future__ import annotations

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError

from ..services import answer_crons

BUS_TYPE = "pv_agent/answer"
MAX_QUESTION_CHARS = 4000
PARAM_MAX_PENDING = "pv_agent.max_pending_per_user"
DEFAULT_MAX_PENDING = 3
RECENT_CONVERSATIONS = 30  # listed in the panel
# less than this share of a question's model time left in a cron run: a fresh run (a fresh count
# of Odoo's watchdog) answers it, not a cut-short one
MIN_SHARE_PER_QUESTION = 0.5
ANSWER_STATES = [
    ("answered", "Answered"),
    ("answered_after_retry", "Answered after a correction"),
    ("uncertain", "Uncertain"),
    ("unanswered", "No checked answer (matching entries, unchecked)"),
    ("refused", "No statement in the knowledge base"),
    ("off_topic", "Off topic"),
    ("sources_only", "Sources only (no language model reachable)"),
]
MESSAGE_STATES = [("pending", "Waiting"), ("running", "Being answered"), ("done", "Answered"),
                  ("error", "Failed"), ("cancelled", "Cancelled")] + ANSWER_STATES
# what a question's clerk sees while it waits (engine/answer/progress.py names the middle ones)
PROGRESS_STAGES = [("queued", "In the queue"), ("sources", "Sources found"), ("writing", "The model is writing"),
                   ("checking", "Being checked"), ("rewriting", "Second attempt"), ("done", "Done"),
                   ("cancelled", "Cancelled")]


def int_param(env, key: str, default: int) -> int:
    raw = env["ir.config_parameter"].sudo().get_param(key)
    try:
        return max(1, int(raw)) if raw else default
    except ValueError:
        return default


def max_pending(env) -> int:
    return int_param(env, PARAM_MAX_PENDING, DEFAULT_MAX_PENDING)


def serialize_user_requests(env, user):
    """Make this transaction conflict with every other one of ``user`` that does the same.

    A cap counts in the request's snapshot: two parallel requests of one user would each miss
    the other's inserts and both pass. A no-op update of the user's row makes the second one
    wait for the first and then fail with a serialization error, which Odoo's retry answers by
    running the request again in a fresh snapshot, where it counts the first one's rows.
    Other users' requests touch other rows and are not held up."""
    env.cr.execute("UPDATE res_users SET write_date = write_date WHERE id = %s", [user.id])


def wake_answer_crons(env):
    """Wake every active answer cron (as many as Settings → "Answers computed at once" asks for):
    Odoo runs each in its own cron worker when it has several."""
    answer_crons.wake(env)


def check_queue_room(env, user, adding=1):
    """One user may have only so many questions waiting (Settings): nobody starves the others."""
    serialize_user_requests(env, user)
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

        Returns ``{conversation_id, message_id, state, sources, queue_position}``: the entries it
        will be answered from are found in this request (no model needed), so the clerk sees
        them at once; progress and the answer arrive over the bus (type ``pv_agent/answer``),
        the answer is stored as a message of the conversation.
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
        progress = message._progress_dict()
        return {"conversation_id": message.conversation_id.id, "message_id": message.id, "state": message.state,
                "sources": progress["sources"], "queue_position": progress["queue_position"]}

    @api.model
    def _queue_question(self, question, user, conversation=None, source="panel", origin=None, answer_fresh=False):
        """The one way into the answering job, for the panel, Discuss and the chatter.

        Stores the question (state ``pending``) in ``conversation``, or in the user's
        conversation of ``origin`` (a ``discuss.channel`` or any record with a chatter), or
        in a new one, wakes the cron, and finds the sources the answer will come from (stored on
        the question and pushed to the asker); an identical prompt's verified answer is stored at
        once (``answer_fresh``: never). Callers have checked that ``user`` may ask.
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
            "state": "pending", "progress": "queued", "author_id": user.id, "source": source,
            "answer_fresh": answer_fresh,
            # where to post the answer: fixed on the question, which nobody but this job writes
            "origin_model": origin._name if origin else False, "origin_res_id": origin.id if origin else False,
        })
        conv.sudo().last_message_at = fields.Datetime.now()
        wake_answer_crons(self.env)
        message._find_early_sources()
        if not answer_fresh:
            message._answer_from_store()
        return message

    # -- the systray panel ------------------------------------------------------------------
    @api.model
    def panel_load(self, conversation_id=None):
        """The panel's data: one conversation of the user (the latest if none is given) and
        the list of their earlier conversations."""
        _check_user(self.env)
        mine = [("user_id", "=", self.env.user.id)]
        conv = self.browse()
        if conversation_id:
            conv = self.search(mine + [("id", "=", int(conversation_id))])
        elif conversation_id is None:
            conv = self.search(mine, limit=1)
        recent = self.search(mine, limit=RECENT_CONVERSATIONS)
        return {
            "conversation": conv._panel_dict() if conv else False,
            "conversations": [c._panel_summary() for c in recent],
        }

    def _panel_summary(self):
        self.ensure_one()
        return {
            "id": self.id,
            "name": self.name,
            "origin": self._origin_label(),
            "last_message_at": fields.Datetime.to_string(self.last_message_at or self.create_date),
        }

    def _origin_label(self):
        if self.origin_model == "discuss.channel":
            return "discuss"
        return "chatter" if self.origin_model else "panel"

    def _panel_dict(self):
        self.ensure_one()
        messages = self.message_ids
        return {**self._panel_summary(), "messages": [m._panel_dict() for m in messages]}

    # -- privacy: the user's own history goes when they ask ---------------------------------
    @api.model
    def action_delete_my_history(self):
        """Delete the caller's own PV-Agent history, nobody else's; returns the number of conversations."""
        _check_user(self.env)
        return _delete_history(self.env, self.env.user)


def _delete_history(env, users) -> int:
    """Delete the PV-Agent history of ``users`` (sudo); returns the number of conversations.

    Conversations with every question, answer and its audit record, their feedback, and their
    Discuss chat with PV-Agent. Not deleted: PV-Agent's notes in records' chatters — they belong
    to the record's history, which other people read too."""
    su = env(su=True)
    convs = su["pv_agent.conversation"].search([("user_id", "in", users.ids)])
    count = len(convs)
    su["pv_agent.feedback"].search([("user_id", "in", users.ids)]).unlink()
    convs.unlink()  # messages (and feedback on them) follow by ondelete=cascade
    bot = su["pv_agent.bot"]._bot_partner()
    if bot:
        for user in users:
            chats = su["discuss.channel"].search([
                ("channel_type", "=", "chat"),
                ("channel_member_ids.partner_id", "=", user.partner_id.id),
                ("channel_member_ids.partner_id", "=", bot.id),
            ]).filtered(lambda c: set(c.channel_member_ids.partner_id.ids) == {user.partner_id.id, bot.id})
            chats.unlink()  # the chat's messages go with it (mail.thread)
    return count
