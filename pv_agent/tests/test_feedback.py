"""Thumbs up/down and correction suggestions from the panel; the managers' review and the clerk
hearing back from PV-Agent in Discuss."""
from odoo.exceptions import AccessError, UserError
from odoo.tests import tagged

from .common import PvAgentCase

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."


@tagged("post_install", "-at_install")
class TestFeedback(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.Feedback = cls.env["pv_agent.feedback"]
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.answer = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD).answer_id
        self.entry = self.Entry.search([("entry_id", "=", "pv-sv-01")])

    def bot_messages_to(self, user):
        channels = self.env["discuss.channel"].search([("channel_type", "=", "chat")]).filtered(
            lambda c: set(c.channel_member_ids.partner_id.ids) == {user.partner_id.id, self.bot.id})
        return channels.message_ids.filtered(lambda m: m.author_id == self.bot)

    def test_vote_up_down_and_take_back(self):
        answer = self.answer.with_user(self.clerk)
        self.assertEqual(answer.action_vote("up"), "up")
        self.assertEqual(answer._panel_dict()["vote"], "up")
        answer.action_vote("down")
        votes = self.Feedback.search([("message_id", "=", self.answer.id)])
        self.assertEqual(votes.mapped("kind"), ["down"], "one vote per clerk and answer")
        self.assertEqual(votes.state, "new", "a thumbs down waits for review")
        answer.action_vote(False)
        self.assertFalse(self.Feedback.search([("message_id", "=", self.answer.id)]))
        with self.assertRaises(AccessError):
            self.answer.with_user(self.clerk2).action_vote("down")  # not their conversation
        with self.assertRaises(AccessError):
            self.answer.question_id.with_user(self.clerk).action_vote("down")  # a question, not an answer

    def test_correction_is_queued_for_managers(self):
        answer = self.answer.with_user(self.clerk)
        with self.assertRaises(UserError):
            answer.action_suggest_correction(self.entry.id, "   ")
        with self.assertRaises(UserError):
            answer.action_suggest_correction(0, "Der Wert ist falsch.")
        feedback = self.Feedback.browse(answer.action_suggest_correction(self.entry.id, "Die Grenze 2026 ist 551,10 €."))
        self.assertEqual((feedback.kind, feedback.state, feedback.entry_id, feedback.user_id),
                         ("correction", "new", self.entry, self.clerk))
        self.assertEqual(feedback.question, "Wie hoch ist die Geringfügigkeitsgrenze 2026?")
        self.assertIn("551,10", feedback.answer_html)
        self.assertIn("Geringfügigkeitsgrenze", feedback.cited_html)
        # the clerk sees their own feedback, not others'; managers see all; nobody else
        self.assertEqual(self.Feedback.with_user(self.clerk).search([]), feedback)
        self.assertFalse(self.Feedback.with_user(self.clerk2).search([]))
        self.assertEqual(self.Feedback.with_user(self.manager).search([]), feedback)
        with self.assertRaises(AccessError):
            self.Feedback.with_user(self.outsider).search([])
        with self.assertRaises(AccessError):
            feedback.with_user(self.clerk).action_accept()

    def test_accept_opens_the_entry_and_tells_the_clerk(self):
        feedback = self.Feedback.browse(
            self.answer.with_user(self.clerk).action_suggest_correction(self.entry.id, "Bitte 2027 ergänzen."))
        action = feedback.with_user(self.manager).action_accept()
        self.assertEqual((action["res_model"], action["res_id"]), ("pv_agent.entry", self.entry.id))
        self.assertEqual((feedback.state, feedback.reviewer_id), ("accepted", self.manager))
        told = self.bot_messages_to(self.clerk)
        self.assertEqual(len(told), 1)
        self.assertIn("[pv-sv-01]", told.body)
        self.assertIn("übernommen", told.body)  # in the clerk's language
        with self.assertRaises(UserError):
            feedback.with_user(self.manager).action_reject()  # reviewed already

    def test_reject_a_thumbs_down_with_a_note(self):
        self.answer.with_user(self.clerk).action_vote("down")
        feedback = self.Feedback.search([("message_id", "=", self.answer.id)])
        feedback.with_user(self.manager).review_note = "Die Antwort stimmt, siehe [pv-sv-01]."
        feedback.with_user(self.manager).action_reject()
        self.assertEqual(feedback.state, "rejected")
        told = self.bot_messages_to(self.clerk)
        self.assertIn("abgelehnt", told.body)
        self.assertIn("Die Antwort stimmt", told.body)
        self.assertIn("Geringfügigkeitsgrenze 2026", told.body)

    def test_a_reviewed_vote_stays_when_the_clerk_votes_again(self):
        self.answer.with_user(self.clerk).action_vote("down")
        reviewed = self.Feedback.search([("message_id", "=", self.answer.id)])
        reviewed.with_user(self.manager).action_reject()
        self.answer.with_user(self.clerk).action_vote("up")
        self.assertTrue(reviewed.exists())
        self.assertEqual(self.answer.with_user(self.clerk)._panel_dict()["vote"], "up")
