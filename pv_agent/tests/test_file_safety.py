"""Issue 29, points 6–10: no file change is lost, nothing is written or read outside the
knowledge-base folder, and frontmatter YAML cannot expand. Each test fails on the code before
the fix; docs/odoo.md and docs/reliability.md list them."""
import json
import os
import shutil
import tempfile

import psycopg2.errors

from odoo import api, sql_db
from odoo.exceptions import UserError
from odoo.tests import TransactionCase, tagged

from .common import PvAgentCase

OUTDATED = "veraltet.*bitte neu öffnen"


@tagged("post_install", "-at_install")
class TestFileSafety(PvAgentCase):
    def setUp(self):
        super().setUp()
        self.import_kb()
        self.env.flush_all()
        self.env.cr.precommit.run()
        self.sz1 = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        self.docs = os.path.join(self.kb_dir, "dokumente")
        self.path = os.path.join(self.docs, "pv-sz-01.md")
        self.file_text = self.read(self.path)
        self.outside = tempfile.mkdtemp(prefix="outside_", dir=self.tmp)
        self.env["res.config.settings"].with_user(self.admin).create({"pv_agent_export_to_folder": True}).execute()

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def read(path):
        with open(path, encoding="utf-8") as f:
            return f.read()

    def as_manager(self, records):
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

    def write_into_folder(self, records=None):
        records = self.as_manager(self.Entry) if records is None else self.as_manager(records)
        return records.action_write_to_folder()["params"]

    def make_conflict(self):
        entry = self.edit_in_odoo()
        self.change_file()
        self.reimport()
        self.assertTrue(entry.file_conflict)
        return entry

    def open_conflict(self, entry):
        return self.as_manager(self.env["pv_agent.entry.conflict"]).create({"entry_id": entry.id})

    # -- 6: "Write into the folder" overwrites no change nobody imported ------------------------
    def test_6_a_file_changed_since_the_import_is_not_overwritten_but_a_conflict(self):
        entry = self.edit_in_odoo()
        self.change_file()  # a colleague's commit, not imported yet
        notice = self.write_into_folder()
        self.assertEqual(self.read(self.path), self.file_text, "the colleague's change is still there")
        self.assertEqual(notice["type"], "warning")
        self.assertIn("[pv-sz-01]", notice["message"])
        self.assertIn("Konflikt", notice["message"])
        self.assertTrue(entry.file_conflict)
        self.assertEqual(entry.conflict_file_text, self.file_text)
        self.assertIn("650 €", entry.body, "the Odoo version stays in use")

    def test_6_an_entry_in_conflict_is_skipped(self):
        entry = self.make_conflict()
        for records in (None, entry):  # all edited entries, or this one selected
            notice = self.write_into_folder(records)
            self.assertEqual(self.read(self.path), self.file_text)
            self.assertIn("[pv-sz-01]", notice["message"])
            self.assertIn("Konflikt", notice["message"])

    def test_6_a_changed_file_of_an_unedited_entry_is_left_for_the_import(self):
        self.change_file()
        notice = self.write_into_folder(self.sz1)
        self.assertEqual(self.read(self.path), self.file_text)
        self.assertIn("seit dem letzten Import geändert", notice["message"])
        self.assertFalse(self.sz1.file_conflict)
        self.assertEqual(self.reimport()[1]["updated"], ["pv-sz-01"], "the import takes the file as before")

    def test_6_a_deleted_file_is_not_written_back_before_an_import(self):
        self.edit_in_odoo()
        os.remove(self.path)
        notice = self.write_into_folder()
        self.assertFalse(os.path.exists(self.path))
        self.assertIn("gelöscht", notice["message"])

    def test_6_the_unchanged_file_and_a_new_entry_are_written(self):
        entry = self.edit_in_odoo()
        new = self.as_manager(self.Entry).create({"entry_id": "pv-neu-01", "name": "Neu", "stand": "2026-01",
                                                  "topic": "sonderzahlungen", "body": self.sz1.body})
        notice = self.write_into_folder()
        self.assertEqual(notice["type"], "success", notice)
        self.assertIn("650 €", self.read(self.path))
        self.assertEqual(self.read(os.path.join(self.docs, "pv-neu-01.md")), new._markdown())
        _job, report = self.reimport()
        self.assertEqual(sorted(report["synced"]), ["pv-neu-01", "pv-sz-01"])
        self.assertFalse(entry.edited_in_odoo)

    # -- 7: the conflict view acts only on what it showed ----------------------------------------
    def test_7_a_colleagues_edit_after_the_view_opened_is_not_overwritten(self):
        entry = self.make_conflict()
        wizard = self.open_conflict(entry)
        wizard.merged_text = wizard.merged_text.replace("6 %", "7 %")
        self.as_manager(entry).write({"body": entry.body.replace("| 650 € |", "| 660 € |")})  # the colleague
        for action in ("action_save_merged", "action_keep_odoo", "action_take_file"):
            with self.assertRaisesRegex(UserError, OUTDATED):
                getattr(wizard, action)()
        self.assertIn("660 €", entry.body)
        self.assertTrue(entry.file_conflict)
        self.open_conflict(entry).action_keep_odoo()  # opened again: it works
        self.assertFalse(entry.file_conflict)
        self.assertIn("660 €", entry.body)

    def test_7_a_newer_file_version_after_the_view_opened_is_not_set_aside(self):
        entry = self.make_conflict()
        wizard = self.open_conflict(entry)
        self.change_file("7 %", "8 %")
        self.reimport()  # a newer file version nobody saw in this view
        self.assertIn("8 %", entry.conflict_file_text)
        with self.assertRaisesRegex(UserError, OUTDATED):
            wizard.action_keep_odoo()
        self.assertTrue(entry.file_conflict)
        self.assertIn("8 %", entry.conflict_file_text)

    def test_7_the_rpc_methods_take_the_fingerprints_the_caller_saw(self):
        entry = self.as_manager(self.make_conflict())
        seen = entry._conflict_fingerprints()
        with self.assertRaisesRegex(UserError, OUTDATED):
            entry.action_conflict_keep_odoo()  # a caller that says nothing about what it saw
        with self.assertRaisesRegex(UserError, OUTDATED):
            entry.action_conflict_take_file(content_hash=seen["content_hash"], file_hash="0" * 64)
        with self.assertRaisesRegex(UserError, OUTDATED):
            entry.action_conflict_save_merged(entry._markdown(), file_hash=seen["file_hash"], content_hash="x")
        self.assertTrue(entry.file_conflict)
        entry.action_conflict_take_file(**seen)
        self.assertIn("7 %", entry.body)
        self.assertFalse(entry.file_conflict)

    # -- 8: an import never archives what exists only in Odoo --------------------------------------
    def test_8_an_entry_created_in_odoo_is_kept_and_reported(self):
        new = self.as_manager(self.Entry).create({"entry_id": "pv-neu-01", "name": "Neu", "stand": "2026-01",
                                                  "topic": "sonderzahlungen", "body": self.sz1.body})
        job, report = self.reimport()
        self.assertTrue(new.active)
        self.assertEqual((report["archived"], report["odoo_only"]), ([], ["pv-neu-01"]))
        self.assertIn("Nur in Odoo", job.message)
        self.assertIn("pv-neu-01", job.message)

    def test_8_the_deleted_file_of_an_edited_entry_is_a_conflict(self):
        entry = self.edit_in_odoo()
        os.remove(self.path)
        _job, report = self.reimport()
        self.assertEqual((report["archived"], report["conflicts"]), ([], ["pv-sz-01"]))
        self.assertTrue(entry.active and entry.file_conflict)
        self.assertIn("650 €", entry.body)
        self.assertIn("gelöscht", entry.message_ids[:1].body)
        notes = entry.message_ids
        self.assertEqual(self.reimport()[1]["conflicts"], ["pv-sz-01"], "the same conflict again")
        self.assertEqual(entry.message_ids, notes, "no second note")
        wizard = self.open_conflict(entry)
        self.assertTrue(wizard.file_deleted)
        # keep the Odoo version: no conflict at the next import, and the export writes it back
        wizard.action_keep_odoo()
        self.assertTrue(entry.edited_in_odoo)
        _job, report = self.reimport()
        self.assertEqual((report["conflicts"], report["odoo_only"], report["archived"]), ([], ["pv-sz-01"], []))
        self.write_into_folder()
        self.assertIn("650 €", self.read(self.path))

    def test_8_taking_the_deletion_archives_the_edited_entry(self):
        entry = self.edit_in_odoo()
        os.remove(self.path)
        self.reimport()
        self.open_conflict(entry).action_take_file()
        self.assertFalse(entry.active or entry.file_conflict or entry.edited_in_odoo)
        self.assertEqual(self.reimport()[1]["archived"], [])

    # -- 9: no symlink followed, no write outside the folder or through a link ---------------------
    def test_9_a_symlinked_entry_file_does_not_become_an_entry(self):
        secret = os.path.join(self.outside, "pv-geheim-01.md")
        with open(secret, "w", encoding="utf-8") as f:
            f.write(self.file_text.replace("id: pv-sz-01", "id: pv-geheim-01").replace("13.", "Gehälter"))
        os.symlink(secret, os.path.join(self.docs, "pv-geheim-01.md"))
        _job, report = self.reimport()
        self.assertFalse(self.Entry.with_context(active_test=False).search([("entry_id", "=", "pv-geheim-01")]))
        self.assertIn({"file": "dokumente/pv-geheim-01.md", "line": 0,
                       "reason": "symbolischer Link – wird weder gelesen noch geschrieben"}, report["failed"])

    def test_9_kb_json_through_a_symlink_is_refused_before_anything_is_written(self):
        victim = os.path.join(self.outside, "crontab")
        with open(victim, "w", encoding="utf-8") as f:
            f.write("keep me\n")
        os.symlink(victim, os.path.join(self.kb_dir, "kb.json"))
        self.edit_in_odoo()
        with self.assertRaisesRegex(UserError, "kb.json ist ein symbolischer Link"):
            self.write_into_folder()
        self.assertEqual(self.read(victim), "keep me\n")
        self.assertEqual(self.read(self.path), self.file_text, "no entry written either")

    def test_9_the_entry_file_as_a_symlink_is_neither_read_nor_written(self):
        victim = os.path.join(self.outside, "pv-sz-01.md")
        shutil.move(self.path, victim)
        os.symlink(victim, self.path)
        _job, report = self.reimport()
        self.assertIn("dokumente/pv-sz-01.md", [f["file"] for f in report["failed"]])
        self.edit_in_odoo()
        notice = self.write_into_folder()
        self.assertIn("symbolischer Link", notice["message"])
        self.assertEqual(self.read(victim), self.file_text)
        self.assertTrue(os.path.islink(self.path))

    def test_9_no_write_through_a_hard_link(self):
        victim = os.path.join(self.outside, "pv-sz-01.md")
        os.link(self.path, victim)
        self.edit_in_odoo()
        self.write_into_folder()
        self.assertIn("650 €", self.read(self.path))
        self.assertEqual(self.read(victim), self.file_text, "the other name of the file keeps its text")
        self.assertEqual([n for n in os.listdir(self.docs) if n.endswith(".tmp")], [], "no temporary file left")

    # -- 10: YAML frontmatter ------------------------------------------------------------------------
    ALIASES = 'l0: &l0 "lol"\nl1: &l1 [*l0, *l0, *l0, *l0]\nsource_ref: [*l1, *l1, *l1, *l1]\n'

    def test_10_aliases_in_a_file_are_refused_and_the_entry_keeps_its_last_good_version(self):
        before = (self.sz1.content_hash, self.sz1.source_ref)
        self.write_kb_file("pv-sz-01.md", self.file_text.replace('source_ref: "Testdaten"\n', self.ALIASES))
        _job, report = self.reimport()
        self.assertIn({"file": "dokumente/pv-sz-01.md", "line": 11,
                       "reason": "YAML-Anker '&l0' im Frontmatter nicht erlaubt"}, report["failed"])
        self.assertEqual((self.sz1.content_hash, self.sz1.source_ref), before)
        self.assertTrue(self.sz1.active)

    def test_10_aliases_in_a_merged_text_are_refused(self):
        entry = self.make_conflict()
        wizard = self.open_conflict(entry)
        wizard.merged_text = wizard.merged_text.replace('source_ref: "Testdaten"\n', self.ALIASES)
        with self.assertRaisesRegex(UserError, "Zeile 11: YAML-Anker '&l0'"):
            wizard.action_save_merged()
        self.assertTrue(entry.file_conflict)
        self.assertEqual(entry.source_ref, "Testdaten")


@tagged("post_install", "-at_install")
class TestConflictViewTwoCursors(TransactionCase):
    """Point 7 with two real cursors, as two managers' requests: B commits an edit of the entry
    while A's conflict view is open, and while A's decision is already running."""

    def setUp(self):
        super().setUp()
        self.db = self.env.cr.dbname
        self.admin_id = self.env.ref("base.user_admin").id  # a PV-Agent manager after installation
        with self.cursor() as cr:  # an entry in conflict with its file, committed
            Entry = api.Environment(cr, self.admin_id, {})["pv_agent.entry"]
            entry = Entry.create({"entry_id": "pv-zwei-01", "name": "Zwei Cursor", "stand": "2026-01",
                                  "topic": "sonderzahlungen", "source": "gesetz", "body": "## Zusammenfassung\nA: 620 €"})
            file_text = entry._markdown().replace("620 €", "630 €")
            entry.write({"import_hash": "0" * 64, "file_conflict": True, "conflict_file_text": file_text,
                         "conflict_file_hash": "f" * 64})
            self.entry_id = entry.id
            cr.commit()
        self.addCleanup(self.remove_entry)

    def cursor(self):
        return sql_db.db_connect(self.db).cursor()

    def remove_entry(self):
        with self.cursor() as cr:  # plain SQL: whatever rules guard versions and messages meanwhile
            cr.execute("DELETE FROM mail_message WHERE model = 'pv_agent.entry' AND res_id = %s", [self.entry_id])
            cr.execute("DELETE FROM pv_agent_entry_version WHERE entry_id = %s", [self.entry_id])
            cr.execute("DELETE FROM pv_agent_entry WHERE id = %s", [self.entry_id])
            cr.commit()

    def colleague_edits(self):
        with self.cursor() as cr:
            entry = api.Environment(cr, self.admin_id, {})["pv_agent.entry"].browse(self.entry_id)
            entry.write({"body": "## Zusammenfassung\nA: 650 €"})
            cr.commit()

    def test_7_an_edit_committed_while_the_view_is_open_is_not_overwritten(self):
        with self.cursor() as cr_a:
            env_a = api.Environment(cr_a, self.admin_id, {})
            wizard = env_a["pv_agent.entry.conflict"].create({"entry_id": self.entry_id})
            cr_a.commit()  # A's request that opened the view ends
            self.colleague_edits()
            env_a.invalidate_all()
            with self.assertRaisesRegex(UserError, "outdated"):
                wizard.action_save_merged()
            cr_a.rollback()
        with self.cursor() as cr:
            entry = api.Environment(cr, self.admin_id, {})["pv_agent.entry"].browse(self.entry_id)
            self.assertIn("650 €", entry.body)
            self.assertTrue(entry.file_conflict)

    def test_7_an_edit_committed_while_the_decision_runs_makes_it_retry_and_refuse(self):
        with self.cursor() as cr_a:
            env_a = api.Environment(cr_a, self.admin_id, {})
            wizard = env_a["pv_agent.entry.conflict"].create({"entry_id": self.entry_id})
            cr_a.commit()
            env_a.invalidate_all()
            self.assertTrue(wizard.entry_id.content_hash)  # A's decision has read the entry (its snapshot)
            self.colleague_edits()
            with self.assertRaises(psycopg2.errors.SerializationFailure):  # A's check saw the old version
                wizard.action_keep_odoo()
                env_a.flush_all()
            cr_a.rollback()  # Odoo retries the request on a serialization failure:
            env_a.invalidate_all()
            with self.assertRaisesRegex(UserError, "outdated"):
                wizard.action_keep_odoo()
            cr_a.rollback()
        with self.cursor() as cr:
            entry = api.Environment(cr, self.admin_id, {})["pv_agent.entry"].browse(self.entry_id)
            self.assertIn("650 €", entry.body)
            self.assertEqual((entry.file_conflict, entry.conflict_file_hash), (True, "f" * 64))
