"""Clerks rate answers (thumbs up/down) and suggest corrections to entries; managers review
thumbs-down answers and suggestions side by side with the answer and the cited entries,
accept (and edit the entry) or reject, and the clerk hears back from PV-Agent in Discuss.
The clerk's side (``action_vote``, ``action_suggest_correction``) is on pv_agent.message."""
from __future__ import annotations

from markupsafe import Markup

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError

from ..services import answer_html
from .pv_agent_bot import entry_url
from .pv_agent_conversation import int_param, serialize_user_requests

REVIEWER_FIELDS = {"review_note"}
PARAM_MAX_OPEN_SUGGESTIONS = "pv_agent.max_open_suggestions_per_user"
DEFAULT_MAX_OPEN_SUGGESTIONS = 10


def check_suggestion_room(env, user):
    """Like questions, a clerk's correction suggestions waiting for review are capped: nobody
    buries the managers' review list."""
    serialize_user_requests(env, user)
    waiting = env["pv_agent.feedback"].sudo().search_count([
        ("user_id", "=", user.id), ("kind", "=", "correction"), ("state", "=", "new")])
    if waiting >= int_param(env, PARAM_MAX_OPEN_SUGGESTIONS, DEFAULT_MAX_OPEN_SUGGESTIONS):
        raise UserError(env._("You already have %s correction suggestions waiting for review; please wait "
                              "until a manager has reviewed them.", waiting))


class PvAgentFeedback(models.Model):
    _name = "pv_agent.feedback"
    _description = "PV-Agent: feedback on an answer"
    _order = "id desc"
    _rec_name = "question"

    message_id = fields.Many2one("pv_agent.message", "Answer", required=True, index=True, ondelete="cascade",
                                 readonly=True, domain=[("role", "=", "answer")])
    # Related fields read as the caller (compute_sudo=False): as superuser (Odoo's default for
    # related fields) any method that reads them — e.g. Enterprise's gantt helpers — hands the
    # question and the answer to users the record rules keep out.
    question = fields.Text("Question", related="message_id.question_id.body", compute_sudo=False)
    answer_state = fields.Selection(related="message_id.state", string="State of the answer", compute_sudo=False)
    answer_json = fields.Text(related="message_id.answer_json", string="Answer object", compute_sudo=False)
    answer_html = fields.Html("Answer as shown", compute="_compute_answer_html", sanitize=False, compute_sudo=False)
    citation_entry_ids = fields.Many2many(related="message_id.citation_entry_ids", string="Cited entries",
                                          compute_sudo=False)
    cited_html = fields.Html("Cited entries as they are now", compute="_compute_answer_html", sanitize=False,
                             compute_sudo=False)
    user_id = fields.Many2one("res.users", "From", required=True, readonly=True, index=True,
                              default=lambda self: self.env.user)
    kind = fields.Selection([("up", "Helpful"), ("down", "Not helpful"), ("correction", "Correction suggested")],
                            "Kind", required=True, readonly=True)
    entry_id = fields.Many2one("pv_agent.entry", "Entry to correct", readonly=True, ondelete="set null",
                               context={"active_test": False})
    text = fields.Text("Suggestion", readonly=True)
    state = fields.Selection([("new", "To review"), ("accepted", "Accepted"), ("rejected", "Rejected"),
                              ("noted", "Noted")], "Status", default="new", required=True, readonly=True, index=True)
    reviewer_id = fields.Many2one("res.users", "Reviewed by", readonly=True)
    review_date = fields.Datetime("Reviewed on", readonly=True)
    review_note = fields.Text("Note to the clerk")

    @api.depends("message_id.body", "message_id.citation_entry_ids.body")
    def _compute_answer_html(self):
        for rec in self:
            entries = rec.message_id.citation_entry_ids
            by_id = {e.entry_id: e for e in entries}
            rec.answer_html = answer_html.render(rec.message_id.body or "",
                                                 lambda i: entry_url(by_id[i].id) if i in by_id else None)
            rec.cited_html = Markup("").join(
                Markup('<h4><a href="%s">[%s]</a> %s <small class="text-muted">Stand %s</small></h4>%s')
                % (entry_url(e.id), e.entry_id, e.name, e.stand, answer_html.render(e.body or ""))
                for e in entries)

    # -- the audit trail: what the clerk said stays as they said it ------------------------
    def write(self, vals):
        """Managers write only their note to the clerk; the review itself goes through
        ``action_accept``/``action_reject`` (as superuser, after their check)."""
        if not (self.env.su or self.env.user.has_group("base.group_system")) and set(vals) - REVIEWER_FIELDS:
            raise AccessError(self.env._("Feedback is part of the audit trail: only the note to the clerk can be "
                                         "changed."))
        return super().write(vals)

    # -- review (managers) -------------------------------------------------------------
    def _check_reviewable(self):
        self.env["pv_agent.entry"]._check_manager()
        for rec in self:
            if rec.kind == "up" or rec.state != "new":
                raise UserError(self.env._("Only open feedback can be accepted or rejected."))

    def action_accept(self):
        """Accept: the clerk is told, and the entry opens for editing."""
        self._check_reviewable()
        self._review("accepted")
        entry = self[:1].entry_id or self[:1].message_id.citation_entry_ids[:1]
        if not entry:
            return True
        return {
            "type": "ir.actions.act_window",
            "res_model": "pv_agent.entry",
            "res_id": entry.id,
            "views": [[False, "form"]],
            "target": "current",
            "context": {"form_view_initial_mode": "edit"},
        }

    def action_reject(self):
        self._check_reviewable()
        self._review("rejected")
        return True

    def _review(self, state):
        self.sudo().write({"state": state, "reviewer_id": self.env.uid, "review_date": fields.Datetime.now()})
        Bot = self.env["pv_agent.bot"]
        for rec in self.sudo():
            lang_rec = rec.with_context(lang=rec.user_id.lang or self.env.lang)
            Bot._notify_user(rec.user_id, lang_rec._review_message())

    def _review_message(self) -> Markup:
        _ = self.env._
        question = (self.question or "")[:120]
        what = (_("Your correction suggestion for %s", f"[{self.entry_id.entry_id}]") if self.kind == "correction"
                and self.entry_id else _("Your feedback on the answer to “%s”", question))
        verdict = (_("%(what)s was accepted by %(manager)s; the entry is being revised.", what=what,
                     manager=self.reviewer_id.name) if self.state == "accepted"
                   else _("%(what)s was rejected by %(manager)s.", what=what, manager=self.reviewer_id.name))
        body = Markup("<p>%s</p>") % verdict
        if self.review_note:
            body += Markup("<p>%s</p>") % _("Note: %s", self.review_note)
        return body
