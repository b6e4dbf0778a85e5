"""Knowledge freshness: every answer keeps the fingerprints of the chunks it cited (one record
each, with the entry version that held the text); after every reindex a queued drift check
(pv_agent.index.job, kind ``drift``) compares them with the new index (the engine's
``check_fingerprints``, in pv_agent.message ``_check_drift``), flags answers whose sources
changed or disappeared, keeps the diff, and tells each asker in Discuss which of their answers
are affected. "Neu beantworten" asks the same question again; the old answer stays beside the
new one."""
from __future__ import annotations

from odoo import api, fields, models

from ..services.engine_calls import CHANGED, REMOVED, UNCHANGED, Fingerprint

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

    entry_version_id = fields.Many2one("pv_agent.entry.version", "Entry version cited", readonly=True,
                                       index="btree_not_null", ondelete="set null",
                                       help="The version of the entry that held the cited text when answered")

    @api.model_create_multi
    def create(self, vals_list):
        self.check_access("create")  # before the version lookup below, which reads as superuser
        Entry = self.env["pv_agent.entry"].sudo().with_context(active_test=False)
        for vals in vals_list:
            if vals.get("entry_id") and not vals.get("entry_version_id"):
                vals["entry_version_id"] = Entry.browse(vals["entry_id"])._version_citing(vals.get("text")).id
        return super().create(vals_list)

    def _fingerprint(self) -> Fingerprint:
        return Fingerprint(self.entry_ref, self.section or "", self.chunk_hash, self.text or "")

    def _panel_dict(self):
        labels = dict(self._fields["status"]._description_selection(self.env))
        return {"id": self.entry_ref, "section": self.section or "", "status": self.status,
                "label": labels[self.status], "diff": self.diff or "", "record_id": self.entry_id.id}
