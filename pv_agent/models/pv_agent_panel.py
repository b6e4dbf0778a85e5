"""What the systray panel reads: a conversation with its messages as plain dicts, answers
rendered to safe HTML, and each answer's state explained in one line."""
from __future__ import annotations

import json

from odoo import api, fields, models
from odoo.exceptions import AccessError

from . import answer_html
from .pv_agent_bot import entry_url
from .pv_agent_conversation import _check_user

RECENT_CONVERSATIONS = 30


class PvAgentConversation(models.Model):
    _inherit = "pv_agent.conversation"

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


class PvAgentMessage(models.Model):
    _inherit = "pv_agent.message"

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
        return out

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
