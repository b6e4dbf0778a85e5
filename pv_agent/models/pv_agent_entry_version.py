"""Versions of an entry: one snapshot of the whole file text per change of its content, so
that an answer's audit trail can point at the version of the entry it cited. An entry whose
versions an answer cited cannot be deleted (archive it; see pv_agent.entry): the versions would
go with it."""
from __future__ import annotations

from odoo import api, fields, models

VERSION_ORIGINS = [("created", "Created"), ("odoo", "Edited in Odoo"), ("import", "Imported from the file"),
                   ("take_file", "Conflict: file version taken"), ("merged", "Conflict: merged version")]


class PvAgentEntryVersion(models.Model):
    _name = "pv_agent.entry.version"
    _description = "PV-Agent: version of a knowledge-base entry"
    _order = "entry_id, number desc"
    _rec_name = "number"

    entry_id = fields.Many2one("pv_agent.entry", "Entry", required=True, index=True, readonly=True,
                               ondelete="cascade", context={"active_test": False})
    number = fields.Integer("Version", required=True, readonly=True)
    content_hash = fields.Char("Content hash", index=True, readonly=True)
    markdown = fields.Text("Content of this version", readonly=True)
    origin = fields.Selection(VERSION_ORIGINS, "Origin", readonly=True)
    user_id = fields.Many2one("res.users", "Changed by", readonly=True)

    @api.depends("entry_id", "number")
    def _compute_display_name(self):
        for version in self:
            version.display_name = self.env._("%(entry)s, version %(number)s", entry=version.entry_id.entry_id or "",
                                              number=version.number)

