"""Edits in Odoo and changes of the files meet (issue 20): the four import cases, the conflict
and its three resolutions, the way back as markdown files, and the history of every change."""
import base64
import io
import json
import os
import subprocess
import sys
import zipfile

from odoo.exceptions import AccessError, UserError
from odoo.tests import tagged

from .common import PvAgentCase

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."


@tagged("post_install", "-at_install")
class TestEntrySync(PvAgentCase):
    def setUp(self):
        super().setUp()
        self.import_kb()
        self.env.flush_all()
        self.env.cr.precommit.run()  # the import's request ends with a commit: later edits are tracked
        self.sz1 = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        self.path = os.path.join(self.kb_dir, "dokumente", "pv-sz-01.md")
        with open(self.path, encoding="utf-8") as f:
            self.file_text = f.read()

    # -- helpers ---------------------------------------------------------------------------
    def as_manager(self, records):
        # as from the manager's browser: the request's context carries their language
        return records.with_user(self.manager).with_context(lang=self.manager.lang)

    def reimport(self):
        job = self.import_kb()
        return job, json.loads(job.report_json)

    def edit_in_odoo(self, old="| 620 € |", new="| 650 € |"):
        entry = self.as_manager(self.sz1)
        entry.write({"body": entry.body.replace(old, new)})
        return entry

    def change_file(self, old="6 %", new="7 %"):
        self.file_text = self.file_text.replace(old, new)
        self.write_kb_file("pv-sz-01.md", self.file_text)

    def notes(self, entry):
        return entry.message_ids.filtered(lambda m: m.message_type == "notification").sorted("id")

    def download(self, action):
        self.assertEqual(action["type"], "ir.actions.act_url")
        attachment = self.env["ir.attachment"].browse(int(action["url"].split("/")[3].split("?")[0]))
        return attachment.name, base64.b64decode(attachment.datas)

    def cli(self, *args):
        env = dict(os.environ, PYTHONPATH=REPO_ROOT)
        return subprocess.run([sys.executable, "-m", "tools.cli", *args], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    # -- the four import cases -----------------------------------------------------------------
    def test_file_unchanged_entry_unchanged(self):
        self.assertFalse(self.sz1.edited_in_odoo)
        _job, report = self.reimport()
        self.assertIn("pv-sz-01", report["unchanged"])
        self.assertEqual((report["updated"], report["conflicts"]), ([], []))

    def test_file_unchanged_odoo_edited_keeps_odoo_version(self):
        self.edit_in_odoo()
        self.assertTrue(self.sz1.edited_in_odoo)
        _job, report = self.reimport()
        self.assertIn("pv-sz-01", report["unchanged"])
        self.assertIn("650 €", self.sz1.body)
        self.assertTrue(self.sz1.edited_in_odoo)
        self.assertFalse(self.sz1.file_conflict)

    def test_file_changed_not_edited_takes_file(self):
        self.change_file()
        _job, report = self.reimport()
        self.assertEqual(report["updated"], ["pv-sz-01"])
        self.assertIn("7 %", self.sz1.body)
        self.assertFalse(self.sz1.edited_in_odoo)
        self.assertFalse(self.sz1.file_conflict)
        note = self.notes(self.sz1)[-1]
        self.assertIn("pv-sz-01.md", note.body)  # "imported from the file …"
        self.assertIn("Kernwerte &amp; Fristen", note.body)  # the changed section with its diff
        self.assertIn("-| fester Steuersatz bis 25.000 € | 6 % |", note.body)
        self.assertIn("+| fester Steuersatz bis 25.000 € | 7 % |", note.body)
        self.assertEqual(note.author_id, self.manager.partner_id)

    def test_file_changed_and_odoo_edited_is_a_conflict(self):
        entry = self.edit_in_odoo()
        self.change_file()
        job, report = self.reimport()
        self.assertEqual(report["conflicts"], ["pv-sz-01"])
        self.assertEqual(report["updated"], [])
        self.assertIn("Konflikt mit Datei: pv-sz-01", job.message)
        # the Odoo version stays live, the file version is kept beside it
        self.assertIn("650 €", entry.body)
        self.assertIn("6 %", entry.body)
        self.assertTrue(entry.file_conflict)
        self.assertEqual(entry.conflict_file_text, self.file_text)
        self.assertEqual(self.Entry.search([("file_conflict", "=", True)]), entry)
        conflict_notes = self.notes(entry)
        self.assertIn("7 %", conflict_notes[-1].body)
        # the same import again: still the one conflict, no second note
        _job, report = self.reimport()
        self.assertEqual(report["conflicts"], ["pv-sz-01"])
        self.assertEqual(self.notes(entry), conflict_notes)
        self.assertIn("650 €", entry.body)
        # the file is brought in line with Odoo (e.g. the export was committed): conflict gone
        self.write_kb_file("pv-sz-01.md", entry._markdown())
        _job, report = self.reimport()
        self.assertEqual(report["synced"], ["pv-sz-01"])
        self.assertFalse(entry.file_conflict)
        self.assertFalse(entry.edited_in_odoo)

    def test_conflict_on_the_title_alone_is_noted_and_cleared_when_the_file_goes_back(self):
        entry = self.edit_in_odoo()
        original = self.file_text
        self.change_file("title: Sonstige Bezüge", "title: Sonstige Bezüge (neu)")
        _job, report = self.reimport()
        self.assertEqual(report["conflicts"], ["pv-sz-01"])
        note = self.notes(entry)[-1]
        self.assertIn("Konflikt mit Datei", note.body)
        self.assertIn("<code>title</code>", note.body)
        self.assertIn("(neu)", note.body)
        self.assertNotIn("(neu)", entry.name)
        # the colleague reverts the file: the Odoo edit is simply "edited in Odoo" again
        self.write_kb_file("pv-sz-01.md", original)
        _job, report = self.reimport()
        self.assertIn("pv-sz-01", report["unchanged"])
        self.assertFalse(entry.file_conflict or entry.conflict_file_text)
        self.assertTrue(entry.edited_in_odoo)

    # -- resolving the conflict -----------------------------------------------------------------
    def make_conflict(self):
        entry = self.edit_in_odoo()
        self.change_file()
        self.reimport()
        self.assertTrue(entry.file_conflict)
        return entry

    def test_resolve_take_file(self):
        entry = self.make_conflict()
        wizard = self.as_manager(self.env["pv_agent.entry.conflict"]).create({"entry_id": entry.id})
        self.assertIn("650 €", wizard.odoo_text)
        self.assertIn("7 %", wizard.file_text)
        self.assertIn("bg-danger-subtle", wizard.diff_html)
        wizard.action_take_file()
        self.assertIn("7 %", entry.body)
        self.assertIn("| 620 € |", entry.body)
        self.assertFalse(entry.file_conflict or entry.edited_in_odoo)
        self.assertIn("Dateifassung wurde übernommen", self.notes(entry)[-1].body)
        self.assertIn("pv-sz-01", self.reimport()[1]["unchanged"])

    def test_resolve_keep_odoo(self):
        entry = self.make_conflict()
        self.as_manager(entry).action_conflict_keep_odoo(**entry._conflict_fingerprints())
        self.assertIn("650 €", entry.body)
        self.assertFalse(entry.file_conflict)
        self.assertTrue(entry.edited_in_odoo, "still to be exported")
        _job, report = self.reimport()  # the set-aside file version is not a conflict again
        self.assertIn("pv-sz-01", report["unchanged"])
        self.assertFalse(entry.file_conflict)
        self.assertIn("650 €", entry.body)

    def test_resolve_merged(self):
        entry = self.make_conflict()
        wizard = self.as_manager(self.env["pv_agent.entry.conflict"]).create({"entry_id": entry.id})
        merged = wizard.merged_text.replace("6 %", "7 %")
        wizard.merged_text = merged.replace("stand: 2025-01", "stand: 2025-13")
        with self.assertRaisesRegex(UserError, "ungültiger stand"):
            wizard.action_save_merged()
        self.assertTrue(entry.file_conflict)
        wizard.merged_text = merged
        wizard.action_save_merged()
        self.assertIn("650 €", entry.body)
        self.assertIn("7 %", entry.body)
        self.assertFalse(entry.file_conflict)
        self.assertTrue(entry.edited_in_odoo, "the merged version is not in the file yet")
        self.assertEqual(entry.version_ids.sorted("number", reverse=True).mapped("origin"), ["merged", "odoo", "import"])

    def test_resolution_is_for_managers(self):
        entry = self.make_conflict()
        for method in ("action_conflict_take_file", "action_conflict_keep_odoo", "action_open_conflict"):
            with self.assertRaises(AccessError):
                getattr(entry.with_user(self.clerk), method)()
        with self.assertRaises(AccessError):
            entry.with_user(self.clerk).action_conflict_save_merged(entry._markdown())
        self.assertTrue(entry.file_conflict)

    # -- the way back ---------------------------------------------------------------------------
    def test_export_validate_reimport_round_trip(self):
        entry = self.edit_in_odoo()
        entry.write({"legal_bases": entry.legal_bases + "\n§ 67 Abs 8 EStG", "name": 'Titel: mit "Zeichen"'})
        before = (entry.content_hash, entry.body, entry.name, entry.legal_bases, entry.write_date)
        name, data = self.download(entry.action_export_markdown())
        self.assertEqual(name, "pv-sz-01.md")
        # all entries as a zip → a knowledge-base folder that validate accepts
        everything = self.as_manager(self.Entry.search([]))
        zname, zdata = self.download(everything.action_export_markdown())
        self.assertTrue(zname.endswith(".zip"))
        folder = os.path.join(self.tmp, f"export_{self.id().rsplit('.', 1)[-1]}")
        with zipfile.ZipFile(io.BytesIO(zdata)) as archive:
            self.assertIn("dokumente/pv-sz-01.md", archive.namelist())
            self.assertEqual(archive.read("dokumente/pv-sz-01.md"), data)
            archive.extractall(folder)
        self.assertEqual(self.cli("registry", "--kb", folder).returncode, 0)
        run = self.cli("validate", "--kb", folder)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("3 Einträge", run.stdout)
        # back into the knowledge-base folder, import: same content, no longer edited in Odoo
        with open(self.path, "wb") as f:
            f.write(data)
        _job, report = self.reimport()
        self.assertEqual(report["synced"], ["pv-sz-01"])
        self.assertEqual((entry.content_hash, entry.body, entry.name, entry.legal_bases), before[:4])
        self.assertFalse(entry.edited_in_odoo)
        self.assertFalse(entry.file_conflict)
        self.assertIn("pv-sz-01", self.reimport()[1]["unchanged"])

    def test_export_changed_zips_only_edited_entries(self):
        with self.assertRaises(UserError):
            self.as_manager(self.Entry).action_export_changed()
        self.edit_in_odoo()
        new = self.as_manager(self.Entry).create({
            "entry_id": "pv-neu-01", "name": "Neu", "stand": "2026-01", "topic": "sonderzahlungen",
            "body": self.sz1.body})
        self.assertTrue(new.edited_in_odoo, "an entry made in Odoo has no file yet")
        _name, data = self.download(self.as_manager(self.Entry).action_export_changed())
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            self.assertEqual(sorted(archive.namelist()), ["dokumente/pv-neu-01.md", "dokumente/pv-sz-01.md"])
        # the download is the manager's: nobody else reads it, and the next export replaces it
        attachment = self.env["ir.attachment"].search([("name", "=", "wissensbasis-geaendert.zip")])
        self.assertEqual(len(attachment), 1)
        for user in (self.outsider, self.clerk2):
            with self.assertRaises(AccessError):
                attachment.with_user(user).read(["datas"])
        self.as_manager(self.Entry).action_export_changed()
        self.assertFalse(attachment.exists())
        with self.assertRaises(AccessError):
            self.Entry.with_user(self.clerk).action_export_changed()
        with self.assertRaises(AccessError):
            self.sz1.with_user(self.clerk).action_export_markdown()

    def test_write_into_folder_only_when_allowed(self):
        entry = self.edit_in_odoo()
        with self.assertRaisesRegex(UserError, "ausgeschaltet"):
            self.as_manager(self.Entry).browse().action_write_to_folder()
        with open(self.path, encoding="utf-8") as f:
            self.assertNotIn("650 €", f.read())
        settings = self.env["res.config.settings"].with_user(self.admin).create({"pv_agent_export_to_folder": True})
        settings.execute()
        self.as_manager(self.Entry).browse().action_write_to_folder()
        with open(self.path, encoding="utf-8") as f:
            self.assertIn("650 €", f.read())
        self.assertEqual(self.reimport()[1]["synced"], ["pv-sz-01"])
        self.assertFalse(entry.edited_in_odoo)
        with self.assertRaises(AccessError):
            entry.with_user(self.clerk).action_write_to_folder()

    # -- history -----------------------------------------------------------------------------
    def test_odoo_edit_is_in_the_chatter_with_its_diff(self):
        entry = self.edit_in_odoo()
        note = self.notes(entry)[-1]
        self.assertEqual(note.author_id, self.manager.partner_id)
        self.assertIn("In Odoo bearbeitet", note.body)
        self.assertIn("Kernwerte &amp; Fristen", note.body)
        self.assertIn("-| steuerfreier Betrag | 620 € |", note.body)
        self.assertIn("+| steuerfreier Betrag | 650 € |", note.body)
        self.assertNotIn("Zusammenfassung", note.body, "only the changed section")
        entry.write({"stand": "2026-01"})
        self.env.flush_all()
        self.env.cr.precommit.run()  # tracking is written at commit time
        entry.invalidate_recordset(["message_ids"])
        tracked = entry.message_ids.sudo().tracking_value_ids.filtered(lambda t: t.field_id.name == "stand")
        self.assertEqual((tracked.old_value_char, tracked.new_value_char), ("2025-01", "2026-01"))
        self.assertEqual(entry.version_ids.sorted("number", reverse=True).mapped("origin"), ["odoo", "odoo", "import"])

    def test_audit_trail_links_the_cited_entry_version(self):
        self.reindex()
        answer = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD).answer_id
        sv = self.Entry.search([("entry_id", "=", "pv-sv-01")])
        first = sv.version_ids
        self.assertEqual(len(first), 1)
        sources = answer.sudo().source_ids.filtered(lambda s: s.entry_ref == "pv-sv-01")
        self.assertTrue(sources)
        self.assertEqual(sources.entry_version_id, first)
        self.as_manager(sv).write({"body": sv.body.replace("551,10 €", "560,00 €")})
        self.assertEqual(len(sv.version_ids), 2)
        self.assertEqual(sources.entry_version_id, first, "the answer keeps pointing at what it cited")
        self.assertIn("551,10 €", first.markdown)
