"""Issue 28 in Odoo: a model's "nothing in the knowledge base" for a question the knowledge base
covers ends "unanswered" — the panel and Discuss show the matching entries, labelled unchecked,
and the audit trail keeps what the model wrote."""
import json

from odoo.tests import tagged

from .common import PvAgentCase

REFUSAL = "Dazu enthält die Wissensbasis keine Aussage."
QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"


@tagged("post_install", "-at_install")
class TestUnanswered(PvAgentCase):
    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def test_panel_shows_the_entries_unchecked(self):
        question = self.ask_as(self.clerk2, QUESTION, REFUSAL)
        answer = question.answer_id
        self.assertEqual(answer.state, "unanswered", answer.answer_json)
        self.assertEqual(dict(answer._fields["state"]._description_selection(self.env))["unanswered"],
                         "No checked answer (matching entries, unchecked)")
        data = json.loads(answer.answer_json)
        self.assertEqual(data["drafts"], [REFUSAL])  # the audit trail keeps the model's text
        conv = self.env["pv_agent.conversation"].with_user(self.clerk2).panel_load(
            conversation_id=question.conversation_id.id)["conversation"]
        shown = conv["messages"][1]
        self.assertEqual(shown["state_line"]["level"], "warning")
        self.assertTrue(shown["state_line"]["text"].startswith("No checked answer"), shown["state_line"])
        self.assertIn("pv-sv-01", [c["id"] for c in shown["citations"]])
        self.assertTrue(all(c["supported"] is None for c in shown["citations"]))  # never marked as checked
        self.assertIn("Keine geprüfte Antwort", shown["html"])
        self.assertNotIn(REFUSAL, shown["html"])
        self.assertIn("551,10", shown["html"])  # the entry's key values

    def test_state_line_is_german_for_german_clerks(self):
        question = self.ask_as(self.clerk, QUESTION, REFUSAL)
        line = question.answer_id.with_user(self.clerk).with_context(lang="de_DE")._state_line()
        self.assertTrue(line["text"].startswith("Keine geprüfte Antwort"), line)

    def test_discuss_reply_says_the_entries_are_not_checked(self):
        bot = self.env.ref("pv_agent.partner_pv_agent")
        channel = self.env["discuss.channel"].with_user(self.clerk2)._get_or_create_chat([bot.id])
        self.ollama.script(REFUSAL)
        channel.with_user(self.clerk2).message_post(body=QUESTION, message_type="comment",
                                                    subtype_xmlid="mail.mt_comment")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        [reply] = channel.message_ids.filtered(lambda m: m.author_id == bot)
        self.assertIn("No checked answer", reply.body)
        self.assertIn("Entries (not checked):", reply.body)
        self.assertIn("pv-sv-01 · 2026-01", reply.body)
        self.assertNotIn(REFUSAL, reply.body)
