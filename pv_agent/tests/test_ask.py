import json
import os
from unittest.mock import patch

from odoo.exceptions import UserError
from odoo.tests import tagged

from ..services import index_access
from .common import PvAgentCase
from .ollama_api_server import Reply

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
REFUSAL = "Dazu enthält die Wissensbasis keine Aussage."


@tagged("post_install", "-at_install")
class TestAsk(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.Conversation = cls.env["pv_agent.conversation"]
        cls.Message = cls.env["pv_agent.message"]

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.ollama.requests.clear()

    def ask_and_run(self, question, *replies, user=None):
        self.ollama.script(*replies)
        asked = self.Conversation.with_user(user or self.clerk).action_ask(question)
        self.assertEqual(asked["state"], "pending")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        question_msg = self.Message.browse(asked["message_id"])
        return question_msg, question_msg.answer_id

    def bus_payloads(self, user, progress=False):
        """The final results pushed to ``user`` (with ``progress``: the progress pushes instead)."""
        channel = json.dumps([self.env.cr.dbname, "res.partner", user.partner_id.id], separators=(",", ":"))
        notes = self.env["bus.bus"].sudo().search([("channel", "=", channel)], order="id")
        payloads = [json.loads(n.message)["payload"] for n in notes if json.loads(n.message)["type"] == "pv_agent/answer"]
        return [p for p in payloads if ("progress" in p) == progress]

    # -- the round trip ------------------------------------------------------------------
    def test_question_is_stored_at_once_and_queued(self):
        cron = self.env.ref("pv_agent.ir_cron_pv_agent_answer")
        triggers = self.env["ir.cron.trigger"].search_count([("cron_id", "=", cron.id)])
        asked = self.Conversation.with_user(self.clerk).action_ask("  Wie hoch ist die Geringfügigkeitsgrenze?  ")
        question = self.Message.browse(asked["message_id"])
        self.assertEqual((question.role, question.state, question.body),
                         ("question", "pending", "Wie hoch ist die Geringfügigkeitsgrenze?"))
        self.assertEqual(question.conversation_id.user_id, self.clerk)
        self.assertEqual(question.conversation_id.name, "Wie hoch ist die Geringfügigkeitsgrenze?")
        self.assertEqual(self.env["ir.cron.trigger"].search_count([("cron_id", "=", cron.id)]), triggers + 1)
        self.assertFalse(self.ollama.requests_to("/api/chat"), "no model call inside the request")
        # a follow-up goes into the same conversation
        again = self.Conversation.with_user(self.clerk).action_ask("Und 2025?", conversation_id=asked["conversation_id"])
        self.assertEqual(again["conversation_id"], asked["conversation_id"])
        with self.assertRaises(UserError):
            self.Conversation.with_user(self.clerk).action_ask("   ")

    def test_answered_end_to_end_with_audit_trail_and_bus(self):
        question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD)
        self.assertEqual(question.state, "done")
        self.assertEqual((answer.role, answer.state), ("answer", "answered"), answer.answer_json)
        self.assertEqual(answer.body, GOOD)
        self.assertEqual(answer.conversation_id, question.conversation_id)
        self.assertEqual(answer.citation_entry_ids.mapped("entry_id"), ["pv-sv-01"])
        self.assertEqual(answer.chat_model, "qwen3.8:27b")
        self.assertEqual(answer.embed_model, "bge-m3")
        self.assertTrue(answer.prompt_version)
        self.assertGreater(answer.duration_ms, 0)
        trail = json.loads(answer.answer_json)
        self.assertEqual(trail["state"], "answered")
        self.assertEqual(trail["question"], "Wie hoch ist die Geringfügigkeitsgrenze 2026?")
        self.assertIn("pv-sv-01", [r["id"] for r in trail["retrieved"]])
        self.assertEqual([c["id"] for c in trail["citations"]], ["pv-sv-01"])
        self.assertIn("total_ms", trail["timings"])
        # the model got the knowledge text and num_ctx
        chat = self.ollama.requests_to("/api/chat")[0]
        self.assertIn("551,10", json.dumps(chat["messages"], ensure_ascii=False))
        self.assertEqual(chat["options"]["num_ctx"], 32768)
        # the clerk's browser tabs were told
        payloads = self.bus_payloads(self.clerk)
        self.assertEqual(len(payloads), 1)
        self.assertEqual(payloads[0]["answer_id"], answer.id)
        self.assertEqual(payloads[0]["question_id"], question.id)
        self.assertEqual(payloads[0]["state"], "answered")
        self.assertEqual(payloads[0]["body"], GOOD)
        self.assertFalse(self.bus_payloads(self.clerk2))
        # and the clerk reads it back through the record rules
        self.assertEqual(self.Message.with_user(self.clerk).browse(answer.id).body, GOOD)

    def test_answered_after_retry(self):
        bad = "Die Grenze beträgt 551,10 € (Stand 2026-01) [pv-xx-99]."
        question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?", bad, GOOD)
        self.assertEqual(answer.state, "answered_after_retry", answer.answer_json)
        self.assertEqual(len(self.ollama.requests_to("/api/chat")), 2)
        self.assertIn("first_attempt", json.loads(answer.answer_json))

    def test_uncertain(self):
        wrong = "Die Geringfügigkeitsgrenze beträgt monatlich 612,40 € (Stand 2026-01) [pv-sv-01]."
        question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?", wrong, wrong)
        self.assertEqual(answer.state, "uncertain", answer.answer_json)
        self.assertTrue(json.loads(answer.answer_json)["flags"]["unsupported_figures"])

    def test_model_refusal_of_a_covered_question_is_unanswered(self):
        # issue 28: the knowledge base has the entry, so the model's "nothing" does not stand
        question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?", REFUSAL)
        self.assertEqual(answer.state, "unanswered", answer.answer_json)
        self.assertNotIn(REFUSAL, answer.body)
        self.assertIn("pv-sv-01", answer.citation_entry_ids.mapped("entry_id"))
        self.assertIn("551,10", answer.body)

    def test_off_topic(self):
        question, answer = self.ask_and_run("Wie wird das Wetter morgen in Wien?")
        self.assertEqual(answer.state, "off_topic", answer.answer_json)
        self.assertFalse(self.ollama.requests_to("/api/chat"))

    def test_sources_only_when_the_model_fails(self):
        question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?",
                                            Reply(status=500, error="out of memory"))
        self.assertEqual(answer.state, "sources_only", answer.answer_json)
        self.assertIn("551,10", answer.body)
        self.assertEqual(question.state, "done")

    def test_failure_leaves_visible_error_and_retry_answers(self):
        with patch("odoo.addons.pv_agent.engine.answer.ask.ask", side_effect=RuntimeError("Index kaputt")), \
                self.assertLogs("odoo.addons.pv_agent.models.pv_agent_message", "ERROR"):
            question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?")
        self.assertEqual(question.state, "error")
        self.assertIn("Index kaputt", question.error)
        self.assertFalse(answer)
        payloads = self.bus_payloads(self.clerk)
        self.assertEqual(payloads[-1]["question_state"], "error")
        self.assertIn("Index kaputt", payloads[-1]["error"])
        # the clerk asks again: the question is kept and answered
        self.ollama.script(GOOD)
        question.with_user(self.clerk).action_retry()
        self.assertEqual(question.state, "pending")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.state, "done")
        self.assertEqual(question.answer_id.state, "answered")

    def test_no_index_yet_is_an_error_not_a_lost_question(self):
        index_access.forget_indexes()
        os.remove(self.sidecar)
        question, answer = self.ask_and_run("Wie hoch ist die Geringfügigkeitsgrenze 2026?")
        self.assertEqual(question.state, "error")
        self.assertIn("noch keinen Index", question.error)

    def test_questions_are_answered_in_order(self):
        self.ollama.script(GOOD, REFUSAL)
        first = self.Conversation.with_user(self.clerk).action_ask("Wie hoch ist die Geringfügigkeitsgrenze 2026?")
        # another wording: the same one would reuse the first answer (issue 31)
        second = self.Conversation.with_user(self.clerk2).action_ask("Geringfügigkeitsgrenze 2026 monatlich?")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(self.Message.browse(first["message_id"]).answer_id.state, "answered")
        self.assertEqual(self.Message.browse(second["message_id"]).answer_id.state, "unanswered")
        self.assertEqual(len(self.bus_payloads(self.clerk)), 1)
        self.assertEqual(len(self.bus_payloads(self.clerk2)), 1)
