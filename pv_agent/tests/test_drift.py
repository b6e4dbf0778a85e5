"""Knowledge freshness in Odoo: fingerprints stored per citation, the drift check queued after
every reindex, flags with the diff, the asker told in Discuss, "Ask again" beside the old answer."""
import time

from odoo.tests import tagged

from ..engine.retrieval.retrieve import retrieve
from ..engine.drift import fingerprint_of_hit
from ..services import index_access, odoo_settings
from .common import PvAgentCase

GFG = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
SZ = "Die ersten 620 € bleiben steuerfrei (Stand 2025-01) [pv-sz-01]."
OLD_ROW = "| Geringfügigkeitsgrenze monatlich | 551,10 € | 551,10 € |"
NEW_ROW = "| Geringfügigkeitsgrenze monatlich | 551,10 € | 556,81 € |"


@tagged("post_install", "-at_install")
class TestDrift(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.Source = cls.env["pv_agent.answer.source"]

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.gfg = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GFG).answer_id
        self.sz = self.ask_as(self.clerk, "Wie viel vom Urlaubszuschuss bleibt 2025 steuerfrei?", SZ).answer_id
        # the same question: gfg's checked answer reused (issue 31), with fingerprints of its own
        self.gfg2 = self.ask_as(self.clerk2, "Wie hoch ist die Geringfügigkeitsgrenze 2026?").answer_id
        self.assertEqual(self.gfg2.sudo().reused_from_id, self.gfg)
        self.entry = self.Entry.search([("entry_id", "=", "pv-sv-01")])

    def edit_entry(self, entry, old, new):
        self.assertIn(old, entry.body)
        entry.with_user(self.manager).body = entry.body.replace(old, new)

    def reindex_and_check(self):
        job = self.reindex()
        drift = self.Job.search([("kind", "=", "drift")], limit=1)
        self.assertEqual(drift.state, "done", drift.message)
        self.assertGreater(drift.id, job.id, "the drift check is queued after the reindex")
        return drift

    def bot_messages_to(self, user):
        channels = self.env["discuss.channel"].search([("channel_type", "=", "chat")]).filtered(
            lambda c: set(c.channel_member_ids.partner_id.ids) == {user.partner_id.id, self.bot.id})
        return channels.message_ids.filtered(lambda m: m.author_id == self.bot)

    def test_fingerprints_are_stored_per_citation(self):
        src = self.gfg.source_ids
        self.assertEqual(len(src), 1)
        self.assertEqual((src.entry_ref, src.entry_id, src.status), ("pv-sv-01", self.entry, "unchanged"))
        self.assertEqual(src.section, "Kernwerte & Fristen")
        self.assertEqual(len(src.chunk_hash), 64)
        self.assertIn(OLD_ROW, src.text)
        # queryable: which answers cite this chunk?
        self.assertEqual(self.Source.search([("chunk_hash", "=", src.chunk_hash)]).message_id, self.gfg | self.gfg2)
        self.assertEqual(self.entry.cited_count, 2)

    def test_changed_figure_flags_exactly_the_answers_citing_it(self):
        self.edit_entry(self.entry, OLD_ROW, NEW_ROW)
        drift = self.reindex_and_check()
        self.assertEqual((self.gfg.drift_state, self.gfg2.drift_state, self.sz.drift_state),
                         ("changed", "changed", "unchanged"))
        self.assertEqual((drift.answers_checked, drift.answers_flagged), (3, 2))
        diff = self.gfg.source_ids.diff
        self.assertIn("-" + OLD_ROW, diff)
        self.assertIn("+" + NEW_ROW, diff)
        self.assertEqual(diff.count("\n-"), 1, "only the changed line is removed")
        # the sz answer keeps two fingerprints: the section shown and the key values beside it
        self.assertEqual(set(self.sz.source_ids.mapped("status")), {"unchanged"})
        self.assertFalse(any(self.sz.source_ids.mapped("diff")))
        # the panel shows the flag and the diff to the clerk
        panel = self.gfg.with_user(self.clerk).with_context(lang="de_DE")._panel_dict()
        self.assertEqual(panel["drift"]["state"], "changed")
        self.assertEqual(panel["drift"]["label"], "Quelle geändert")
        self.assertIn("+" + NEW_ROW, panel["drift"]["sources"][0]["diff"])
        self.assertFalse(self.sz.with_user(self.clerk)._panel_dict()["drift"])
        # each asker is told once, in their language, about their own answers only
        told = self.bot_messages_to(self.clerk)
        self.assertEqual(len(told), 1)
        self.assertIn("Wie hoch ist die Geringfügigkeitsgrenze 2026?", told.body)
        self.assertIn("Quelle geändert", told.body)
        self.assertIn(f"/odoo/pv_agent.message/{self.gfg.id}", told.body)
        self.assertNotIn("Urlaubszuschuss", told.body)
        told2 = self.bot_messages_to(self.clerk2)
        self.assertEqual(len(told2), 1)
        self.assertIn("Source changed", told2.body)  # clerk2 speaks English
        # the next reindex without changes flags nothing new and tells nobody again
        self.reindex_and_check()
        self.assertEqual(len(self.bot_messages_to(self.clerk)), 1)
        self.assertEqual(self.gfg.drift_state, "changed")
        # managers see the drifted answers per entry
        drifted = self.Source.with_user(self.manager).search([("status", "!=", "unchanged")])
        self.assertEqual(drifted.message_id, self.gfg | self.gfg2)
        self.assertEqual(set(drifted.mapped("entry_ref")), {"pv-sv-01"})
        self.assertEqual(self.entry.drifted_count, 2)
        # a clerk sees only their own
        self.assertEqual(self.Source.with_user(self.clerk).search([("status", "!=", "unchanged")]).message_id, self.gfg)

    def test_unrelated_edit_in_the_entry_flags_nothing(self):
        self.edit_entry(self.entry, "Die Grenze wird am 1. Jänner als Parameter geprüft.",
                        "Die Grenze wird jedes Jahr am 1. Jänner als Parameter geprüft und dokumentiert.")
        drift = self.reindex_and_check()
        self.assertEqual(drift.answers_flagged, 0)
        self.assertEqual(set((self.gfg | self.gfg2 | self.sz).mapped("drift_state")), {"unchanged"})
        self.assertFalse(self.bot_messages_to(self.clerk))

    def test_removed_entry(self):
        self.Entry.search([("entry_id", "=", "pv-sz-01")]).with_user(self.manager).action_archive()
        self.reindex_and_check()
        self.assertEqual(self.sz.drift_state, "removed")
        self.assertEqual(set(self.sz.source_ids.mapped("status")), {"removed"})
        self.assertTrue(all("-" in diff for diff in self.sz.source_ids.mapped("diff")))
        self.assertEqual(self.gfg.drift_state, "unchanged")
        panel = self.sz.with_user(self.clerk).with_context(lang="de_DE")._panel_dict()
        self.assertEqual(panel["drift"]["label"], "Quelle entfernt")
        self.assertIn("Quelle entfernt", self.bot_messages_to(self.clerk).body)

    def test_ask_again_keeps_the_old_answer(self):
        self.edit_entry(self.entry, OLD_ROW, NEW_ROW)
        self.reindex_and_check()
        new_reply = "Die Geringfügigkeitsgrenze beträgt 2026 monatlich 556,81 € (Stand 2026-01) [pv-sv-01]."
        self.ollama.script(new_reply)
        asked = self.gfg.with_user(self.clerk).action_reanswer()
        question = self.env["pv_agent.message"].browse(asked["message_id"])
        self.assertEqual((question.state, question.reask_of_id, question.conversation_id),
                         ("pending", self.gfg, self.gfg.conversation_id))
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.answer_id.state, "answered", question.answer_id.answer_json)
        self.assertEqual(question.answer_id.drift_state, "unchanged")
        self.assertIn("556,81", question.answer_id.body)
        # the old answer is still there, flagged, and knows it was asked again
        self.assertTrue(self.gfg.exists())
        self.assertEqual(self.gfg.drift_state, "changed")
        panel = self.gfg.conversation_id.with_user(self.clerk)._panel_dict()
        old, new = [m for m in panel["messages"] if m["role"] == "answer"][-2:]
        self.assertEqual((old["id"], old["reasked"], new["id"]), (self.gfg.id, True, question.answer_id.id))
        with self.assertRaises(Exception):
            self.gfg.with_user(self.clerk2).action_reanswer()

    def test_drift_check_time_at_goldset_size(self):
        """One stored answer per goldset question with the sample knowledge base: how long the check takes."""
        import yaml

        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", odoo_settings.DEFAULT_KB_PATH)
        self.import_kb()
        self.reindex()
        with open(f"{odoo_settings.DEFAULT_KB_PATH}/goldset.yaml", encoding="utf-8") as f:
            questions = [q["question"] for q in yaml.safe_load(f)]
        self.assertGreaterEqual(len(questions), 78)
        settings = odoo_settings.engine_settings(self.env)
        Message = self.env["pv_agent.message"].sudo()
        conv = self.env["pv_agent.conversation"].sudo().create({"name": "Goldset", "user_id": self.clerk.id})
        with index_access.using_index(self.env.cr.dbname) as index:
            for text in questions:
                hits = [h for h in retrieve(index, text, settings).hits if h.via == "retrieval"][:3]
                question = Message.create({"conversation_id": conv.id, "role": "question", "body": text,
                                           "state": "done", "author_id": self.clerk.id})
                question._store_answer({
                    "state": "answered", "answer": "…",
                    "citations": [{"id": h.entry_id, "title": h.title, "stand": h.stand, "section": h.section,
                                   "supported": True} for h in hits],
                    "fingerprints": [fingerprint_of_hit(h).as_dict() for h in hits],
                }, 0)
        answers = Message.search([("role", "=", "answer"), ("conversation_id", "=", conv.id)])
        self.assertEqual(len(answers), len(questions))
        cited = answers.source_ids.mapped("entry_id")
        target = cited[0]
        target.with_user(self.manager).body = target.body.replace("\n", "\n\nGeändert.\n", 1)
        drift = self.reindex_and_check()
        with_sources = answers.filtered("source_ids")  # a question without any hit cites nothing
        self.assertEqual(drift.answers_checked, len(with_sources) + 3)  # and the three from setUp
        started = time.monotonic()
        with index_access.using_index(self.env.cr.dbname) as index:
            Message._check_drift(index)
        again = time.monotonic() - started
        print(f"\npv_agent drift check: {drift.answers_checked} answers, {len(answers.source_ids)} fingerprints; "
              f"job {drift.seconds:.3f} s (flagged {drift.answers_flagged}); unchanged re-run {again:.3f} s")
        self.assertLess(drift.seconds, 10)
