import glob
import json
import os

from odoo.tests import tagged

from ..services import odoo_settings
from .common import PvAgentCase


@tagged("post_install", "-at_install")
class TestImport(PvAgentCase):
    def test_import_creates_entries_and_reports_broken_file(self):
        job = self.import_kb()
        self.assertEqual(job.kind, "import")
        self.assertEqual(job.state, "done")
        report = json.loads(job.report_json)
        self.assertCountEqual(report["created"], ["pv-sz-01", "pv-sz-02", "pv-sv-01"])
        self.assertEqual(report["failed"], [
            {"file": "dokumente/pv-kaputt-01.md", "line": 1, "reason": "Pflichtfeld 'title' fehlt"}])
        self.assertIn("3 neu", job.message)
        self.assertIn("pv-kaputt-01.md:1: Pflichtfeld 'title' fehlt", job.message)

        sz1 = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        self.assertEqual(sz1.name, "Sonstige Bezüge – begünstigte Besteuerung des 13. und 14. Bezugs")
        self.assertEqual((sz1.topic, sz1.source, sz1.stand, sz1.official), ("sonderzahlungen", "briefing", "2025-01", True))
        self.assertEqual(sz1.legal_bases, "§ 67 Abs 1 EStG\n§ 67 Abs 2 EStG")
        self.assertIn("Urlaubszuschuss", sz1.tags.split("\n"))
        self.assertEqual(sz1.cross_ref_ids.mapped("entry_id"), ["pv-sz-02"])
        self.assertTrue(sz1.body.startswith("## Zusammenfassung"))
        self.assertTrue(sz1.stale, "a new entry is not in the index yet")
        self.assertEqual(sz1.display_name, "[pv-sz-01] " + sz1.name)

    def test_reimport_updates_changed_archives_removed_keeps_unchanged(self):
        self.import_kb()
        sz2 = self.Entry.search([("entry_id", "=", "pv-sz-02")])
        path = os.path.join(self.kb_dir, "dokumente", "pv-sz-02.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.write_kb_file("pv-sz-02.md", text.replace("Jahressechstel – Berechnung", "Jahressechstel – neu"))
        os.remove(os.path.join(self.kb_dir, "dokumente", "pv-sv-01.md"))

        report = json.loads(self.import_kb().report_json)
        self.assertEqual(report["updated"], ["pv-sz-02"])
        self.assertEqual(report["unchanged"], ["pv-sz-01"])
        self.assertEqual(report["archived"], ["pv-sv-01"])
        self.assertEqual(sz2.name, "Jahressechstel – neu")
        gone = self.Entry.with_context(active_test=False).search([("entry_id", "=", "pv-sv-01")])
        self.assertFalse(gone.active)

        # the file comes back → the entry is restored
        self.write_kb_file("pv-sv-01.md", open(os.path.join(os.path.dirname(__file__), "data", "kb",
                                                            "dokumente", "pv-sv-01.md"), encoding="utf-8").read())
        report = json.loads(self.import_kb().report_json)
        self.assertEqual(report["updated"], ["pv-sv-01"])
        self.assertTrue(gone.active)

    def test_broken_file_does_not_archive_its_entry(self):
        self.import_kb()
        path = os.path.join(self.kb_dir, "dokumente", "pv-sv-01.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.write_kb_file("pv-sv-01.md", text.replace("stand: 2026-01", "stand: 2026-13"))
        report = json.loads(self.import_kb().report_json)
        self.assertIn("dokumente/pv-sv-01.md", [f["file"] for f in report["failed"]])
        self.assertEqual(report["archived"], [])
        self.assertTrue(self.Entry.search([("entry_id", "=", "pv-sv-01")]).active)

    def test_edit_in_odoo_survives_reimport_of_unchanged_file(self):
        self.import_kb()
        sz1 = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        sz1.with_user(self.manager).write({"name": "Geänderter Titel"})
        report = json.loads(self.import_kb().report_json)
        self.assertIn("pv-sz-01", report["unchanged"])
        self.assertEqual(sz1.name, "Geänderter Titel")

    def test_missing_folder_reports_and_archives_nothing(self):
        self.import_kb()
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", os.path.join(self.tmp, "nichts"))
        job = self.Entry.with_user(self.manager).action_import_knowledge_base()
        self.assertEqual(job.state, "failed")
        self.assertIn("nicht gefunden", job.message)
        self.assertEqual(self.Entry.search_count([]), 3)

    def test_records_convert_to_engine_entries(self):
        self.import_kb()
        sz1 = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        entry = sz1._to_engine_entry()
        self.assertEqual(entry.id, "pv-sz-01")
        self.assertEqual(entry.legal_bases, ("§ 67 Abs 1 EStG", "§ 67 Abs 2 EStG"))
        self.assertEqual(entry.cross_refs, ("pv-sz-02",))
        self.assertEqual(entry.content_hash, sz1.content_hash)
        self.assertEqual(sz1.content_hash, sz1.import_hash, "record and file say the same")
        before = sz1.content_hash
        sz1.cross_ref_ids.active = False  # an archived target drops out of the index's links
        self.assertEqual(sz1._to_engine_entry().cross_refs, ())
        self.assertNotEqual(sz1.content_hash, before, "so the next reindex updates the entry")

    def test_settings_button_imports_from_configured_path(self):
        settings = self.env["res.config.settings"].with_user(self.admin).create({})
        self.assertEqual(settings.pv_agent_kb_path, self.kb_dir)
        action = settings.action_pv_agent_import()
        job = self.Job.browse(action["res_id"])
        self.assertEqual((job.kind, job.state, job.kb_path), ("import", "done", self.kb_dir))
        self.assertEqual(self.Entry.search_count([]), 3)

    def test_bundled_sample_knowledge_base_imports_cleanly(self):
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", False)
        job = self.import_kb()
        self.assertEqual(job.kb_path, odoo_settings.DEFAULT_KB_PATH)
        report = json.loads(job.report_json)
        files = glob.glob(os.path.join(odoo_settings.DEFAULT_KB_PATH, "dokumente", "*.md"))
        self.assertGreater(len(files), 100)
        self.assertEqual(report["failed"], [])
        self.assertEqual(len(report["created"]), len(files))
        with_refs = self.Entry.search([("cross_ref_ids", "!=", False)])
        self.assertTrue(with_refs, "cross_refs become links between records")
