"""Reusing a verified answer (issue 31, item 3): an identical prompt costs no model call, the
reused answer is labelled and linked, a changed entry or "Neu beantworten" goes to the model,
only checked verdicts are kept, the store is bounded and only managers read it."""
import json
from datetime import timedelta

from odoo import fields
from odoo.exceptions import AccessError
from odoo.tests import tagged

from .common import PvAgentCase
from .ollama_api_server import Reply

QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"
GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
GOOD_AGAIN = "Die Geringfügigkeitsgrenze 2026 liegt bei 551,10 € im Monat (Stand 2026-01) [pv-sv-01]."
UNSUPPORTED = "Die Geringfügigkeitsgrenze beträgt monatlich 612,40 € (Stand 2026-01) [pv-sv-01]."
REFUSAL = "Dazu enthält die Wissensbasis keine Aussage."


@tagged("post_install", "-at_install")
class TestReuse(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.Cache = cls.env["pv_agent.answer.cache"].sudo()
        cls.Message = cls.env["pv_agent.message"]

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.ollama.requests.clear()

    def chats(self):
        return len(self.ollama.requests_to("/api/chat"))

    def answer(self, user, question=QUESTION, *replies):
        return self.ask_as(user, question, *replies).answer_id

    def panel_answer(self, user, answer):
        conv = self.env["pv_agent.conversation"].with_user(user).with_context(lang=user.lang).panel_load(
            conversation_id=answer.conversation_id.id)["conversation"]
        return next(m for m in conv["messages"] if m["id"] == answer.id)

    # -- a hit ---------------------------------------------------------------------------------
    def test_two_clerks_asking_the_same_question_cost_one_model_call(self):
        first = self.answer(self.clerk, QUESTION, GOOD)
        self.assertEqual((first.state, self.chats()), ("answered", 1))
        kept = self.Cache.search([])
        self.assertEqual((len(kept), kept.answer_id, kept.state), (1, first, "answered"))
        self.assertEqual(kept.key, json.loads(first.answer_json)["prompt_key"])

        second = self.answer(self.clerk2, QUESTION)  # nothing scripted: a model call would fail the question
        self.assertEqual(self.chats(), 1, "the identical prompt reached the model")
        self.assertEqual((second.state, second.body), ("answered", GOOD))
        self.assertEqual(second.citation_entry_ids, first.citation_entry_ids)
        # the audit trail names the stored answer it reused
        self.assertEqual(second.sudo().reused_from_id, first)
        trail = json.loads(second.answer_json)
        self.assertEqual(trail["reused"]["key"], kept.key)
        self.assertEqual(trail["reused"]["from"]["answer_id"], first.id)
        self.assertEqual(trail["llm_calls"], 0)
        # its own fingerprints, so the drift check covers it too
        self.assertEqual(sorted(second.source_ids.mapped("chunk_hash")), sorted(first.source_ids.mapped("chunk_hash")))
        self.assertTrue(second.source_ids)
        self.assertEqual(kept.use_count, 1)
        # labelled in the panel; the original is another clerk's: the date only, no link
        shown = self.panel_answer(self.clerk2, second)
        date = fields.Date.to_date(kept.answered_at).strftime("%m/%d/%Y")
        self.assertEqual(shown["reused"], {"label": f"Already checked answer of {date}", "answer_id": False})
        self.assertFalse(self.panel_answer(self.clerk, first)["reused"])
        # the clerk who asked first gets her own answer linked, in German
        third = self.answer(self.clerk, QUESTION)
        self.assertEqual(self.chats(), 1)
        german = fields.Date.to_date(kept.answered_at).strftime("%d.%m.%Y")
        self.assertEqual(self.panel_answer(self.clerk, third)["reused"],
                         {"label": f"Bereits geprüfte Antwort vom {german}", "answer_id": first.id})
        self.assertEqual(kept.use_count, 2)

    def test_a_repeated_question_is_answered_in_the_asking_request(self):
        first = self.answer(self.clerk, QUESTION, GOOD)
        asked = self.env["pv_agent.conversation"].with_user(self.clerk2).action_ask(QUESTION)  # no job run
        question = self.Message.browse(asked["message_id"])
        self.assertEqual((asked["state"], question.state), ("done", "done"))
        self.assertEqual(question.answer_id.body, GOOD)
        self.assertEqual(question.answer_id.sudo().reused_from_id, first)
        self.assertTrue(asked["sources"], "the sources are still shown")
        self.assertEqual(self.chats(), 1)
        self.assertEqual(self.Cache.search([]).use_count, 1)

    def test_a_new_question_waits_for_the_job_and_its_request_asks_no_model(self):
        asked = self.env["pv_agent.conversation"].with_user(self.clerk).action_ask(QUESTION)
        self.assertEqual(asked["state"], "pending")
        self.assertEqual(self.chats(), 0, "the asking request called the language model")
        self.ollama.script(GOOD)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(self.Message.browse(asked["message_id"]).answer_id.state, "answered")

    def test_answer_fresh_is_not_taken_from_the_store_in_its_request(self):
        self.answer(self.clerk, QUESTION, GOOD)
        reused = self.answer(self.clerk2, QUESTION)
        asked = reused.with_user(self.clerk2).action_answer_fresh()
        question = self.Message.browse(asked["message_id"])
        self.assertEqual((question.state, question.answer_fresh), ("pending", True))
        self.assertEqual(self.chats(), 1)

    def test_discuss_shows_the_label(self):
        self.answer(self.clerk, QUESTION, GOOD)
        bot = self.env.ref("pv_agent.partner_pv_agent")
        channel = self.env["discuss.channel"].with_user(self.clerk2)._get_or_create_chat([bot.id])
        channel.with_user(self.clerk2).message_post(body=QUESTION, message_type="comment",
                                                    subtype_xmlid="mail.mt_comment")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(self.chats(), 1)
        reply = channel.message_ids.filtered(lambda m: m.author_id == bot)
        self.assertEqual(len(reply), 1)
        self.assertIn("Already checked answer of", reply.body)
        self.assertIn("551,10", reply.body)
        self.assertNotIn("/odoo/pv_agent.message/", reply.body, "another clerk's answer is not linked")

    # -- what sends a question to the model again ----------------------------------------------
    def test_a_changed_cited_entry_sends_the_identical_question_to_the_model(self):
        first = self.answer(self.clerk, QUESTION, GOOD)
        entry = self.Entry.search([("entry_id", "=", "pv-sv-01")])
        entry.with_user(self.manager).body = entry.body.replace(
            "| Geringfügigkeitsgrenze monatlich | 551,10 € | 551,10 € |",
            "| Geringfügigkeitsgrenze monatlich | 551,10 € | 556,81 € |")
        self.reindex()
        self.ollama.requests.clear()
        again = self.answer(self.clerk2, QUESTION,
                            "Die Geringfügigkeitsgrenze beträgt 2026 monatlich 556,81 € (Stand 2026-01) [pv-sv-01].")
        self.assertEqual(self.chats(), 1, "the changed entry's question was answered from the store")
        self.assertEqual(again.state, "answered")
        self.assertFalse(again.sudo().reused_from_id)
        self.assertNotIn("reused", json.loads(again.answer_json))
        self.assertEqual(len(self.Cache.search([])), 2, "a new key beside the old one (which no prompt hits any more)")

    def test_an_answer_built_on_an_entry_gone_from_the_index_is_not_served(self):
        """PV-Agent has no per-entry read restrictions (every clerk reads every entry); what a clerk's
        context may hold changes when an entry leaves the knowledge base. The stored answer built on
        it is not served: the context, and so the key, differ."""
        self.answer(self.clerk, QUESTION, GOOD)
        self.Entry.search([("entry_id", "=", "pv-sv-01")]).with_user(self.manager).action_archive()
        self.reindex()
        self.ollama.requests.clear()
        self.ollama.default_reply = Reply(REFUSAL)
        later = self.answer(self.clerk2, QUESTION)
        self.assertFalse(later.sudo().reused_from_id)
        self.assertNotIn("pv-sv-01", later.citation_entry_ids.mapped("entry_id"))
        self.assertNotIn("551,10", later.body)

    def test_answer_again_bypasses_the_store_and_replaces_its_entry(self):
        first = self.answer(self.clerk, QUESTION, GOOD)
        reused = self.answer(self.clerk2, QUESTION)
        self.assertEqual(self.chats(), 1)
        asked = reused.with_user(self.clerk2).action_answer_fresh()
        fresh_question = self.Message.browse(asked["message_id"])
        self.assertTrue(fresh_question.answer_fresh)
        self.assertEqual(fresh_question.reask_of_id, reused)
        self.ollama.script(GOOD_AGAIN)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        fresh = fresh_question.answer_id
        self.assertEqual(self.chats(), 2, "Neu beantworten went to the model")
        self.assertEqual((fresh.state, fresh.body), ("answered", GOOD_AGAIN))
        self.assertFalse(fresh.sudo().reused_from_id)
        kept = self.Cache.search([])
        self.assertEqual(len(kept), 1)
        self.assertEqual((kept.answer_id, kept.use_count), (fresh, 0), "the fresh verdict replaced the stored one")
        self.assertTrue(self.panel_answer(self.clerk2, reused)["reasked"])
        # the next identical question gets the fresh verdict
        later = self.answer(self.clerk, QUESTION)
        self.assertEqual((self.chats(), later.body, later.sudo().reused_from_id), (2, GOOD_AGAIN, fresh))
        self.assertNotEqual(first, fresh)
        # only the clerk who got an answer may ask it fresh
        with self.assertRaises(AccessError):
            reused.with_user(self.clerk).action_answer_fresh()

    def test_answer_again_that_is_no_checked_verdict_removes_the_entry(self):
        self.answer(self.clerk, QUESTION, GOOD)
        reused = self.answer(self.clerk2, QUESTION)
        asked = reused.with_user(self.clerk2).action_answer_fresh()
        self.ollama.script(UNSUPPORTED, UNSUPPORTED)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(self.Message.browse(asked["message_id"]).answer_id.state, "uncertain")
        self.assertFalse(self.Cache.search([]))

    # -- what is kept ----------------------------------------------------------------------------
    def test_a_refusal_of_the_model_is_reused(self):
        first = self.answer(self.clerk, QUESTION, REFUSAL)
        self.assertEqual(first.state, "unanswered")  # the model refused a covered question
        second = self.answer(self.clerk2, QUESTION)
        self.assertEqual((self.chats(), second.state, second.sudo().reused_from_id), (1, "unanswered", first))
        self.assertEqual(json.loads(second.answer_json)["drafts"], [REFUSAL])
        self.assertTrue(second.source_ids)

    def test_an_uncertain_answer_is_not_kept(self):
        first = self.answer(self.clerk, QUESTION, UNSUPPORTED, UNSUPPORTED)
        self.assertEqual((first.state, self.chats()), ("uncertain", 2))
        self.assertFalse(self.Cache.search([]))
        second = self.answer(self.clerk2, QUESTION, UNSUPPORTED, UNSUPPORTED)
        self.assertEqual((second.state, self.chats()), ("uncertain", 4), "an uncertain answer was reused")

    def test_sources_only_is_not_kept(self):
        self.ollama.script(Reply(status=500, error="kaputt"))
        first = self.answer(self.clerk, QUESTION)
        self.assertEqual(first.state, "sources_only")
        self.assertFalse(self.Cache.search([]))

    def test_the_store_never_grows_beyond_its_limit(self):
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.answer_cache_size", "2")
        self.ollama.default_reply = Reply(GOOD)
        questions = ["Wie hoch ist die Geringfügigkeitsgrenze 2026?", "Geringfügigkeitsgrenze 2026 monatlich?",
                     "Was ist die Geringfügigkeitsgrenze 2026?", "Geringfügigkeitsgrenze 2026?",
                     "Geringfügigkeitsgrenze monatlich 2026?"]
        answers = []
        for n, question in enumerate(questions[:4]):
            answers.append(self.answer(self.clerk, question))
            self.assertLessEqual(len(self.Cache.search([])), 2, f"after {n + 1} answers")
        self.assertEqual(self.chats(), 4, "four different prompts")
        self.assertEqual(self.Cache.search([]).answer_id, answers[2] | answers[3], "the oldest went first")
        # a reuse counts as a use: the reused entry stays, the least recently used goes
        now = fields.Datetime.now()
        self.Cache.search([("answer_id", "=", answers[2].id)]).last_used = now - timedelta(minutes=10)
        self.Cache.search([("answer_id", "=", answers[3].id)]).last_used = now - timedelta(minutes=5)
        reused = self.answer(self.clerk2, questions[2])
        self.assertEqual((self.chats(), reused.sudo().reused_from_id), (4, answers[2]))
        answers.append(self.answer(self.clerk2, questions[4]))
        self.assertEqual(self.chats(), 5)
        self.assertEqual(self.Cache.search([]).answer_id, answers[2] | answers[4])
        # 0 turns reuse off
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.answer_cache_size", "0")
        self.answer(self.clerk2, questions[2])
        self.assertEqual(self.chats(), 6)

    # -- who reads it --------------------------------------------------------------------------
    def test_only_managers_read_the_store(self):
        self.answer(self.clerk, QUESTION, GOOD)
        for user in (self.clerk, self.clerk2, self.outsider):
            with self.subTest(user=user.login), self.assertRaises(AccessError):
                self.env["pv_agent.answer.cache"].with_user(user).search_read([], ["question", "answer_json"])
        self.assertEqual(self.env["pv_agent.answer.cache"].with_user(self.manager).search_count([]), 1)
        with self.assertRaises(AccessError):
            self.env["pv_agent.answer.cache"].with_user(self.manager).search([]).write({"state": "refused"})
        # and a clerk does not see which of her colleagues' answers hers was taken from
        second = self.answer(self.clerk2, QUESTION)
        with self.assertRaises(AccessError):
            second.with_user(self.clerk2).read(["reused_from_id"])

    def test_deleting_ones_history_takes_the_stored_answers_along(self):
        first = self.answer(self.clerk, QUESTION, GOOD)
        second = self.answer(self.clerk2, QUESTION)
        self.env["pv_agent.conversation"].with_user(self.clerk).action_delete_my_history()
        self.assertFalse(first.exists())
        self.assertFalse(self.Cache.search([]), "the deleted answer is no longer served")
        shown = self.panel_answer(self.clerk2, second)
        self.assertTrue(shown["reused"]["label"].startswith("Already checked answer of"))
        self.assertFalse(shown["reused"]["answer_id"])
        third = self.answer(self.clerk2, QUESTION, GOOD)
        self.assertEqual((self.chats(), third.sudo().reused_from_id.id), (2, False))
