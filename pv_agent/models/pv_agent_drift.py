"""Knowledge freshness: every answer keeps the fingerprints of the chunks it cited; after every
reindex a queued drift check compares them with the new index (the engine's
``check_fingerprints``), flags answers whose sources changed or disappeared, keeps the diff,
and tells each asker in Discuss which of their answers are affected. "Neu beantworten" asks
the same question again; the old answer stays beside the new one."""
from __future__ import annotations

import logging
import time
from collections import defaultdict

from markupsafe import Markup

from odoo import api, fields, models
from odoo.exceptions import UserError

from ..engine.drift import CHANGED, REMOVED, UNCHANGED, Fingerprint, check_fingerprints
from . import engine_bridge
from .pv_agent_bot import entry_url
from .pv_agent_conversation import BUS_TYPE

_logger = logging.getLogger(__name__)

DRIFT_STATES = [(UNCHANGED, "Current"), (CHANGED, "Source changed"), (REMOVED, "Source removed")]
SEVERITY = {UNCHANGED: 0, CHANGED: 1, REMOVED: 2}


class PvAgentAnswerSource(models.Model):
    """One cited chunk of one answer, as it was when answered: the drift check's input."""

    _name = "pv_agent.answer.source"
    _description = "PV-Agent: source of an answer"
    _order = "message_id desc, id"
    _rec_name = "entry_ref"

    message_id = fields.Many2one("pv_agent.message", "Answer", required=True, index=True, ondelete="cascade",
                                 readonly=True)
    user_id = fields.Many2one(related="message_id.user_id", store=True, string="Asked by", index=True)
    # read as the caller, not as superuser (see pv_agent.feedback.question)
    question = fields.Text(related="message_id.question_id.body", string="Question", compute_sudo=False)
    answered_on = fields.Datetime(related="message_id.create_date", string="Answered on", compute_sudo=False)
    entry_ref = fields.Char("Entry id", required=True, index=True, readonly=True)
    entry_id = fields.Many2one("pv_agent.entry", "Entry", index=True, readonly=True, ondelete="set null",
                               context={"active_test": False})
    section = fields.Char("Section", readonly=True)
    chunk_hash = fields.Char("Chunk hash", required=True, index=True, readonly=True)
    text = fields.Text("Cited text as answered", readonly=True)
    status = fields.Selection(DRIFT_STATES, "Source", default=UNCHANGED, required=True, index=True, readonly=True)
    diff = fields.Text("Change (before → now)", readonly=True)
    checked_at = fields.Datetime("Checked on", readonly=True)

    def _fingerprint(self) -> Fingerprint:
        return Fingerprint(self.entry_ref, self.section or "", self.chunk_hash, self.text or "")

    def _panel_dict(self):
        labels = dict(self._fields["status"]._description_selection(self.env))
        return {"id": self.entry_ref, "section": self.section or "", "status": self.status,
                "label": labels[self.status], "diff": self.diff or "", "record_id": self.entry_id.id}


class PvAgentMessage(models.Model):
    _inherit = "pv_agent.message"

    source_ids = fields.One2many("pv_agent.answer.source", "message_id", "Sources (fingerprints)", readonly=True)
    drift_state = fields.Selection(DRIFT_STATES, "Sources since answered", default=UNCHANGED, required=True,
                                   index=True, readonly=True)
    drift_date = fields.Datetime("Source change noticed on", readonly=True)
    reask_of_id = fields.Many2one("pv_agent.message", "Asked again for", readonly=True, index="btree_not_null",
                                  ondelete="set null", help="The earlier answer whose sources changed")

    def _store_answer(self, data: dict, duration_ms: int):
        answer = super()._store_answer(data, duration_ms)
        fingerprints = data.get("fingerprints") or []
        if fingerprints:
            Entry = self.env["pv_agent.entry"].with_context(active_test=False)
            by_id = {e.entry_id: e.id for e in Entry.search([("entry_id", "in", [f["id"] for f in fingerprints])])}
            self.env["pv_agent.answer.source"].sudo().create([{
                "message_id": answer.id, "entry_ref": f["id"], "entry_id": by_id.get(f["id"], False),
                "section": f.get("section") or "", "chunk_hash": f["chunk_hash"], "text": f.get("text") or "",
            } for f in fingerprints])
        return answer

    def _panel_dict(self):
        out = super()._panel_dict()
        if self.role == "answer":
            labels = dict(self._fields["drift_state"]._description_selection(self.env))
            drifted = self.source_ids.filtered(lambda s: s.status != UNCHANGED)
            out["drift"] = {
                "state": self.drift_state,
                "label": labels[self.drift_state],
                "sources": [s._panel_dict() for s in drifted],
            } if self.drift_state != UNCHANGED else False
            out["reasked"] = bool(self.search_count([("reask_of_id", "=", self.id)], limit=1))
        return out

    def action_reanswer(self):
        """Ask the question of this answer again against the current knowledge base."""
        self._check_own_answer()
        if self.conversation_id.user_id != self.env.user:
            raise UserError(self.env._("Only the clerk who asked can ask again."))
        question = self.env["pv_agent.conversation"]._queue_question(
            self.question_id.body, self.env.user, conversation=self.conversation_id)
        question.reask_of_id = self
        return {"conversation_id": question.conversation_id.id, "message_id": question.id, "state": question.state}

    def action_reanswer_from_form(self):
        self.action_reanswer()
        return {"type": "ir.actions.client", "tag": "display_notification", "params": {
            "title": self.env._("Asked again"), "type": "info",
            "message": self.env._("The new answer appears in the PV-Agent panel, beside the old one."),
            "next": {"type": "ir.actions.client", "tag": "soft_reload"}}}


class PvAgentEntry(models.Model):
    _inherit = "pv_agent.entry"

    cited_count = fields.Integer("Cited in answers", compute="_compute_cited_count")
    drifted_count = fields.Integer("Answers with a changed source", compute="_compute_cited_count")

    def _compute_cited_count(self):
        Source = self.env["pv_agent.answer.source"].sudo()
        groups = Source._read_group([("entry_id", "in", self.ids)], ["entry_id", "status"], ["message_id:count_distinct"])
        cited, drifted = defaultdict(int), defaultdict(int)
        for entry, status, count in groups:
            cited[entry.id] += count
            if status != UNCHANGED:
                drifted[entry.id] += count
        for rec in self:
            rec.cited_count = cited[rec.id]
            rec.drifted_count = drifted[rec.id]

    def action_open_citing_answers(self):
        """Managers: the stored answers citing this entry, grouped by drift status."""
        self._check_manager()
        self.ensure_one()
        action = self.env["ir.actions.act_window"]._for_xml_id("pv_agent.action_pv_agent_answer_source")
        action["domain"] = [("entry_id", "=", self.id)]
        action["context"] = {"search_default_group_status": 1}
        return action


class PvAgentIndexJob(models.Model):
    _inherit = "pv_agent.index.job"

    kind = fields.Selection(selection_add=[("drift", "Source check of stored answers")],
                            ondelete={"drift": "cascade"})
    answers_checked = fields.Integer("Answers checked", readonly=True)
    answers_flagged = fields.Integer("Answers newly flagged", readonly=True)

    def _run_reindex(self):
        super()._run_reindex()
        if self.state == "done":
            # queued like the reindex; the running cron picks it up next
            self.create({"kind": "drift", "state": "queued", "requested_by": self.requested_by.id})

    def _run_job(self):
        if self.kind == "drift":
            return self._run_drift()
        return super()._run_job()

    def _run_drift(self):
        """Check every stored answer's sources against the current index; flag and notify."""
        self.ensure_one()
        self = self.with_context(lang=self.requested_by.lang or self.env.lang)
        self.write({"state": "running", "date_start": fields.Datetime.now(), "message": False})
        self.env["ir.cron"]._commit_progress(0)
        started = time.monotonic()
        with engine_bridge.using_index(self.env.cr.dbname, self.env) as index:
            if index is None:
                self.write({"state": "failed", "date_end": fields.Datetime.now(),
                            "message": self.env._("There is no index to check against.")})
                return
            result = self.env["pv_agent.message"].sudo()._check_drift(index)
        seconds = time.monotonic() - started
        self.write({
            "state": "done", "date_end": fields.Datetime.now(), "seconds": round(seconds, 3),
            "answers_checked": result["answers"], "answers_flagged": len(result["newly_flagged"]),
            "message": self.env._(
                "%(answers)s answers checked in %(seconds)s s: %(changed)s with a changed source, %(removed)s with a "
                "removed source, %(new)s newly flagged.", answers=result["answers"], seconds=f"{seconds:.3f}",
                changed=result["changed"], removed=result["removed"], new=len(result["newly_flagged"])),
        })
        _logger.info("pv_agent: drift check of %s answers took %.3f s", result["answers"], seconds)


class PvAgentMessageDrift(models.Model):
    """The check itself and the notification (kept apart from the fields above for reading)."""

    _inherit = "pv_agent.message"

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
