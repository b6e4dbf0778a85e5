"""Knowledge-base entries as records: import from the folder, edit in a form, feed the index.

The folder of markdown files and the records are two places one entry can change. Each record
keeps the fingerprint of the file version it last took over (``import_hash``); a record whose
content differs from it was edited in Odoo. An import never overwrites such an edit: when the
file changed too, the entry is flagged *Konflikt mit Datei*, the file version is kept beside
it, and a manager decides. Edited entries go back to the folder as markdown files. Every change
of an entry's content is kept as a version (pv_agent.entry.version) for the answers' audit trail.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import os
import time
import zipfile
from collections import defaultdict
from pathlib import Path

from markupsafe import Markup

from odoo import api, fields, models
from odoo.exceptions import AccessError, UserError, ValidationError

from ..services import odoo_settings
from ..services.engine_calls import (
    ID_PATTERN, INDEX_FILE, REGISTRY_FILE, SOURCE_FAMILIES, STAND_PATTERN, UNCHANGED, Entry, UnsafePath,
    changed_sections, check_kb_writable, entry_file_path, entry_to_markdown, load_knowledge_base, parse_entry_text,
    read_kb_text, write_kb_text, write_registry,
)

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


PARAM_EXPORT_TO_FOLDER = "pv_agent.export_to_folder"
# The fingerprint of a file that is gone: an entry's conflict with the deletion of its file, and
# (as import_hash) a deletion a manager has set aside by keeping the Odoo version.
FILE_DELETED = "deleted"
EXPORT_MARK = "pv_agent markdown export"  # description of the download attachments
# Where a change of content came from (context key ``pv_agent_origin``), for the history.
ORIGINS = ("odoo", "import", "take_file", "merged")
# fields about the files and the answers, for the managers only: clerks read entries, not the sync state
MANAGERS = "pv_agent.group_manager"


def _lines(values) -> str:
    return "\n".join(values)


def _split(text: str | bool) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").split("\n") if s.strip())


class PvAgentEntry(models.Model):
    _name = "pv_agent.entry"
    _inherit = ["mail.thread"]
    _description = "Knowledge-base entry"
    _order = "topic, entry_id"
    _rec_names_search = ["entry_id", "name"]

    entry_id = fields.Char("Id", required=True, index=True, help="Stable id, cited as [id]")
    name = fields.Char("Title", required=True, tracking=True)
    stand = fields.Char("Stand", required=True, tracking=True, help="Legal state the entry describes (YYYY-MM)")
    topic = fields.Char("Cluster", required=True, index=True)
    source = fields.Selection([(s, SOURCE_LABELS.get(s, s)) for s in SOURCE_FAMILIES], "Source family", required=True, default="briefing",
                              tracking=True)
    official = fields.Boolean("Official source", default=True, tracking=True,
                              help="Off: unofficial rendering – answers must say so")
    tags = fields.Text("Keywords", help="One keyword per line")
    legal_bases = fields.Text("Legal bases", tracking=True, help="One legal basis per line, e.g. § 67 Abs 1 EStG")
    cross_ref_ids = fields.Many2many(
        "pv_agent.entry", "pv_agent_entry_cross_ref_rel", "entry_id", "ref_id", string="Cross-references")
    source_ref = fields.Char("Source reference", tracking=True)
    body = fields.Text("Content (Markdown)", required=True)
    path = fields.Char("File", readonly=True, groups=MANAGERS, help="File in the knowledge base it was imported from")
    content_hash = fields.Char("Content hash", compute="_compute_content_hash", store=True)
    import_hash = fields.Char("Hash at import", readonly=True, copy=False, groups=MANAGERS,
                              help="Fingerprint of the file version this entry last took over")
    edited_in_odoo = fields.Boolean("Edited in Odoo", compute="_compute_edited_in_odoo", store=True,
                                    help="The content differs from the file version last imported: "
                                         "export it to bring the folder up to date")
    file_conflict = fields.Boolean("Conflict with file", readonly=True, copy=False, index=True,
                                   help="The file changed while the entry was edited in Odoo. The Odoo "
                                        "version stays in use until a manager resolves the conflict.")
    conflict_file_text = fields.Text("File version", readonly=True, copy=False, groups=MANAGERS,
                                     help="The file as it was read by the import that found the conflict")
    conflict_file_hash = fields.Char("Fingerprint of the file version", readonly=True, copy=False,
                                     groups=MANAGERS)
    active = fields.Boolean(default=True)
    stale = fields.Boolean("Not in the index", default=True, copy=False, readonly=True,
                           help="Changed since the last indexing")
    version_ids = fields.One2many("pv_agent.entry.version", "entry_id", "Versions", readonly=True)
    cited_count = fields.Integer("Cited in answers", compute="_compute_cited_count", groups=MANAGERS)
    drifted_count = fields.Integer("Answers with a changed source", compute="_compute_cited_count",
                                   groups=MANAGERS)

    _entry_id_uniq = models.Constraint("UNIQUE (entry_id)", "The id must be unique.")

    @api.depends("entry_id", "name", "stand", "topic", "source", "official", "tags", "legal_bases",
                 "cross_ref_ids.entry_id", "cross_ref_ids.active", "source_ref", "body")
    def _compute_content_hash(self):
        for rec in self:
            rec.content_hash = fingerprint(rec._to_engine_entry(with_hash=False)) if rec.entry_id else False

    @api.depends("content_hash", "import_hash")
    def _compute_edited_in_odoo(self):
        for rec in self:
            rec.edited_in_odoo = rec.content_hash != rec.import_hash

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

    # -- the index goes stale when content changes; each change of content is a version -----
    @api.model_create_multi
    def create(self, vals_list):
        for vals in vals_list:
            vals.setdefault("stale", True)
        records = super().create(vals_list)
        if not self.env.context.get("pv_agent_no_version"):
            records._snapshot_versions("created")
        return records

    def write(self, vals):
        versioned = not self.env.context.get("pv_agent_no_version")
        before = {rec.id: rec.content_hash for rec in self} if versioned else {}
        if INDEXED_FIELDS.intersection(vals) and "stale" not in vals:
            vals = dict(vals, stale=True)
        bodies = {rec.id: rec.body or "" for rec in self} if "body" in vals else {}
        result = super().write(vals)
        if bodies:
            for rec in self:
                rec._log_body_change(bodies[rec.id], rec.body or "")
        if versioned:
            changed = self.filtered(lambda r: r.content_hash != before.get(r.id))
            changed._snapshot_versions(self.env.context.get("pv_agent_origin") or "odoo")
        return result

    # -- history: every change of the text in the chatter, with the changed sections ------
    def _origin_label(self, origin: str) -> str:
        return {
            "odoo": self.env._("Edited in Odoo"),
            "import": self.env._("Imported from the file %(path)s", path=self.path or ""),
            "take_file": self.env._("Conflict resolved: the file version was taken"),
            "merged": self.env._("Conflict resolved: a merged version was saved"),
        }.get(origin, origin)

    def _log_body_change(self, old: str, new: str, title: str | None = None, always=False, other: Entry | None = None):
        """A chatter note naming the origin of the change and the diff of each changed section
        (with ``other``, also the frontmatter fields in which ``other`` differs from the record)."""
        self.ensure_one()
        changes = changed_sections(old, new)
        fields_html = _frontmatter_html(self.env, self._to_engine_entry(with_hash=False), other) if other else ""
        if not changes and not always:
            return
        title = title or self._origin_label(self.env.context.get("pv_agent_origin") or "odoo")
        self._message_log(body=Markup("<p><b>%s</b></p>") % title + fields_html + _sections_html(self.env, changes))

    # -- source tracking: edited in Odoo vs. changed in the file --------------------------
    @api.model
    def _vals_from_file_entry(self, entry: Entry) -> dict:
        return {
            "entry_id": entry.id, "name": entry.title, "stand": entry.stand, "topic": entry.topic,
            "source": entry.source, "official": entry.official, "tags": _lines(entry.tags),
            "legal_bases": _lines(entry.legal_bases), "source_ref": entry.source_ref,
            "body": entry.body, "path": entry.path,
        }

    def _set_cross_refs(self, refs, by_id=None):
        if by_id is None:
            by_id = {rec.entry_id: rec.id for rec in self.with_context(active_test=False).search(
                [("entry_id", "in", list(refs))])}
        self.cross_ref_ids = [fields.Command.set([by_id[r] for r in refs if r in by_id])]

    def _take_file_version(self, entry: Entry, fp: str, origin: str):
        """The record becomes the file version (and is no longer edited in Odoo)."""
        rec = self.with_context(pv_agent_origin=origin, pv_agent_no_version=True)
        rec.write(dict(self._vals_from_file_entry(entry), import_hash=fp, active=True, file_conflict=False,
                       conflict_file_text=False, conflict_file_hash=False))
        rec._set_cross_refs(entry.cross_refs)
        if not self.env.context.get("pv_agent_no_version"):
            self._snapshot_versions(origin)

    def _import_one(self, entry: Entry, fp: str, file_text: str) -> str:
        """Bring one existing record and its file version together; returns the report bucket.

        - file says what the record says (e.g. exported and imported back) → in sync;
        - file unchanged since the last import → the record (edited or not) stays;
        - file changed, record not edited in Odoo → the file wins;
        - file changed and record edited → conflict: the record stays live, the file
          version is stored beside it for a manager to decide.
        """
        self.ensure_one()
        if fp == self.content_hash:
            if (self.import_hash, self.active, self.file_conflict) == (fp, True, False):
                return "unchanged"
            synced = self.import_hash != fp
            self.write({"import_hash": fp, "active": True, "path": entry.path, "file_conflict": False,
                        "conflict_file_text": False, "conflict_file_hash": False})
            return "synced" if synced else "updated"  # "updated": restored from the archive
        if fp == self.import_hash:
            if self.file_conflict:  # the file went back to the version the Odoo edit started from
                self.write({"file_conflict": False, "conflict_file_text": False, "conflict_file_hash": False})
            if not self.active:
                self.write({"active": True})
                return "updated"
            return "unchanged"
        if not self.edited_in_odoo:
            self._take_file_version(entry, fp, "import")
            return "updated"
        self._flag_conflict(entry, fp, file_text)
        return "conflicts"

    def _flag_conflict(self, entry: Entry, fp: str, file_text: str):
        """The file changed while the record was edited in Odoo: keep the file version beside it."""
        self.ensure_one()
        if self.file_conflict and fp == self.conflict_file_hash:
            return  # the same conflict as found before
        self.write({"file_conflict": True, "conflict_file_text": file_text, "conflict_file_hash": fp,
                    "active": True})
        self._log_body_change(self.body or "", entry.body, always=True, other=entry, title=self.env._(
            "Conflict with file %(path)s: the file changed while the entry was edited in Odoo. The Odoo "
            "version stays in use; the differences of the file version:", path=entry.path))

    def _file_deleted(self) -> str:
        """The record's file left the folder; returns the report bucket. An entry never edited in
        Odoo is archived; one created or edited there stays in use (archiving it would take it
        out of the answers and out of both exports), and the deletion of an edited entry's file
        is a conflict a manager decides like a changed file."""
        self.ensure_one()
        if not self.import_hash or self.import_hash == FILE_DELETED:
            return "odoo_only"  # made in Odoo, or the deletion was set aside: export it
        if not self.edited_in_odoo:
            self.write({"active": False})
            return "archived"
        if not (self.file_conflict and self.conflict_file_hash == FILE_DELETED):
            self.write({"file_conflict": True, "conflict_file_text": False, "conflict_file_hash": FILE_DELETED})
            self._message_log(body=Markup("<p><b>%s</b></p>") % self.env._(
                "Conflict with file %(path)s: the file was deleted while the entry was edited in Odoo. The Odoo "
                "version stays in use until a manager decides.", path=self.path or ""))
        return "conflicts"

    @api.ondelete(at_uninstall=False)
    def _unlink_except_cited_versions(self):
        """The versions go with the entry (ondelete cascade); those an answer cited must stay."""
        cited = self.env["pv_agent.answer.source"].sudo().search(
            [("entry_version_id.entry_id", "in", self.ids)], limit=1)
        if cited:
            raise UserError(self.env._(
                "Answers cite versions of the entry %s: archive it instead. Deleting it would remove the "
                "versions their audit trail points at.", cited.entry_version_id.entry_id.entry_id))

    def unlink(self):
        if self:
            self.env["ir.config_parameter"].sudo().set_param(odoo_settings.PARAM_INDEX_DIRTY, "1")
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
        return self._import_knowledge_base(odoo_settings.kb_path(self.env))

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
        report = {"path": path, "created": [], "updated": [], "unchanged": [], "synced": [], "conflicts": [],
                  "archived": [], "odoo_only": [], "failed": [], "warnings": [], "fatal": ""}
        loaded_files = {e.path for e in result.entries}
        for issue in result.errors:
            bucket = "warnings" if issue.file in loaded_files else "failed"
            report[bucket].append({"file": issue.file, "line": issue.line, "reason": issue.message})
        if not result.entries:
            report["fatal"] = (report["failed"][0]["reason"] if report["failed"] and not
                               report["failed"][0]["file"].endswith(".md")
                               else self.env._("no valid entries found"))
            return report  # never archive everything because a folder is missing or empty

        # versions are taken once at the end, when the links between new entries are set too
        Entry_ = self.with_context(active_test=False, pv_agent_no_version=True)
        existing = {rec.entry_id: rec for rec in Entry_.search([])}
        new_refs, new_entries = {}, []
        for entry in result.entries:
            fp = fingerprint(entry)
            rec = existing.get(entry.id)
            if rec is None:
                new_entries.append((entry, fp))
                continue
            file_text = _read_text(path, entry.path) or entry_to_markdown(entry)
            bucket = rec.with_context(pv_agent_origin="import")._import_one(entry, fp, file_text)
            report[bucket].append(entry.id)
            if bucket == "updated":
                new_refs[rec] = entry.cross_refs
        created = Entry_.with_context(mail_create_nolog=True, mail_create_nosubscribe=True, tracking_disable=True,
                                      pv_agent_origin="import").create(
            [dict(self._vals_from_file_entry(entry), import_hash=fp, active=True) for entry, fp in new_entries])
        for rec, (entry, _fp) in zip(created, new_entries):
            new_refs[rec] = entry.cross_refs
            report["created"].append(entry.id)
        by_id = {rec.entry_id: rec.id for rec in Entry_.search([])}
        for rec, refs in new_refs.items():  # once all exist: links to entries created in this run
            rec._set_cross_refs(refs, by_id)
        self.browse([rec.id for rec in new_refs]).with_context(active_test=False)._snapshot_versions("import")

        # What left the folder — but not an entry whose file is only broken right now.
        keep = {e.id for e in result.entries}
        keep |= {f["file"].rsplit("/", 1)[-1].removesuffix(".md") for f in report["failed"]}
        for rec in self.search([("entry_id", "not in", list(keep))]):
            report[rec.with_context(pv_agent_origin="import")._file_deleted()].append(rec.entry_id)
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
        if report.get("odoo_only"):
            lines.append(self.env._("Only in Odoo, kept (export them into the folder): %(ids)s",
                                    ids=", ".join(report["odoo_only"])))
        if report.get("synced"):
            lines.append(self.env._("In line with the file again (exported from Odoo): %(ids)s",
                                    ids=", ".join(report["synced"])))
        for entry_id in report.get("conflicts", []):
            lines.append(self.env._("Conflict with file: %(id)s – the file changed while the entry was edited "
                                    "in Odoo; the Odoo version stays in use until a manager resolves it.",
                                    id=entry_id))
        for item in report["failed"]:
            lines.append(self.env._("Error: %(file)s:%(line)s: %(reason)s", **item))
        for item in report["warnings"]:
            lines.append(self.env._("Note: %(file)s:%(line)s: %(reason)s", **item))
        return "\n".join(lines)

    # -- resolving a conflict with the file ----------------------------------------------------
    def _check_conflict(self, content_hash, file_hash):
        """A decision is taken on the two versions the manager saw: ``content_hash`` (the Odoo
        version) and ``file_hash`` (the file version) as shown when the view opened. Either
        changed since (a colleague's edit, a newer import) → refused, so that nobody sets aside
        or overwrites a version they never saw. Odoo retries a request that met a concurrent
        write of the entry, and the retry sees the new fingerprints."""
        self._check_manager()
        self.ensure_one()
        if not self.file_conflict and not (content_hash or file_hash):
            raise UserError(self.env._("This entry has no conflict with its file."))
        if not self.file_conflict or (content_hash, file_hash) != (self.content_hash, self.conflict_file_hash):
            raise UserError(self.env._("This view is outdated: the entry or its file changed since it was opened. "
                                       "Please open it again."))

    def _conflict_fingerprints(self) -> dict:
        """What a conflict view shows, to be handed back with the decision."""
        self.ensure_one()
        return {"content_hash": self.content_hash, "file_hash": self.conflict_file_hash}

    def _parse_markdown(self, text: str) -> Entry:
        """A file text for this entry → engine entry; one clear line per problem."""
        entry, issues = parse_entry_text((text or "").replace("\r\n", "\n"), self.path or "",
                                         expected_id=self.entry_id)
        if entry is None:
            raise UserError("\n".join(self.env._("Line %(line)s: %(reason)s", line=i.line, reason=i.message)
                                      for i in issues))
        return entry

    def action_conflict_take_file(self, content_hash=None, file_hash=None):
        """Take the stored file version; the Odoo edits are replaced (they stay in the chatter).
        The file was deleted: the deletion is taken over, the entry archived."""
        self._check_conflict(content_hash, file_hash)
        if self.conflict_file_hash == FILE_DELETED:
            self.write({"active": False, "file_conflict": False, "conflict_file_text": False,
                        "conflict_file_hash": False, "import_hash": self.content_hash})
            self._message_log(body=Markup("<p><b>%s</b></p>") % self.env._(
                "Conflict resolved: the deletion of the file was taken over, the entry is archived."))
            return True
        entry = self._parse_markdown(self.conflict_file_text)
        self._take_file_version(entry, self.conflict_file_hash, "take_file")
        return True

    def action_conflict_keep_odoo(self, content_hash=None, file_hash=None):
        """Keep the Odoo version: the file version counts as seen; the entry stays to be exported."""
        self._check_conflict(content_hash, file_hash)
        file_hash = self.conflict_file_hash
        self.write({"import_hash": file_hash, "file_conflict": False, "conflict_file_text": False,
                           "conflict_file_hash": False})
        self._message_log(body=Markup("<p><b>%s</b></p>") % self.env._(
            "Conflict resolved: the Odoo version was kept; the file version was set aside. Export the entry "
            "to bring the file up to date."))
        return True

    def action_conflict_save_merged(self, markdown, content_hash=None, file_hash=None):
        """Save a version merged by hand (a complete file text in the repository format)."""
        self._check_conflict(content_hash, file_hash)
        entry = self._parse_markdown(markdown)
        file_hash = self.conflict_file_hash
        self._take_file_version(entry, file_hash, "merged")
        return True

    def action_open_conflict(self):
        """The side-by-side view of the Odoo version and the file version."""
        self._check_manager()
        self.ensure_one()
        if not self.file_conflict:
            raise UserError(self.env._("This entry has no conflict with its file."))
        wizard = self.env["pv_agent.entry.conflict"].create({"entry_id": self.id})
        return {"type": "ir.actions.act_window", "res_model": "pv_agent.entry.conflict", "res_id": wizard.id,
                "view_mode": "form", "target": "new", "name": self.env._("Conflict with file")}

    # -- the way back: entries as markdown files ---------------------------------------------
    def _markdown(self) -> str:
        self.ensure_one()
        return entry_to_markdown(self._to_engine_entry(with_hash=False))

    def _file_path(self) -> str:
        return entry_file_path(self._to_engine_entry(with_hash=False))

    def _download(self, name: str, data: bytes, mimetype: str):
        """A download of ``data``: an attachment linked to no record, so only its creator (and
        the administrators) can read it; the caller's previous exports are removed."""
        Attachment = self.env["ir.attachment"]
        Attachment.search([("res_model", "=", self._name), ("res_id", "=", 0), ("create_uid", "=", self.env.uid),
                           ("description", "=", EXPORT_MARK)]).unlink()
        attachment = Attachment.create({"name": name, "raw": data, "mimetype": mimetype, "res_model": self._name,
                                        "res_id": False, "description": EXPORT_MARK})
        return {"type": "ir.actions.act_url", "target": "download",
                "url": f"/web/content/{attachment.id}?download=true"}

    def _zip(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for rec in self:
                archive.writestr(rec._file_path(), rec._markdown())
        return buffer.getvalue()

    def action_export_markdown(self):
        """Download the selected entries as markdown: one file, or a zip of several."""
        self._check_manager()
        if not self:
            raise UserError(self.env._("Select the entries to export."))
        if len(self) == 1:
            return self._download(os.path.basename(self._file_path()), self._markdown().encode("utf-8"),
                                  "text/markdown")
        return self._download("wissensbasis-export.zip", self._zip(), "application/zip")

    @api.model
    def action_export_changed(self):
        """A zip of every entry edited in Odoo since the last import (new entries included)."""
        self._check_manager()
        changed = self.search([("edited_in_odoo", "=", True)])
        if not changed:
            raise UserError(self.env._("No entry was edited in Odoo since the last import."))
        return changed._download("wissensbasis-geaendert.zip", changed._zip(), "application/zip")

    def action_write_to_folder(self):
        """Write the selected entries (none selected: all edited in Odoo) into the knowledge-base
        folder, if the administrator allowed it in Settings and the folder is writable; kb.json
        and INDEX.md are regenerated when the folder has them. The next import then finds the
        files in line with the records and clears *Edited in Odoo*.

        Nothing the folder holds is lost: a file is overwritten only when it still is the version
        last imported (or already says what the record says). An entry in conflict is skipped; a
        file changed since the last import makes an edited entry a conflict; a deleted or
        unreadable file stays as it is. Every write is atomic and stays inside the folder."""
        self._check_manager()
        icp = self.env["ir.config_parameter"].sudo()
        if not icp.get_param(PARAM_EXPORT_TO_FOLDER):
            raise UserError(self.env._("Writing into the knowledge-base folder is switched off "
                                       "(Settings → PV-Agent)."))
        records = self or self.search([("edited_in_odoo", "=", True)])
        if not records:
            raise UserError(self.env._("No entry was edited in Odoo since the last import."))
        folder = Path(odoo_settings.kb_path(self.env))
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise UserError(self.env._("The knowledge-base folder %(path)s is not writable.", path=str(folder)))
        with_registry = os.path.lexists(folder / REGISTRY_FILE)
        for name in (REGISTRY_FILE, INDEX_FILE) if with_registry else ():
            try:
                check_kb_writable(folder, name)
            except UnsafePath as exc:  # before anything is written
                raise UserError(_unsafe_text(self.env, exc)) from None
        on_disk = {e.path: e for e in load_knowledge_base(folder).entries}  # the files as the import reads them
        written, skipped = [], []
        for rec in records:
            rel = rec._file_path()
            reason = rec._export_blocker(folder, rel, on_disk)
            if not reason:
                try:
                    write_kb_text(folder, rel, rec._markdown())
                    written.append(rel)
                    continue
                except UnsafePath as exc:
                    reason = _unsafe_text(self.env, exc)
                except OSError as exc:
                    reason = self.env._("Could not write %(path)s: %(reason)s", path=rel,
                                        reason=exc.strerror or str(exc))
            skipped.append(f"[{rec.entry_id}] {reason}")
        lines = [self.env._("%(count)s file(s): %(files)s. Import the knowledge base to confirm them.",
                            count=len(written), files=", ".join(written) or "–")]
        if written and with_registry:
            try:
                write_registry(folder, load_knowledge_base(folder))
            except OSError as exc:
                lines.append(self.env._("kb.json and INDEX.md not written: %(reason)s",
                                        reason=_unsafe_text(self.env, exc) if isinstance(exc, UnsafePath)
                                        else exc.strerror or str(exc)))
        if skipped:
            lines.append(self.env._("Not written:") + "\n" + "\n".join(skipped))
        return {"type": "ir.actions.client", "tag": "display_notification", "params": {
            "title": self.env._("Written into the knowledge-base folder"), "sticky": True,
            "type": "warning" if skipped or len(lines) > 1 else "success", "message": "\n".join(lines)}}

    def _export_blocker(self, folder: Path, rel: str, on_disk: dict) -> str:
        """Why this record's file may not be overwritten now ('' when it may). A file whose
        fingerprint is neither the one last imported nor the record's own holds a change nobody
        has imported: an edited record becomes a conflict with it, as the import would make it."""
        self.ensure_one()
        env = self.env
        if self.file_conflict:
            return env._("in conflict with its file: resolve the conflict first")
        try:
            target = check_kb_writable(folder, rel)
        except UnsafePath as exc:
            return _unsafe_text(env, exc)
        if not target.exists():
            if self.import_hash and self.import_hash != FILE_DELETED:
                return env._("its file was deleted from the folder since the last import: import the "
                             "knowledge base first")
            return ""
        entry = on_disk.get(rel)
        if entry is None:
            return env._("its file cannot be read as an entry (see the import's errors): not overwritten")
        fp = fingerprint(entry)
        if fp in (self.import_hash, self.content_hash):
            return ""
        if not self.edited_in_odoo:
            return env._("its file changed since the last import: import the knowledge base first")
        self.with_context(pv_agent_origin="import")._flag_conflict(entry, fp, _read_text(folder, rel)
                                                                   or entry_to_markdown(entry))
        return env._("its file changed since the last import while the entry was edited in Odoo: now a "
                     "conflict with the file, resolve it first")

    # -- UI helpers -------------------------------------------------------------------------
    def action_reindex(self):
        return self.env["pv_agent.index.job"].action_queue_reindex()

    # -- versions: a snapshot of the file text per change, for the answers' audit trail --------
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

    # -- answers citing the entry (knowledge freshness, see pv_agent_answer_source.py) ----------
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


def _unsafe_text(env, exc: UnsafePath) -> str:
    """A path refused inside the knowledge-base folder, in the user's language."""
    return {
        "symlink": env._("%(path)s is a symbolic link: neither read nor written", path=exc.rel),
        "outside": env._("%(path)s is outside the knowledge-base folder", path=exc.rel),
    }.get(exc.kind, env._("%(path)s is not a regular file", path=exc.rel))


def _read_text(folder: str, rel: str) -> str:
    """An entry file's text, read only inside the folder (no symlink); '' when it cannot be."""
    try:
        return read_kb_text(folder, rel)
    except (OSError, UnicodeDecodeError):  # UnsafePath is an OSError
        return ""


def _frontmatter_html(env, mine: Entry, other: Entry) -> Markup:
    """The frontmatter fields in which ``other`` differs, as "key: ours → theirs" lines."""
    ours, theirs = mine.metadata(), other.metadata()
    ours["cross_refs"], theirs["cross_refs"] = sorted(ours["cross_refs"]), sorted(theirs["cross_refs"])
    lines = [Markup("<li><code>%s</code>: %s → %s</li>") % (key, _show(ours[key]), _show(theirs[key]))
             for key in ours if ours[key] != theirs[key]]
    return (Markup("<ul>") + Markup("").join(lines) + Markup("</ul>")) if lines else Markup("")


def _show(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _sections_html(env, changes: list[dict]) -> Markup:
    labels = {"changed": env._("changed"), "added": env._("added"), "removed": env._("removed")}
    parts = []
    for change in changes:
        parts.append(Markup("<p>%s <b>%s</b> (%s)</p><pre>%s</pre>") % (
            env._("Section"), change["section"] or "–", labels[change["status"]], change["diff"]))
    return Markup("").join(parts)
