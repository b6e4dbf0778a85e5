"""The mapping of ``<kb>/parameters.yaml`` as records: which knowledge-base figure each rule
parameter code must hold. Managers edit it here; it goes back to the folder as the same file
(``pv-agent validate`` checks it there), as edited entries do."""
from __future__ import annotations

import os
from pathlib import Path

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError

from .. import services

PARAM_EXPORT_TO_FOLDER = "pv_agent.export_to_folder"  # pv_agent's setting for entries, shared
UNIT_SELECTION = [("EUR", "€"), ("%", "%"), ("g/km", "g/km"), ("Anzahl", "Count")]


class PvAgentParameterMapping(models.Model):
    _name = "pv_agent.parameter.mapping"
    _description = "PV-Agent: rule parameter → knowledge-base figure"
    _order = "sequence, id"

    sequence = fields.Integer(default=10)
    code = fields.Char(required=True, index=True, help="Code of the rule parameter (hr.rule.parameter)")
    name = fields.Char("Description")
    entry_ref = fields.Char("Entry id", required=True, help="Id of the knowledge-base entry, e.g. pv-bg-02")
    entry_id = fields.Many2one("pv_agent.entry", "Entry", compute="_compute_entry")
    fact = fields.Char("Fact label", required=True,
                       help="The label the entry gives the figure: a table row, a table column over year rows, "
                            "or the 'Label:' of a list item")
    column = fields.Char(help="The column, when the row has several values (e.g. DN / DG)")
    unit = fields.Selection(UNIT_SELECTION, required=True, default="EUR",
                            help="€, % (percent points), g/km or a count")
    problem = fields.Char(compute="_compute_problem", help="Why the mapping names no single figure")
    active = fields.Boolean(default=True)

    _unique_code = models.Constraint("unique (code)", "A rule parameter code is mapped once.")

    @api.depends("entry_ref")
    def _compute_entry(self):
        entries = self.env["pv_agent.entry"].search([("entry_id", "in", self.mapped("entry_ref"))])
        by_id = {e.entry_id: e for e in entries}
        for rec in self:
            rec.entry_id = by_id.get(rec.entry_ref)

    @api.depends("entry_ref", "fact", "column", "unit")
    def _compute_problem(self):
        by_id = {e.entry_id: e._to_engine_entry(with_hash=False) for e in self.mapped("entry_id")}
        for rec in self:
            _, lookup = services.resolve(rec._to_engine(), by_id)
            rec.problem = lookup.problem or False

    def _to_engine(self) -> services.ParameterMapping:
        self.ensure_one()
        return services.ParameterMapping(code=self.code, entry=self.entry_ref or "", fact=self.fact or "",
                                         unit=self.unit or "EUR", name=self.name or "", column=self.column or "")

    # -- the file ------------------------------------------------------------------------------
    @api.model
    def _check_manager(self):
        if not self.env.user.has_group("pv_agent.group_manager"):
            raise AccessError(self.env._("Only PV-Agent managers may manage the parameter mapping."))

    @api.model
    def _file(self) -> Path:
        return Path(services.kb_path(self.env)) / services.MAPPING_FILE

    @api.model
    def action_import_file(self):
        self._check_manager()
        count = self._import_file()
        return self._notification(self.env._("Parameter mapping imported"),
                                  self.env._("%(count)s codes from %(path)s.", count=count, path=str(self._file())))

    @api.model
    def _import_file(self, raise_missing=True) -> int:
        """Create or update a record per code of the file; codes no longer in it are archived."""
        path = self._file()
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            if raise_missing:
                raise UserError(self.env._("Cannot read %(path)s: %(reason)s", path=str(path),
                                           reason=getattr(exc, "strerror", None) or str(exc))) from None
            return 0
        items, issues = services.parse_mapping(text)
        if issues:
            raise UserError("\n".join(f"{path}:{i.line}: {i.message}" for i in issues))
        existing = {r.code: r for r in self.with_context(active_test=False).search([])}
        for sequence, item in enumerate(items, start=1):
            vals = {"sequence": sequence, "code": item.code, "name": item.name, "entry_ref": item.entry,
                    "fact": item.fact, "column": item.column, "unit": item.unit, "active": True}
            if item.code in existing:
                existing.pop(item.code).write(vals)
            else:
                self.create(vals)
        for rec in existing.values():
            rec.active = False
        return len(items)

    def _text(self) -> str:
        records = self.search([])
        return services.dump_mapping([r._to_engine() for r in records])

    @api.model
    def action_export_file(self):
        """parameters.yaml as a download (the records, in their order)."""
        self._check_manager()
        data = self._text().encode("utf-8")
        attachment = self.env["ir.attachment"].create({
            "name": services.MAPPING_FILE, "raw": data, "mimetype": "application/yaml",
            "res_model": self._name, "res_id": 0})
        return {"type": "ir.actions.act_url", "url": f"/web/content/{attachment.id}?download=true", "target": "self"}

    @api.model
    def action_write_file(self):
        """Write parameters.yaml into the knowledge-base folder, when the administrator allowed
        writing there (Settings → PV-Agent, as for entries)."""
        self._check_manager()
        if not self.env["ir.config_parameter"].sudo().get_param(PARAM_EXPORT_TO_FOLDER):
            raise UserError(self.env._("Writing into the knowledge-base folder is switched off (Settings → PV-Agent)."))
        path = self._file()
        if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
            raise UserError(self.env._("The knowledge-base folder %(path)s is not writable.", path=str(path.parent)))
        try:
            path.write_text(self._text(), encoding="utf-8")
        except OSError as exc:
            raise UserError(self.env._("Could not write %(path)s: %(reason)s", path=str(path),
                                       reason=exc.strerror or str(exc))) from None
        return self._notification(self.env._("Written into the knowledge-base folder"), str(path))

    @api.model
    def _notification(self, title, message):
        return {"type": "ir.actions.client", "tag": "display_notification",
                "params": {"title": title, "message": message, "type": "success", "sticky": False}}
