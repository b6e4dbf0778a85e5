"""Sources first, progress over the bus, cancel (issue 31): the sources are found in the asking
request, before any answer worker ran; the job pushes each step; the clerk — only the clerk —
cancels a waiting question at once and a running one before its next model call."""
import json
from unittest.mock import patch

from odoo import api
from odoo.exceptions import AccessError
from odoo.tests import tagged

from odoo.addons.pv_agent.engine.llm_clients.ollama import OllamaClient  # the class the job's engine uses
from odoo.addons.pv_agent.services import engine_calls, index_access
from .common import PvAgentCase
from .ollama_api_server import Reply

QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"
GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
BAD_FIGURE = "Die Geringfügigkeitsgrenze beträgt monatlich 600,00 € (Stand 2026-01) [pv-sv-01]."


@tagged("post_install", "-at_install")
class TestProgress(PvAgentCase):
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

    def pushes(self, user, progress=True):
        self.env.cr.precommit.run()  # the request's pushes are written when it commits
        channel = json.dumps([self.env.cr.dbname, "res.partner", user.partner_id.id], separators=(",", ":"))
        notes = self.env["bus.bus"].sudo().search([("channel", "=", channel)], order="id")
        payloads = [json.loads(n.message)["payload"] for n in notes if json.loads(n.message)["type"] == "pv_agent/answer"]
        return [p for p in payloads if ("progress" in p) == progress]

    def ask(self, user=None, question=QUESTION):
        asked = self.Conversation.with_user(user or self.clerk).action_ask(question)
        self.env.cr.precommit.run()  # the request commits: its pushes are written now
        return asked, self.Message.browse(asked["message_id"])

    # -- sources first ---------------------------------------------------------------------
    def test_action_ask_returns_and_stores_the_sources_before_any_cron_ran(self):
        asked, question = self.ask()
        self.assertEqual(question.state, "pending", "no answer worker has run")
        self.assertFalse(self.ollama.requests_to("/api/chat"), "the sources need no language model")
        first = asked["sources"][0]
        entry = self.Entry.search([("entry_id", "=", "pv-sv-01")])
        self.assertEqual((first["id"], first["title"], first["stand"], first["record_id"]),
                         ("pv-sv-01", "Geringfügigkeitsgrenze", "2026-01", entry.id))
        self.assertIn("551,10", first["line"], "the key line that matched")
        self.assertEqual(asked["queue_position"], 1)
        stored = json.loads(question.sources_json)
        self.assertEqual([s["id"] for s in stored], [s["id"] for s in asked["sources"]])
        self.assertEqual(question.progress, "queued")
        # pushed over the bus, and what the panel reads
        [push] = self.pushes(self.clerk)
        self.assertEqual((push["question_id"], push["progress"]["stage"], push["progress"]["queue_position"]),
                         (question.id, "queued", 1))
        self.assertEqual(push["progress"]["sources"][0]["id"], "pv-sv-01")
        panel = question.with_user(self.clerk)._panel_dict()
        self.assertEqual((panel["progress"], panel["queue_position"]), ("queued", 1))
        self.assertEqual(panel["sources"][0]["record_id"], entry.id)

    def test_a_second_waiting_question_knows_its_place(self):
        self.ask()
        asked, _question = self.ask(user=self.clerk2)
        self.assertEqual(asked["queue_position"], 2)

    def test_no_sources_never_fail_the_ask(self):
        with patch.object(engine_calls, "find_sources", side_effect=RuntimeError("kaputt")), \
                self.assertLogs("odoo.addons.pv_agent.models.pv_agent_message", "WARNING"):
            asked, question = self.ask()
        self.assertEqual((asked["state"], asked["sources"]), ("pending", []))
        self.assertFalse(question.sources_json)
        index_access.forget_indexes()
        import os
        os.remove(self.sidecar)
        asked, question = self.ask(user=self.clerk2)
        self.assertEqual((asked["state"], asked["sources"]), ("pending", []))

    def test_off_topic_question_has_no_sources(self):
        asked, _question = self.ask(question="Hallo!")
        self.assertEqual(asked["sources"], [])

    # -- progress through the bus ----------------------------------------------------------
    def test_the_job_pushes_each_step_then_the_answer(self):
        self.ollama.script(BAD_FIGURE, GOOD)
        _asked, question = self.ask()
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.answer_id.state, "answered_after_retry", question.answer_id.answer_json)
        stages = [(p["progress"]["stage"], p["progress"]["detail"]) for p in self.pushes(self.clerk)]
        self.assertEqual(stages, [("queued", ""), ("sources", ""), ("writing", ""), ("checking", ""),
                                  ("rewriting", "zweiter Versuch: 1 Zahl nicht belegt"), ("checking", "")])
        [final] = self.pushes(self.clerk, progress=False)
        self.assertEqual((final["question_state"], final["answer_id"]), ("done", question.answer_id.id))
        self.assertEqual(question.progress, "done")
        self.assertEqual(json.loads(question.sources_json)[0]["id"], "pv-sv-01", "the sources the job really used")
        self.assertFalse(self.pushes(self.clerk2), "nobody else is told")

    def test_waiting_questions_move_up_when_one_is_taken(self):
        self.ollama.script(GOOD, GOOD)
        self.ask()
        self.ask(user=self.clerk2)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        places = [p["progress"]["queue_position"] for p in self.pushes(self.clerk2) if p["progress"]["queue_position"]]
        self.assertEqual(places, [2, 1], "told it moved up when the first question was taken")

    # -- cancel ----------------------------------------------------------------------------
    def test_cancel_while_queued_ends_at_once_and_costs_no_model_call(self):
        self.ollama.script(GOOD)
        _asked, question = self.ask()
        _asked2, behind = self.ask(user=self.clerk2)
        self.assertEqual(question.with_user(self.clerk).action_cancel(), [question.id])
        self.assertEqual((question.state, question.progress, question.cancel_requested), ("cancelled", "cancelled", True))
        self.assertEqual(question.cancelled_by_id, self.clerk)
        self.assertRegex(question.error, r"^Abgebrochen von Clara Clerk um \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
        final = self.pushes(self.clerk, progress=False)[-1]
        self.assertEqual(final["question_state"], "cancelled")
        self.assertEqual(self.pushes(self.clerk2)[-1]["progress"]["queue_position"], 1, "the next one moves up")
        self.ollama.requests.clear()
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.state, "cancelled")
        self.assertFalse(question.answer_id)
        self.assertEqual(behind.state, "done", "the others are answered")
        self.assertEqual(len(self.ollama.requests_to("/api/chat")), 1)
        panel = question.with_user(self.clerk)._panel_dict()
        self.assertEqual((panel["state"], panel["pending"]), ("cancelled", False))
        # asked again, it is answered
        self.ollama.script(GOOD)
        question.with_user(self.clerk).action_retry()
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.answer_id.state, "answered")

    def test_cancel_while_the_model_writes_stops_before_the_next_model_call(self):
        # the first draft needs a second attempt; the clerk cancels while the (slow) model writes it
        self.ollama.script(Reply(content=BAD_FIGURE, delay=1.0), GOOD)
        _asked, question = self.ask()
        registry, clerk, question_id = self.registry, self.clerk, question.id
        chat = OllamaClient.chat

        def chat_while_the_clerk_cancels(client, *args, **kwargs):
            result = chat(client, *args, **kwargs)  # the model writes for a second …
            # … meanwhile the clerk pressed "Abbrechen": their own request, their own transaction
            with registry.cursor() as cr:
                api.Environment(cr, clerk.id, {"lang": clerk.lang})["pv_agent.message"].browse(question_id).action_cancel()
            return result

        with patch.object(OllamaClient, "chat", chat_while_the_clerk_cancels):
            self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(len(self.ollama.requests_to("/api/chat")), 1, "no second attempt was sent")
        self.assertEqual((question.state, question.progress), ("cancelled", "cancelled"))
        self.assertFalse(question.answer_id, "no answer stored")
        self.assertEqual(question.cancelled_by_id, self.clerk)
        self.assertRegex(question.error, r"^Abgebrochen von Clara Clerk um ")
        stages = [(p["progress"]["stage"], p["progress"]["cancel_requested"]) for p in self.pushes(self.clerk)]
        self.assertEqual(stages, [("queued", False), ("sources", False), ("writing", False),
                                  ("writing", True),  # the cancel, told to the clerk's other tabs at once
                                  ("checking", True), ("rewriting", True)])
        self.assertEqual(self.pushes(self.clerk, progress=False)[-1]["question_state"], "cancelled")
        # nothing of it is left: not running, nothing pending, a further run sends nothing
        self.assertFalse(self.Message.search([("state", "in", ("pending", "running"))]))
        self.ollama.requests.clear()
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertFalse(self.ollama.requests)
        self.assertEqual(question.state, "cancelled")

    def test_cancel_during_the_last_model_call_stores_no_answer(self):
        self.ollama.script(Reply(content=GOOD, delay=0.5))  # a good draft: no further model call follows
        _asked, question = self.ask()
        registry, clerk, question_id = self.registry, self.clerk, question.id
        chat = OllamaClient.chat

        def chat_while_the_clerk_cancels(client, *args, **kwargs):
            result = chat(client, *args, **kwargs)
            with registry.cursor() as cr:
                api.Environment(cr, clerk.id, {"lang": clerk.lang})["pv_agent.message"].browse(question_id).action_cancel()
            return result

        with patch.object(OllamaClient, "chat", chat_while_the_clerk_cancels):
            self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(len(self.ollama.requests_to("/api/chat")), 1)
        self.assertEqual(question.state, "cancelled")
        self.assertFalse(question.answer_id, "the clerk cancelled: the answer is dropped, not shown")
        self.assertEqual(self.pushes(self.clerk, progress=False)[-1]["question_state"], "cancelled")

    def test_only_the_asker_may_cancel(self):
        _asked, question = self.ask()
        for user in (self.clerk2, self.manager):
            with self.subTest(user=user.login), self.assertRaises(AccessError):
                question.with_user(user).action_cancel()
        self.assertEqual((question.state, question.cancel_requested), ("pending", False))
        with self.assertRaises(AccessError):
            question.with_user(self.outsider).action_cancel()

    def test_cancel_of_an_answered_question_changes_nothing(self):
        self.ollama.script(GOOD)
        _asked, question = self.ask()
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.with_user(self.clerk).action_cancel(), [])
        self.assertEqual((question.state, question.cancel_requested), ("done", False))
        self.assertEqual(question.answer_id.state, "answered")
