from odoo.exceptions import AccessError
from odoo.tests import tagged

from .common import PvAgentCase


@tagged("post_install", "-at_install")
class TestAccess(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.Conversation = cls.env["pv_agent.conversation"]
        cls.Message = cls.env["pv_agent.message"]

    def test_user_without_group_is_denied_everywhere(self):
        self.import_kb()
        asked = self.Conversation.with_user(self.clerk).action_ask("Wie hoch ist die Geringfügigkeitsgrenze?")
        env = self.env(user=self.outsider)
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].action_ask("Wie hoch ist die Geringfügigkeitsgrenze?")
        with self.assertRaises(AccessError):
            env["pv_agent.entry"].search([])
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].search([])
        with self.assertRaises(AccessError):
            env["pv_agent.message"].browse(asked["message_id"]).read(["body"])
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].create({"name": "x"})
        with self.assertRaises(AccessError):
            env["pv_agent.index.job"].search([])
        with self.assertRaises(AccessError):
            env["pv_agent.entry"].action_import_knowledge_base()
        with self.assertRaises(AccessError):
            env["pv_agent.index.job"].action_queue_reindex()

    def test_clerk_sees_only_own_conversations(self):
        mine = self.Conversation.with_user(self.clerk).action_ask("Was ist das Jahressechstel?")
        theirs = self.Conversation.with_user(self.clerk2).action_ask("Wie hoch ist die Geringfügigkeitsgrenze?")
        env = self.env(user=self.clerk)
        self.assertEqual(env["pv_agent.conversation"].search([]).ids, [mine["conversation_id"]])
        self.assertEqual(env["pv_agent.message"].search([]).ids, [mine["message_id"]])
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].browse(theirs["conversation_id"]).read(["name"])
        with self.assertRaises(AccessError):
            env["pv_agent.message"].browse(theirs["message_id"]).read(["body"])
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].action_ask("Und 2026?", conversation_id=theirs["conversation_id"])
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].browse(theirs["conversation_id"]).write({"name": "gekapert"})
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].create({"name": "fremd", "user_id": self.clerk2.id})

    def test_clerk_cannot_forge_or_change_messages(self):
        asked = self.Conversation.with_user(self.clerk).action_ask("Was ist das Jahressechstel?")
        env = self.env(user=self.clerk)
        with self.assertRaises(AccessError):
            env["pv_agent.message"].create({"conversation_id": asked["conversation_id"], "role": "answer",
                                            "body": "erfunden", "state": "answered"})
        with self.assertRaises(AccessError):
            env["pv_agent.message"].browse(asked["message_id"]).write({"body": "anders"})
        with self.assertRaises(AccessError):
            env["pv_agent.message"].browse(asked["message_id"]).unlink()

    def test_clerk_cannot_use_manager_actions(self):
        self.import_kb()
        env = self.env(user=self.clerk)
        entry = env["pv_agent.entry"].search([], limit=1)
        self.assertTrue(entry, "clerks read entries")
        with self.assertRaises(AccessError):
            entry.write({"name": "geändert"})
        with self.assertRaises(AccessError):
            env["pv_agent.entry"].create({"entry_id": "pv-x-01", "name": "x", "stand": "2025-01",
                                          "topic": "x", "body": "## Zusammenfassung\nx"})
        with self.assertRaises(AccessError):
            entry.unlink()
        with self.assertRaises(AccessError):
            env["pv_agent.entry"].action_import_knowledge_base()
        with self.assertRaises(AccessError):
            env["pv_agent.index.job"].action_queue_reindex()
        with self.assertRaises(AccessError):
            entry.action_reindex()
        with self.assertRaises(AccessError):
            env["pv_agent.index.job"].search([])
        with self.assertRaises(AccessError):
            env["res.config.settings"].create({})

    def test_manager_sees_every_conversation_and_audit_trail(self):
        a = self.Conversation.with_user(self.clerk).action_ask("Was ist das Jahressechstel?")
        b = self.Conversation.with_user(self.clerk2).action_ask("Wie hoch ist die Geringfügigkeitsgrenze?")
        env = self.env(user=self.manager)
        self.assertEqual(set(env["pv_agent.conversation"].search([]).ids), {a["conversation_id"], b["conversation_id"]})
        self.assertEqual(set(env["pv_agent.message"].search([]).ids), {a["message_id"], b["message_id"]})
        # but asks only in own conversations: the audit trail stays the clerk's
        with self.assertRaises(AccessError):
            env["pv_agent.conversation"].action_ask("Noch eine Frage", conversation_id=a["conversation_id"])

    def test_job_refuses_a_question_of_a_user_who_lost_the_group(self):
        self.import_kb()
        self.reindex()
        asked = self.Conversation.with_user(self.clerk).action_ask("Was ist das Jahressechstel?")
        self.clerk.group_ids = [(3, self.env.ref("pv_agent.group_user").id)]
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        question = self.Message.browse(asked["message_id"])
        self.assertEqual(question.state, "error")
        self.assertIn("keinen Zugriff", question.error)
        self.assertFalse(self.ollama.requests_to("/api/chat"), "no knowledge text reached a prompt")
