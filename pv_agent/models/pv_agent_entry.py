"""Knowledge-base entries as records: import from the folder, edit in a form, feed the index."""
from __future__ import annotations

import hashlib
import json
import logging
import time

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError, ValidationError

from ..engine.loader import ID_PATTERN, STAND_PATTERN, load_knowledge_base
from ..engine.types import SOURCE_FAMILIES, Entry
from . import engine_bridge

_logger = logging.getLogger(__name__)

SOURCE_LABELS = {
    "briefing": "Briefing (summary)",
    "gesetz": "Statute",
    "kv": "Collective agreement",
    "rechtsprechung": "Case law",
    "wiku": "Wiki",
}
# Fields whose change makes the sidecar out of date.
INDEXED_FIELDS = {
    "entry_id", "name", "stand", "topic", "source", "official", "tags", "legal_bases",
    "cross_ref_ids", "source_ref", "body", "active",
}


def fingerprint(entry: Entry) -> str:
    """Hash of what an entry says (metadata + body), independent of file formatting."""
    meta = entry.metadata()
    meta["cross_refs"] = sorted(meta["cross_refs"])
    raw = json.dumps({"meta": meta, "body": entry.body.strip()}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _lines(values) -> str:
    return "\n".join(values)


def _split(text: str | bool) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").split("\n") if s.strip())


class PvAgentEntry(models.Model):
    _name = "pv_agent.entry"
    _description = "Knowledge-base entry"
    _order = "topic, entry_id"
    _rec_names_search = ["entry_id", "name"]

    entry_id = fields.Char("Id", required=True, index=True, help="Stable id, cited as [id]")
    name = fields.Char("Title", required=True)
    stand = fields.Char("Stand", required=True, help="Legal state the entry describes (YYYY-MM)")
    topic = fields.Char("Cluster", required=True, index=True)
    source = fields.Selection([(s, SOURCE_LABELS.get(s, s)) for s in SOURCE_FAMILIES], "Source family", required=True, default="briefing")
    official = fields.Boolean("Official source", default=True,
                              help="Off: unofficial rendering – answers must say so")
    tags = fields.Text("Keywords", help="One keyword per line")
    legal_bases = fields.Text("Legal bases", help="One legal basis per line, e.g. § 67 Abs 1 EStG")
    cross_ref_ids = fields.Many2many(
        "pv_agent.entry", "pv_agent_entry_cross_ref_rel", "entry_id", "ref_id", string="Cross-references")
    source_ref = fields.Char("Source reference")
    body = fields.Text("Content (Markdown)", required=True)
    path = fields.Char("File", readonly=True, help="File in the knowledge base it was imported from")
    content_hash = fields.Char("Content hash", compute="_compute_content_hash", store=True)
    import_hash = fields.Char("Hash at import", readonly=True, copy=False)
    active = fields.Boolean(default=True)
    stale = fields.Boolean("Not in the index", default=True, copy=False, readonly=True,
                           help="Changed since the last indexing")

    _entry_id_uniq = models.Constraint("UNIQUE (entry_id)", "The id must be unique.")

    @api.depends("entry_id", "name", "stand", "topic", "source", "official", "tags", "legal_bases",
                 "cross_ref_ids.entry_id", "cross_ref_ids.active", "source_ref", "body")
    def _compute_content_hash(self):
        for rec in self:
            rec.content_hash = fingerprint(rec._to_engine_entry(with_hash=False)) if rec.entry_id else False

    @api.constrains("entry_id", "stand", "topic")
    def _check_formats(self):
        for rec in self:
            if not ID_PATTERN.match(rec.entry_id or ""):
                raise ValidationError(self.env._("Invalid id '%s' (allowed: a-z, 0-9, hyphens).", rec.entry_id))
            m = STAND_PATTERN.match(rec.stand or "")
            if not m or not 1 <= int(m.group(2)) <= 12:
                raise ValidationError(self.env._("Invalid Stand '%s' (expected YYYY-MM).", rec.stand))
            if not ID_PATTERN.match(rec.topic or ""):
                raise ValidationError(self.env._("Invalid cluster '%s' (lower-case letters and hyphens).", rec.topic))

    @api.depends("entry_id", "name")
    def _compute_display_name(self):
        for rec in self:
            rec.display_name = f"[{rec.entry_id}] {rec.name}" if rec.entry_id else (rec.name or "")

    # -- the index goes stale when content changes ----------------------------------------
    @api.model_create_multi
    def create(self, vals_list):
        for vals in vals_list:
            vals.setdefault("stale", True)
        return super().create(vals_list)

    def write(self, vals):
        if INDEXED_FIELDS.intersection(vals) and "stale" not in vals:
            vals = dict(vals, stale=True)
        return super().write(vals)

    def unlink(self):
        if self:
            self.env["ir.config_parameter"].sudo().set_param(engine_bridge.PARAM_INDEX_DIRTY, "1")
        return super().unlink()

    # -- records → engine ------------------------------------------------------------------
    def _to_engine_entry(self, with_hash=True) -> Entry:
        self.ensure_one()
        return Entry(
            id=self.entry_id,
            title=self.name or "",
            stand=self.stand or "",
            topic=self.topic or "",
            source=self.source or "briefing",
            body=(self.body or "").strip("\n"),
            official=self.official,
            tags=_split(self.tags),
            legal_bases=_split(self.legal_bases),
            cross_refs=tuple(sorted(self.cross_ref_ids.filtered("active").mapped("entry_id"))),
            source_ref=self.source_ref or "",
            path=self.path or f"dokumente/{self.entry_id}.md",
            content_hash=(self.content_hash or "") if with_hash else "",
        )

    def _engine_entries(self) -> list[Entry]:
        return [rec._to_engine_entry() for rec in self]

    # -- import from the knowledge-base folder ----------------------------------------------
    @api.model
    def _check_manager(self):
        if not self.env.user.has_group("pv_agent.group_manager"):
            raise AccessError(self.env._("Only PV-Agent managers may manage the knowledge base."))

    @api.model
    def action_import_knowledge_base(self):
        """Import the folder saved in Settings (or the bundled sample); returns the import job.

        Takes no path: which server folder is read (and which entries are archived for missing
        from it) is the administrators' setting, not a caller's argument.
        """
        self._check_manager()
        return self._import_knowledge_base(engine_bridge.kb_path(self.env))

    @api.model
    def _import_knowledge_base(self, path: str):
        job = self.env["pv_agent.index.job"].sudo().create({"kind": "import", "state": "running",
                                                            "kb_path": path})
        started = time.monotonic()
        report = self.sudo()._import_folder(path)
        job.write({
            "state": "failed" if report["fatal"] else "done",
            "date_end": fields.Datetime.now(),
            "seconds": round(time.monotonic() - started, 2),
            "message": self._import_summary(report),
            "report_json": json.dumps(report, ensure_ascii=False, indent=1),
        })
        return job

    @api.model
    def _import_folder(self, path: str) -> dict:
        result = load_knowledge_base(path)
        report = {"path": path, "created": [], "updated": [], "unchanged": [], "archived": [],
                  "failed": [], "warnings": [], "fatal": ""}
        loaded_files = {e.path for e in result.entries}
        for issue in result.errors:
            bucket = "warnings" if issue.file in loaded_files else "failed"
            report[bucket].append({"file": issue.file, "line": issue.line, "reason": issue.message})
        if not result.entries:
            report["fatal"] = (report["failed"][0]["reason"] if report["failed"] and not
                               report["failed"][0]["file"].endswith(".md")
                               else self.env._("no valid entries found"))
            return report  # never archive everything because a folder is missing or empty

        Entry_ = self.with_context(active_test=False)
        existing = {rec.entry_id: rec for rec in Entry_.search([])}
        touched = {}
        for entry in result.entries:
            fp = fingerprint(entry)
            rec = existing.get(entry.id)
            vals = {
                "entry_id": entry.id, "name": entry.title, "stand": entry.stand, "topic": entry.topic,
                "source": entry.source, "official": entry.official, "tags": _lines(entry.tags),
                "legal_bases": _lines(entry.legal_bases), "source_ref": entry.source_ref,
                "body": entry.body, "path": entry.path, "import_hash": fp, "active": True,
            }
            if rec is None:
                rec = Entry_.create(vals)
                report["created"].append(entry.id)
            elif rec.import_hash != fp or not rec.active:
                # A changed file wins over edits made in Odoo; an unchanged file keeps them.
                rec.write(vals)
                report["updated"].append(entry.id)
            else:
                report["unchanged"].append(entry.id)
                continue
            touched[entry.id] = (rec, entry.cross_refs)
        by_id = {rec.entry_id: rec for rec in Entry_.search([])}
        for rec, refs in touched.values():
            rec.cross_ref_ids = [fields.Command.set([by_id[r].id for r in refs if r in by_id])]

        # Archive what left the folder — but not an entry whose file is only broken right now.
        keep = {e.id for e in result.entries}
        keep |= {f["file"].rsplit("/", 1)[-1].removesuffix(".md") for f in report["failed"]}
        gone = self.search([("entry_id", "not in", list(keep))])
        gone.write({"active": False})
        report["archived"] = gone.mapped("entry_id")
        return report

    @api.model
    def _import_summary(self, report: dict) -> str:
        if report["fatal"]:
            return self.env._("Import stopped: %(reason)s (%(path)s)", reason=report["fatal"], path=report["path"])
        lines = [self.env._(
            "%(created)s new, %(updated)s updated, %(unchanged)s unchanged, %(archived)s archived, "
            "%(failed)s broken.",
            created=len(report["created"]), updated=len(report["updated"]),
            unchanged=len(report["unchanged"]), archived=len(report["archived"]),
            failed=len(report["failed"]))]
        for item in report["failed"]:
            lines.append(self.env._("Error: %(file)s:%(line)s: %(reason)s", **item))
        for item in report["warnings"]:
            lines.append(self.env._("Note: %(file)s:%(line)s: %(reason)s", **item))
        return "\n".join(lines)

    # -- UI helpers -------------------------------------------------------------------------
    def action_reindex(self):
        return self.env["pv_agent.index.job"].action_queue_reindex()
