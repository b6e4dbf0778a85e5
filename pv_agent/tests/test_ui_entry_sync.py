import os

from odoo.tests import tagged

from .common import PvAgentHttpCase


@tagged("post_install", "-at_install")
class TestFileConflictUi(PvAgentHttpCase):
    def test_file_conflict_tour(self):
        """An entry edited in Odoo whose file changed too: the manager merges the two in the browser."""
        self.import_kb()
        entry = self.Entry.search([("entry_id", "=", "pv-sz-01")])
        entry.with_user(self.manager).write({"body": entry.body.replace("| 620 € |", "| 650 € |")})
        path = os.path.join(self.kb_dir, "dokumente", "pv-sz-01.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.write_kb_file("pv-sz-01.md", text.replace("6 %", "7 %"))
        self.import_kb()
        self.assertTrue(entry.file_conflict)

        self.start_tour("/odoo/action-pv_agent.action_pv_agent_entry", "pv_agent_file_conflict", login="pv_manager")

        entry.invalidate_recordset()
        self.assertFalse(entry.file_conflict)
        self.assertIn("| 650 € |", entry.body)
        self.assertIn("| 7 % |", entry.body)
        self.assertIn("Satz von 7 %", entry.body)
        self.assertTrue(entry.edited_in_odoo)
        self.assertEqual(entry.version_ids.sorted("number", reverse=True)[:1].origin, "merged")
