"""Verified answers kept for reuse (issue 31): one row per prompt key.

A question whose prompt — system prompt and its version, the context blocks with their content,
the question as the model sees it, the chat model, the checking code — hashes to a stored key
gets the stored verdict at once, without a model call (the engine's answer/reuse.py builds the
key and decides what may be stored: answered, answered after a correction, and the refusals of a
model's reply). The key holds everything the verdict depends on, so an edited entry or a context
built from other entries gives another key by itself: nothing here ever needs invalidating.

Bounded: at most ``pv_agent.answer_cache_size`` rows (Settings, default 2000; 0 turns reuse
off), the least recently used dropped by the answering job after it stored one. Only PV-Agent
managers read it — a stored answer carries another clerk's question — and nobody writes it but
the answering job, with sudo(), after ``pv_agent.message._answer`` checked the asker.
"""
from __future__ import annotations

import json
import logging

import psycopg2

from odoo import SUPERUSER_ID, api, fields, models

from ..services.engine_calls import reusable_answer
from .pv_agent_conversation import ANSWER_STATES

_logger = logging.getLogger(__name__)

PARAM_SIZE = "pv_agent.answer_cache_size"
DEFAULT_SIZE = 2000


def cache_size(env) -> int:
    """How many verified answers the store keeps (0: no reuse)."""
    raw = env["ir.config_parameter"].sudo().get_param(PARAM_SIZE)
    try:
        return max(0, int(raw)) if raw not in (None, False, "") else DEFAULT_SIZE
    except ValueError:
        return DEFAULT_SIZE


class _EngineStore:
    """The store as the engine asks it (``lookup(key)``, answer/reuse.py). It reads in a cursor
    of its own: the answering job holds no transaction open while the model writes."""

    def __init__(self, registry):
        self.registry = registry

    def lookup(self, key: str):
        with self.registry.cursor() as cr:
            return _stored(api.Environment(cr, SUPERUSER_ID, {}), key)


class _RequestStore:
    """The store as the asking request reads it: in the request's own transaction, which is
    open anyway (no model call follows there)."""

    def __init__(self, env):
        self.env = env

    def lookup(self, key: str):
        return _stored(self.env(su=True), key)


def _stored(env, key: str):
    entry = env["pv_agent.answer.cache"].search([("key", "=", key)], limit=1)
    if not entry:
        return None
    return {"answer": json.loads(entry.answer_json or "{}"), "from": {
        "cache_id": entry.id, "answer_id": entry.answer_id.id or False,
        "date": fields.Datetime.to_string(entry.answered_at or entry.create_date)}}


class PvAgentAnswerCache(models.Model):
    _name = "pv_agent.answer.cache"
    _description = "PV-Agent: verified answer kept for reuse"
    _order = "last_used desc, id desc"
    _rec_name = "question"

    key = fields.Char("Prompt key", required=True, readonly=True,
                      help="sha256 of the exact prompt of the first model call, the model and the checking code")
    question = fields.Text("Question", readonly=True)
    state = fields.Selection(ANSWER_STATES, "Status", readonly=True)
    answer_json = fields.Text("Answer object", readonly=True)
    answer_id = fields.Many2one("pv_agent.message", "Original answer", readonly=True, index=True, ondelete="cascade",
                                help="The answer this verdict was computed for. Deleted with it (a clerk deleting "
                                     "their history takes their stored answers along).")
    answered_at = fields.Datetime("Answered on", readonly=True)
    chat_model = fields.Char("Language model", readonly=True)
    last_used = fields.Datetime("Last used", readonly=True, index=True)
    use_count = fields.Integer("Times reused", readonly=True, default=0)

    _key_unique = models.Constraint("UNIQUE(key)", "A prompt key is stored once.")

    @api.model
    def _engine_store(self):
        """What ``ask(reuse=…)`` looks answers up in; None when reuse is off (size 0)."""
        return _EngineStore(self.env.registry) if cache_size(self.env) else None

    @api.model
    def _request_store(self):
        """The same for the asking request (pv_agent.message._answer_from_store)."""
        return _RequestStore(self.env) if cache_size(self.env) else None

    @api.model
    def _remember(self, question, answer, data: dict):
        """After the answering job stored ``answer`` for ``question``: keep its verdict for reuse,
        count a reuse, or — the question asked fresh ("Neu beantworten") — let the fresh result
        replace the stored entry (a fresh result that is no checked verdict removes it). Best
        effort: a store that cannot be written now (another worker stored the same key) never
        costs the clerk the answer."""
        limit = cache_size(self.env)
        key = data.get("prompt_key")
        if not key or not limit:
            return
        Cache = self.sudo()
        now = fields.Datetime.now()
        try:
            with self.env.cr.savepoint():
                entry = Cache.search([("key", "=", key)], limit=1)
                if data.get("reused"):
                    if entry:
                        entry.write({"last_used": now, "use_count": entry.use_count + 1})
                elif reusable_answer(data):
                    values = {"key": key, "question": data.get("question") or question.body, "state": data["state"],
                              "answer_json": answer.answer_json, "answer_id": answer.id, "answered_at": now,
                              "chat_model": answer.chat_model, "last_used": now}
                    if not entry:
                        Cache.create(values)
                    elif question.answer_fresh:
                        entry.write({**values, "use_count": 0})
                    # else another worker stored this key meanwhile: the first verdict stays
                elif question.answer_fresh and entry:
                    entry.unlink()
        except (psycopg2.errors.UniqueViolation, psycopg2.errors.SerializationFailure,
                psycopg2.errors.ForeignKeyViolation) as exc:
            _logger.info("pv_agent: answer %s not kept for reuse (%s)", answer.id, type(exc).__name__)
            return
        self._trim(limit)

    @api.model
    def _trim(self, limit: int):
        """Drop the least recently used entries beyond ``limit``."""
        Cache = self.sudo()
        over = Cache.search_count([]) - limit
        if over <= 0:
            return
        try:
            with self.env.cr.savepoint():
                Cache.search([], order="last_used asc, id asc", limit=over).unlink()
        except psycopg2.errors.SerializationFailure:
            pass  # another worker trimmed at the same time; the next answer trims again
