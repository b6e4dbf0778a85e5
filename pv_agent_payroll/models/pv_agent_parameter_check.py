"""„Lohnparameter prüfen“: the rule parameters' values (read through the ORM, with the user's
rights) against the mapped knowledge-base figures, one line per code and date with the entry
it cites. A line whose parameter lacks this year's version offers „Neue Version anlegen“; the
scheduled run in December and January tells the PV-Agent managers in Discuss."""
from __future__ import annotations

import datetime as dt
import hashlib

from markupsafe import Markup, escape

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError

from .. import services

PARAM_LAST_NOTICE = "pv_agent_payroll.last_notice"
CHECK_MONTHS = (12, 1)
STATUS_SELECTION = [
    (services.MATCH, "Matches"), (services.DIFFERS, "Differs"), (services.MISSING, "Version missing"),
    (services.KB_MISSING, "No figure in the knowledge base"), (services.NO_FACT, "Mapping names no figure"),
    (services.ABSENT, "Parameter missing"), (services.UNMAPPED, "Not mapped"), ("created", "Version created"),
]

STATUS_ORDER = (services.DIFFERS, services.MISSING, services.NO_FACT, "created", services.KB_MISSING,
                services.UNMAPPED, services.ABSENT, services.MATCH)


class PvAgentParameterCheck(models.TransientModel):
    _name = "pv_agent.parameter.check"
    _description = "PV-Agent: check payroll rule parameters"

    date = fields.Date(required=True, default=fields.Date.context_today)
    next_year = fields.Boolean("Also 1 January next year", default=True,
                               help="For the codes whose figure for next year the knowledge base already has")
    line_ids = fields.One2many("pv_agent.parameter.check.line", "check_id", readonly=True)
    problem_count = fields.Integer(compute="_compute_counts")
    summary = fields.Char(compute="_compute_counts")

    @api.depends("line_ids.status")
    def _compute_counts(self):
        labels = dict(STATUS_SELECTION)
        for rec in self:
            counts: dict[str, int] = {}
            for line in rec.line_ids:
                counts[line.status] = counts.get(line.status, 0) + 1
            rec.problem_count = sum(n for s, n in counts.items() if s in services.PROBLEMS)
            rec.summary = ", ".join(f"{n} × {self.env._(labels[s])}" for s, n in counts.items()) or False

    @api.model
    def action_open(self):
        """The menu's entry point: a fresh check for today, already run."""
        check = self.create({})
        check.action_run()
        return check._action()

    def _action(self):
        return {"type": "ir.actions.act_window", "res_model": self._name, "res_id": self.id,
                "view_mode": "form", "target": "current", "name": self.env._("Check payroll parameters")}

    def action_run(self):
        self.ensure_one()
        self.env["pv_agent.parameter.mapping"]._check_manager()
        results = self._results(self.date, self.next_year)
        self.line_ids.unlink()
        self.env["pv_agent.parameter.check.line"].create([self._line_vals(r) for r in results])
        return self._action()

    # -- the check, on the current user's rights ------------------------------------------------
    @api.model
    def _results(self, date, next_year: bool):
        mappings = [m._to_engine() for m in self.env["pv_agent.parameter.mapping"].search([])]
        entries = self.env["pv_agent.entry"].search([])._engine_entries()
        params = self._parameter_list()
        today = date or fields.Date.context_today(self)
        plan = services.check_dates(mappings, entries, today, None if next_year else today)
        return services.check_parameters(params, mappings, entries, plan)

    @api.model
    def _parameter_list(self) -> services.ParameterList:
        """Every version of every rule parameter this user may read (the payroll's access rights
        and record rules decide; a user without them gets one clear message)."""
        Value = self.env["hr.rule.parameter.value"]
        if not Value.has_access("read"):
            raise UserError(self.env._("You may not read the payroll's rule parameters "
                                       "(Payroll → Configuration → Rule Parameters); ask an administrator."))
        out = services.ParameterList()
        for value in Value.search([]):
            out.versions.setdefault(value.code, []).append(services.ParameterVersion(
                value.code, value.parameter_value or "", value.date_from))
        return out

    @api.model
    def _line_vals(self, r) -> dict:
        entry = self.env["pv_agent.entry"].search([("entry_id", "=", r.entry.id)], limit=1) if r.entry else False
        parameter = self.env["hr.rule.parameter"].search([("code", "=", r.code)], limit=1)
        unit = r.mapping.unit if r.mapping else ""
        return {
            "check_id": self.id if self else False,
            "code": r.code, "name": r.mapping.name if r.mapping else False, "status": r.status,
            "date": r.date, "parameter_id": parameter.id or False,
            "parameter_value": r.version.value if r.version else False,
            "parameter_valid_from": r.version.valid_from if r.version else False,
            "kb_value": r.fact.number if r.fact and r.fact.number is not None else 0.0,
            "kb_text": services.format_figure(r.fact.number, unit) if r.fact and r.fact.number is not None else (r.fact.text if r.fact else False),
            "entry_id": entry.id if entry else False,
            "entry_stand": r.entry.stand if r.entry else False,
            "where": r.fact.where if r.fact else False,
            "message": r.message or False,
        }

    # -- December and January: tell the managers ------------------------------------------------
    @api.model
    def _cron_check_parameters(self, today=None):
        today = today or fields.Date.context_today(self)
        if today.month not in CHECK_MONTHS:
            return False
        # A system job: the cron's user reads every parameter; each manager is told only if
        # they may read the rule parameters themselves.
        results = self.sudo()._results(today, True)
        problems = [r for r in results if r.status in services.PROBLEMS]
        fingerprint = hashlib.sha256("\n".join(
            f"{r.code}|{r.status}|{r.date.year if r.date else ''}|{r.version.value if r.version else ''}|{r.fact.number if r.fact else ''}"
            for r in problems).encode()).hexdigest()
        icp = self.env["ir.config_parameter"].sudo()
        if not problems or icp.get_param(PARAM_LAST_NOTICE) == fingerprint:
            return False
        managers = self.env.ref("pv_agent.group_manager").sudo().all_user_ids.filtered(
            lambda u: u.active and not u.share and self.env["hr.rule.parameter.value"].with_user(u).has_access("read"))
        Bot = self.env["pv_agent.bot"]
        for user in managers:
            Bot._notify_user(user, self.with_context(lang=user.lang)._notice(problems))
        icp.set_param(PARAM_LAST_NOTICE, fingerprint)
        return True

    @api.model
    def _notice(self, problems) -> Markup:
        labels = dict(STATUS_SELECTION)
        items = Markup("").join(
            Markup("<li>%s – %s %s: %s</li>") % (
                r.code, self.env._(labels[r.status]), r.date.year if r.date else "",
                (f"{r.version.value if r.version else '–'} ≠ {services.format_figure(r.fact.number, r.mapping.unit)} "
                 f"[{r.entry.id} · {r.entry.stand}]") if r.fact and r.entry and r.fact.number is not None else r.message)
            for r in problems[:30])
        more = len(problems) - 30
        tail = Markup("<p>%s</p>") % self.env._("… and %(count)s more.", count=more) if more > 0 else Markup("")
        return (Markup("<p><b>%s</b></p><ul>%s</ul>%s<p>%s</p>") % (
            self.env._("Payroll parameters: %(count)s to check against the knowledge base", count=len(problems)),
            items, tail, self.env._("PV-Agent → Check payroll parameters shows each with its source.")))


class PvAgentParameterCheckLine(models.TransientModel):
    _name = "pv_agent.parameter.check.line"
    _description = "PV-Agent: one rule parameter checked"
    _order = "date, status_order, code"

    check_id = fields.Many2one("pv_agent.parameter.check", required=True, ondelete="cascade")
    code = fields.Char(required=True)
    name = fields.Char("Description")
    status = fields.Selection(STATUS_SELECTION, required=True)
    status_order = fields.Integer(compute="_compute_status_order", store=True)
    date = fields.Date("Checked for")
    parameter_id = fields.Many2one("hr.rule.parameter", "Rule parameter")
    parameter_value = fields.Char("Parameter value")
    parameter_valid_from = fields.Date("Valid from")
    kb_value = fields.Float("Knowledge-base figure", digits=(16, 4))
    kb_text = fields.Char("Knowledge base")
    entry_id = fields.Many2one("pv_agent.entry", "Source")
    entry_stand = fields.Char("Stand")
    where = fields.Char("Where in the entry")
    message = fields.Char()
    can_create = fields.Boolean(compute="_compute_can_create")

    @api.depends("status")
    def _compute_status_order(self):
        for line in self:  # what to fix first, what matches last
            line.status_order = STATUS_ORDER.index(line.status) if line.status in STATUS_ORDER else len(STATUS_ORDER)

    @api.depends("status", "parameter_id", "entry_id")
    def _compute_can_create(self):
        for line in self:
            line.can_create = bool(line.status == services.MISSING and line.parameter_id and line.entry_id and line.date)

    def action_create_version(self):
        """The missing dated value: 1 January of the year checked, the knowledge base's figure,
        created with the user's own rights and posted in the parameter's chatter with its source.
        The view asks for confirmation first."""
        self.ensure_one()
        self.env["pv_agent.parameter.mapping"]._check_manager()
        if not self.can_create:
            raise UserError(self.env._("Only a missing version can be created from the check."))
        date_from = dt.date(self.date.year, 1, 1)
        Value = self.env["hr.rule.parameter.value"]
        if Value.search_count([("rule_parameter_id", "=", self.parameter_id.id), ("date_from", "=", date_from)]):
            raise UserError(self.env._("%(code)s already has a version from %(date)s.", code=self.code, date=date_from))
        text = _literal(self.kb_value, self.parameter_value)
        try:
            Value.create({"rule_parameter_id": self.parameter_id.id, "date_from": date_from, "parameter_value": text})
        except AccessError:
            raise UserError(self.env._("You may not create rule parameter versions (Payroll → Administrator).")) from None
        entry = self.entry_id
        self.parameter_id.message_post(body=Markup("<p>%s</p><p>%s</p>") % (
            self.env._("New version from %(date)s: %(value)s (created from the PV-Agent check).",
                       date=fields.Date.to_string(date_from), value=text),
            Markup("%s <a href='/odoo/pv_agent.entry/%s'>[%s]</a> %s, Stand %s – %s%s") % (
                self.env._("Source:"), entry.id, entry.entry_id, entry.name, entry.stand, self.where or "",
                Markup(" (%s)") % entry.source_ref if entry.source_ref else "")),
            message_type="comment", subtype_xmlid="mail.mt_note")
        self.status = "created"
        self.message = self.env._("Version from %(date)s created", date=fields.Date.to_string(date_from))
        return True

    def action_open_entry(self):
        self.ensure_one()
        return {"type": "ir.actions.act_window", "res_model": "pv_agent.entry", "res_id": self.entry_id.id,
                "view_mode": "form", "target": "current"}


def _literal(number: float, previous: str | None) -> str:
    """The figure as the parameter's Python literal, in the style of its previous version
    (``6930`` after ``6450``, ``6930.0`` after ``6450.0``)."""
    if float(number).is_integer() and previous and "." not in previous:
        return str(int(number))
    return repr(float(number))

