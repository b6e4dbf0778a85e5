"""Versions of an entry: one snapshot of the whole file text per change of its content, so
that an answer's audit trail can point at the version of the entry it cited."""
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


class PvAgentEntry(models.Model):
    _inherit = "pv_agent.entry"

    version_ids = fields.One2many("pv_agent.entry.version", "entry_id", "Versions", readonly=True)

    @api.model_create_multi
    def create(self, vals_list):
        records = super().create(vals_list)
        if not self.env.context.get("pv_agent_no_version"):
            records._snapshot_versions("created")
        return records

    def write(self, vals):
        if self.env.context.get("pv_agent_no_version"):
            return super().write(vals)
        before = {rec.id: rec.content_hash for rec in self}
        result = super().write(vals)
        changed = self.filtered(lambda r: r.content_hash != before.get(r.id))
        changed._snapshot_versions(self.env.context.get("pv_agent_origin") or "odoo")
        return result

    def _snapshot_versions(self, origin: str):
        """A new version for each record whose content differs from its latest version. The
        caller has just created or written the records with its own rights; the snapshot is
        written as superuser because versions are never edited by anybody."""
        if not self:
            return
        Version = self.env["pv_agent.entry.version"].sudo()
        latest = {}
        for version in Version.search([("entry_id", "in", self.ids)]):  # newest first per entry
            latest.setdefault(version.entry_id.id, version)
        Version.create([{
            "entry_id": rec.id, "number": (latest[rec.id].number if rec.id in latest else 0) + 1,
            "content_hash": rec.content_hash, "markdown": rec._markdown(), "origin": origin,
            "user_id": self.env.uid,
        } for rec in self if rec.entry_id and (rec.id not in latest or latest[rec.id].content_hash != rec.content_hash)])

    def _version_citing(self, text: str):
        """The latest version whose text contains the cited chunk (else the latest version)."""
        self.ensure_one()
        versions = self.env["pv_agent.entry.version"].sudo().search([("entry_id", "=", self.id)])
        body = (text or "").split("\n", 1)[-1].strip()  # the chunk without its heading line
        for version in versions:
            if body and body in (version.markdown or ""):
                return version
        return versions[:1]


class PvAgentAnswerSource(models.Model):
    _inherit = "pv_agent.answer.source"

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
