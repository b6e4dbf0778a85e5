"""PV-Agent in Discuss and in a record's chatter: routed into the same answering job, posted back
as PV-Agent, only for users in the group, and only the question text reaches the model."""
import json
from unittest.mock import patch

from markupsafe import Markup

from odoo.tests import new_test_user, tagged

from .common import PvAgentCase

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."


@tagged("post_install", "-at_install")
class TestBotRouting(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.Message = cls.env["pv_agent.message"]
        # chatter: posting on a contact needs the right to edit contacts
        cls.clerk = new_test_user(cls.env, "pv_clerk_contacts", name="Carla Contacts",
                                  groups="pv_agent.group_user,base.group_partner_manager")
        cls.outsider = new_test_user(cls.env, "pv_outsider_contacts", name="Olga Outsider",
                                     groups="base.group_user,base.group_partner_manager")
        cls.record = cls.env["res.partner"].create({
            "name": "Anna Angestellte", "email": "anna@example.com", "street": "Lohngasse 7",
            "comment": "Gehalt 3.100 € brutto, SV-Nr. 1234 010190",
        })

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.ollama.requests.clear()

    def chat_with_bot(self, user):
        return self.env["discuss.channel"].with_user(user)._get_or_create_chat([self.bot.id])

    def mention(self):
        return Markup('<a href="/odoo/res.partner/%s" class="o_mail_redirect" data-oe-id="%s" '
                      'data-oe-model="res.partner" target="_blank">@PV-Agent</a> ') % (self.bot.id, self.bot.id)

    def bot_posts(self, record):
        return record.message_ids.filtered(lambda m: m.author_id == self.bot)

    def pv_questions(self):
        return self.Message.search([("role", "=", "question")])

    # -- Discuss ---------------------------------------------------------------------------
    def test_discuss_chat_is_answered_through_the_job(self):
        channel = self.chat_with_bot(self.clerk)
        self.ollama.script(GOOD)
        channel.with_user(self.clerk).message_post(
            body="Wie hoch ist die Geringfügigkeitsgrenze 2026?", message_type="comment",
            subtype_xmlid="mail.mt_comment")
        question = self.pv_questions()
        self.assertEqual(len(question), 1)
        self.assertEqual((question.state, question.source, question.author_id), ("pending", "discuss", self.clerk))
        self.assertEqual(question.conversation_id.origin_model, "discuss.channel")
        self.assertEqual(question.conversation_id.origin_res_id, channel.id)
        # in the user's request: the sources found (no model yet), labelled as not the answer
        [early] = self.bot_posts(channel)
        self.assertIn("Sources found – answer in progress", early.body)
        self.assertIn("[pv-sv-01] Geringfügigkeitsgrenze · 2026-01", early.body)
        self.assertIn("551,10", early.body, "with the key line that matched")
        self.assertEqual(question.post_message_id, early)
        self.assertFalse(self.ollama.requests_to("/api/chat"))

        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        reply = self.bot_posts(channel)
        self.assertEqual(reply, early, "one message: the sources were edited into the answer")
        self.assertNotIn("Sources found", reply.body)
        self.assertEqual(reply.message_type, "comment")
        self.assertIn("551,10", reply.body)
        self.assertIn(f'/odoo/pv_agent.entry/{self.Entry.search([("entry_id", "=", "pv-sv-01")]).id}', reply.body)
        self.assertIn("pv-sv-01 · 2026-01", reply.body)
        self.assertIn("Answered", reply.body)  # the state line
        self.assertEqual(question.answer_id.state, "answered")
        # a follow-up in the same chat goes into the same conversation, and the bot's own post
        # did not trigger another question
        self.assertEqual(len(self.pv_questions()), 1)
        channel.with_user(self.clerk).message_post(body="Und 2025?", message_type="comment",
                                                   subtype_xmlid="mail.mt_comment")
        self.assertEqual(self.pv_questions()[0].conversation_id, question.conversation_id)

    def test_discuss_without_the_group_gets_no_reply(self):
        channel = self.chat_with_bot(self.outsider)
        channel.with_user(self.outsider).message_post(body="Wie hoch ist die Geringfügigkeitsgrenze?",
                                                      message_type="comment", subtype_xmlid="mail.mt_comment")
        self.assertFalse(self.pv_questions())
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertFalse(self.bot_posts(channel))

    def test_other_chats_and_notifications_are_ignored(self):
        chat = self.env["discuss.channel"].with_user(self.clerk)._get_or_create_chat([self.clerk2.partner_id.id])
        chat.with_user(self.clerk).message_post(body="Wie hoch ist die Geringfügigkeitsgrenze?",
                                                message_type="comment", subtype_xmlid="mail.mt_comment")
        self.record.with_user(self.clerk).message_post(body="Wie hoch ist die Geringfügigkeitsgrenze?",
                                                       message_type="comment", subtype_xmlid="mail.mt_note")
        bot_chat = self.chat_with_bot(self.clerk)
        bot_chat.with_user(self.clerk).message_post(body="Systemnachricht", message_type="notification")
        self.assertFalse(self.pv_questions())

    def test_failure_is_posted_back(self):
        channel = self.chat_with_bot(self.clerk)
        channel.with_user(self.clerk).message_post(body="Wie hoch ist die Geringfügigkeitsgrenze 2026?",
                                                   message_type="comment", subtype_xmlid="mail.mt_comment")
        with patch("odoo.addons.pv_agent.engine.answer.ask.ask", side_effect=RuntimeError("Index kaputt")), \
                self.assertLogs("odoo.addons.pv_agent.models.pv_agent_message", "ERROR"):
            self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        reply = self.bot_posts(channel)
        self.assertEqual(len(reply), 1)
        self.assertIn("could not be answered", reply.body)
        self.assertNotIn("Index kaputt", reply.body, "the reason stays in the panel, not in a shared thread")

    # -- chatter ---------------------------------------------------------------------------
    def test_mention_in_chatter_posts_an_internal_note(self):
        self.ollama.script(GOOD)
        self.record.with_user(self.clerk).message_post(
            body=self.mention() + Markup("wie hoch ist die Geringfügigkeitsgrenze 2026?"),
            message_type="comment", subtype_xmlid="mail.mt_note", partner_ids=[self.bot.id])
        question = self.pv_questions()
        self.assertEqual(question.body, "wie hoch ist die Geringfügigkeitsgrenze 2026?")
        self.assertEqual(question.source, "chatter")
        self.assertEqual((question.conversation_id.origin_model, question.conversation_id.origin_res_id),
                         ("res.partner", self.record.id))
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        note = self.bot_posts(self.record)
        self.assertEqual(len(note), 1)
        self.assertTrue(note.subtype_id.internal, "posted as an internal note")
        self.assertEqual(note.subtype_id, self.env.ref("mail.mt_note"))
        # the record's readers need not be in the PV-Agent group (issue 29): a pointer, the answer in the panel
        self.assertNotIn("551,10", note.body)
        self.assertIn("PV-Agent panel", note.body)
        self.assertEqual(question.answer_id.state, "answered")
        # the record's own data never reached the model: only the question text did
        sent = json.dumps(self.ollama.requests, ensure_ascii=False)
        for private in ("Anna Angestellte", "anna@example.com", "Lohngasse", "3.100", "1234 010190", "PV-Agent"):
            self.assertNotIn(private, sent)
        self.assertIn("wie hoch ist die Geringfügigkeitsgrenze 2026?", sent)
        # the mention did not try to e-mail the bot
        self.assertFalse(self.env["mail.notification"].search([("res_partner_id", "=", self.bot.id)]))

    def test_mention_by_user_without_group_gets_no_note(self):
        self.record.with_user(self.outsider).message_post(
            body=self.mention() + Markup("Wie hoch ist die Geringfügigkeitsgrenze?"),
            message_type="comment", subtype_xmlid="mail.mt_note", partner_ids=[self.bot.id])
        self.assertFalse(self.pv_questions())
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertFalse(self.bot_posts(self.record))

    def test_question_text_without_the_mention(self):
        Bot = self.env["pv_agent.bot"]
        self.assertEqual(Bot._question_text(self.mention() + Markup("<b>Was</b> ist das <i>Jahressechstel</i>?"), self.bot),
                         "Was ist das Jahressechstel?")
        self.assertEqual(Bot._question_text(Markup("<p>@PV-Agent Was gilt 2026?</p>"), self.bot), "Was gilt 2026?")
        self.assertEqual(Bot._question_text(self.mention(), self.bot), "")

    def test_panel_questions_are_not_posted_anywhere(self):
        question = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD)
        self.assertEqual(question.source, "panel")
        self.assertFalse(self.env["mail.message"].search([("author_id", "=", self.bot.id)]))
