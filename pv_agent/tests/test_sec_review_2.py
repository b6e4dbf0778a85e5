"""The second outside review (issue 29, points 1–5), each finding reproduced as the clerk,
manager or internal user who would hit it: answers only where every reader may read them, the
bot's partner protected, fields and the audit trail closed to those who must not change them, a
per-user cap that holds under parallel requests (two real cursors), and the answering and
reindex jobs surviving Odoo's watchdog."""
from __future__ import annotations

import threading
import time
import types
from unittest.mock import patch

from markupsafe import Markup

from odoo import SUPERUSER_ID, api, fields as odoo_fields
from odoo.addons.base.models.ir_cron import MIN_TIME_PER_JOB, IrCron as BaseIrCron
from odoo.exceptions import AccessError, UserError
from odoo.service.model import retrying
from odoo.tests import TransactionCase, new_test_user, tagged
from odoo.tools import config

from ..services import odoo_settings
from .common import PvAgentCase
from .ollama_api_server import Reply

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"


class BotCase(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def mention(self, thread, user, subtype="mail.mt_comment"):
        thread.with_user(user).message_post(
            body=Markup('<a data-oe-model="res.partner" data-oe-id="%s">@PV-Agent</a> %s') % (self.bot.id, QUESTION),
            message_type="comment", subtype_xmlid=subtype, partner_ids=[self.bot.id])

    def bot_posts(self, thread):
        return thread.message_ids.filtered(lambda m: m.author_id == self.bot)

    def answer_in(self, thread, user):
        """The clerk's @PV-Agent in ``thread``, answered; PV-Agent's one post there."""
        self.ollama.script(GOOD)
        self.mention(thread, user)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        question = self.env["pv_agent.message"].search([("author_id", "=", user.id), ("role", "=", "question")],
                                                       order="id desc", limit=1)
        self.assertEqual(question.answer_id.state, "answered", "answered in the panel in every case")
        [post] = self.bot_posts(thread)
        return post


@tagged("post_install", "-at_install")
class TestAnswerAudience(BotCase):
    """Point 1: who may read the thread decides, not who is a member of it."""

    def channel(self, group, members=None):
        channel = self.env["discuss.channel"].sudo().create({"name": "Lohnteam", "channel_type": "channel",
                                                             "group_public_id": group.id if group else False})
        members = members or self.clerk | self.clerk2
        channel.add_members(partner_ids=members.partner_id.ids + [self.bot.id])
        return channel

    def test_channel_of_all_employees_gets_a_pointer(self):
        post = self.answer_in(self.channel(self.env.ref("base.group_user")), self.clerk)
        self.assertNotIn("551,10", post.body)

    def test_channel_for_pv_agent_managers_gets_the_answer(self):
        channel = self.channel(self.env.ref("pv_agent.group_manager"), members=self.manager | self.admin)
        post = self.answer_in(channel, self.manager)  # only managers read it
        self.assertIn("551,10", post.body)

    def test_sub_thread_is_read_by_the_parents_members(self):
        group_chat = self.env["discuss.channel"].sudo().create({"name": "Lohn & Empfang", "channel_type": "group"})
        group_chat.add_members(partner_ids=[self.clerk.partner_id.id, self.outsider.partner_id.id, self.bot.id])
        thread = group_chat.with_user(self.clerk)._create_sub_channel(name="Frage")
        thread.sudo().add_members(partner_ids=[self.bot.id])
        self.assertEqual(set(thread.sudo().channel_member_ids.partner_id.ids), {self.clerk.partner_id.id, self.bot.id})
        self.assertTrue(thread.with_user(self.outsider).has_access("read"), "the outsider reads the sub-thread")
        post = self.answer_in(thread, self.clerk)
        self.assertNotIn("551,10", post.body)

    def test_group_chat_of_clerks_gets_the_answer(self):
        group_chat = self.env["discuss.channel"].sudo().create({"name": "Lohnteam", "channel_type": "group"})
        group_chat.add_members(partner_ids=[self.clerk.partner_id.id, self.clerk2.partner_id.id, self.bot.id])
        self.assertIn("551,10", self.answer_in(group_chat, self.clerk).body)


@tagged("post_install", "-at_install")
class TestBotPartnerProtected(PvAgentCase):
    """Point 2: the bot's partner was an ordinary contact anybody with contact rights could
    rename ("Geschäftsführung") or delete (the bot fell silent)."""

    def test_users_with_contact_rights_cannot_rename_or_delete_pv_agent(self):
        bot = self.env.ref("pv_agent.partner_pv_agent")
        for login, groups in (("pv_contacts_clerk", "pv_agent.group_user,base.group_partner_manager"),
                              ("pv_contacts_other", "base.group_user,base.group_partner_manager")):
            user = new_test_user(self.env, login, groups=groups)
            with self.subTest(user=login):
                self.assertTrue(self.env["res.partner"].with_user(user).has_access("write"))
                with self.assertRaises(AccessError), self.env.cr.savepoint():
                    bot.with_user(user).write({"name": "Geschäftsführung"})
                with self.assertRaises(AccessError), self.env.cr.savepoint():
                    bot.with_user(user).unlink()
        self.assertEqual(bot.name, "PV-Agent")
        bot.with_user(self.admin).write({"comment": "Antwortet aus der Wissensbasis."})  # administrators may
        other = self.env["res.partner"].create({"name": "Gewöhnlicher Kontakt"})
        other.with_user(user).write({"name": "Umbenannt"})  # other contacts stay as they were
        self.assertEqual(other.name, "Umbenannt")


@tagged("post_install", "-at_install")
class TestFieldsAndAuditTrail(PvAgentCase):
    """Point 3: fields hidden only in the form, an audit trail managers could rewrite and delete,
    cited versions going with a deleted entry, no cap on correction suggestions."""

    PROTECTED = ("conflict_file_text", "conflict_file_hash", "import_hash", "path", "cited_count", "drifted_count")

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def test_clerk_cannot_read_manager_fields_over_rpc(self):
        entry = self.Entry.search([], limit=1).with_user(self.clerk)
        for name in self.PROTECTED:
            with self.subTest(field=name), self.assertRaises(AccessError):
                self.env.invalidate_all()
                entry.read([name])
        self.assertTrue(self.Entry.search([], limit=1).with_user(self.manager).read(list(self.PROTECTED)))
        # the clerk's views still open: every field they show is readable
        views = self.Entry.with_user(self.clerk).get_views([(False, "list"), (False, "form"), (False, "search")])
        shown = set(views["models"]["pv_agent.entry"]["fields"])
        self.assertFalse(shown & set(self.PROTECTED))
        entry.read(sorted(shown))

    def clerk_feedback(self):
        answer = self.ask_as(self.clerk, QUESTION, GOOD).answer_id
        answer.with_user(self.clerk).action_vote("down")
        answer.with_user(self.clerk).action_suggest_correction(answer.citation_entry_ids[:1].id, "Stand prüfen")
        return answer, self.env["pv_agent.feedback"].search([("user_id", "=", self.clerk.id)])

    def test_manager_cannot_rewrite_a_clerks_feedback(self):
        _answer, feedback = self.clerk_feedback()
        suggestion = feedback.filtered(lambda f: f.kind == "correction")
        for vals in ({"text": "nichts"}, {"user_id": self.manager.id}, {"state": "rejected"},
                     {"kind": "up"}, {"message_id": _answer.id}):
            with self.subTest(vals=list(vals)), self.assertRaises(AccessError), self.env.cr.savepoint():
                suggestion.with_user(self.manager).write(vals)
        suggestion.with_user(self.manager).write({"review_note": "Danke, wird geprüft."})  # their own note
        suggestion.with_user(self.manager).action_reject()
        self.assertEqual((suggestion.text, suggestion.user_id, suggestion.state),
                         ("Stand prüfen", self.clerk, "rejected"))

    def test_audit_trail_is_append_only_but_for_the_administrator(self):
        answer, feedback = self.clerk_feedback()
        records = {"pv_agent.conversation": answer.conversation_id, "pv_agent.message": answer | answer.question_id,
                   "pv_agent.answer.source": answer.source_ids, "pv_agent.feedback": feedback}
        for model, recs in records.items():
            self.assertTrue(recs, model)
            with self.subTest(model=model), self.assertRaises(AccessError), self.env.cr.savepoint():
                recs.with_user(self.manager).unlink()
        self.assertTrue(all(recs.exists() for recs in records.values()))
        # the administrator (Settings rights) still may; and every clerk may delete their own history
        records["pv_agent.answer.source"].with_user(self.admin).unlink()
        self.assertEqual(self.env["pv_agent.conversation"].with_user(self.clerk).action_delete_my_history(), 1)

    def test_deleting_an_entry_keeps_the_versions_answers_cited(self):
        answer = self.ask_as(self.clerk, QUESTION, GOOD).answer_id
        version = answer.source_ids.entry_version_id[:1]
        self.assertTrue(version)
        with self.assertRaises(UserError), self.env.cr.savepoint():
            version.entry_id.with_user(self.manager).unlink()
        self.assertTrue(version.exists())
        self.assertEqual(answer.source_ids.entry_version_id[:1], version)
        uncited = self.Entry.search([("id", "not in", answer.source_ids.entry_id.ids)], limit=1)
        uncited.with_user(self.manager).unlink()  # nothing cites it: it may go
        self.assertFalse(uncited.exists())

    def test_correction_suggestions_are_capped_per_user(self):
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.max_open_suggestions_per_user", "2")
        answer = self.ask_as(self.clerk, QUESTION, GOOD).answer_id.with_user(self.clerk)
        entry = answer.citation_entry_ids[:1]
        answer.action_suggest_correction(entry.id, "eins")
        answer.action_suggest_correction(entry.id, "zwei")
        with self.assertRaises(UserError):
            answer.action_suggest_correction(entry.id, "drei")
        other = self.ask_as(self.clerk2, QUESTION, GOOD).answer_id.with_user(self.clerk2)
        other.action_suggest_correction(entry.id, "von jemand anderem")  # the others are not affected
        self.env["pv_agent.feedback"].search([("text", "=", "eins")]).with_user(self.manager).action_reject()
        answer.action_suggest_correction(entry.id, "drei")  # a reviewed one frees its place


@tagged("post_install", "-at_install")
class TestQueueCapUnderConcurrency(TransactionCase):
    """Point 4: the cap counted and inserted in the request's snapshot, so parallel asks of one
    clerk all passed (6 waiting with a cap of 3). Two real cursors, committed like two requests."""

    def setUp(self):
        super().setUp()
        with self.registry.cursor() as cr:
            user = new_test_user(api.Environment(cr, SUPERUSER_ID, {}), "pv_parallel_clerk",
                                 groups="pv_agent.group_user")
            self.clerk_id = user.id
        self.addCleanup(self.remove_clerk)

    def remove_clerk(self):
        with self.registry.cursor() as cr:
            api.Environment(cr, SUPERUSER_ID, {})["res.users"].browse(self.clerk_id).unlink()  # with their history

    def ask(self, cr, n):
        env = api.Environment(cr, self.clerk_id, {})
        for i in range(n):
            env["pv_agent.conversation"].action_ask(f"Frage {i}")

    def waiting(self):
        with self.registry.cursor() as cr:
            return api.Environment(cr, SUPERUSER_ID, {})["pv_agent.message"].search_count(
                [("author_id", "=", self.clerk_id), ("state", "=", "pending")])

    def test_parallel_asks_of_one_clerk_stay_within_the_cap(self):
        with self.registry.cursor() as first, self.registry.cursor() as second:
            second.execute("SELECT 1")  # the second request's snapshot: before the first one's questions
            self.ask(first, 3)
            first.commit()
            env = api.Environment(second, self.clerk_id, {})
            with self.assertRaises(UserError), self.assertLogs("odoo.service.model", "INFO"):
                retrying(lambda: self.ask(second, 3), env)  # as an RPC call: retried on a conflict
        self.assertEqual(self.waiting(), 3)

    def test_a_claim_reads_only_a_window_of_each_askers_questions(self):
        with self.registry.cursor() as cr:
            env = api.Environment(cr, SUPERUSER_ID, {})
            conv = env["pv_agent.conversation"].create({"user_id": self.clerk_id, "name": "viele"})
            env["pv_agent.message"].create([{"conversation_id": conv.id, "role": "question", "body": f"F{i}",
                                             "state": "pending", "author_id": self.clerk_id} for i in range(12)])
            window = env["pv_agent.message"]._next_questions().filtered(lambda q: q.author_id.id == self.clerk_id)
            self.assertEqual(len(window), 3, "the cap's worth of each asker's oldest questions")
            self.assertEqual(window.mapped("body"), ["F0", "F1", "F2"])
            cr.rollback()


@tagged("post_install", "-at_install")
class TestWatchdog(PvAgentCase):
    """Point 5: the answer deadline counted from the job's start, Odoo's watchdog from the start
    of the worker's batch of jobs; a reindex left running by a killed worker blocked the next
    for an hour; a conversation deleted while answering aborted the whole run."""

    def deadlines_of_jobs(self, start_time=None):
        """Three job starts as Odoo's cron runner makes them: two in one batch, the first using
        80 s of the worker's time, then the next batch. Returns each job's answer deadline."""
        from ..services import cron_budget  # new with this fix

        clock = [1000.0]
        deadlines = []

        def process_job(cls, cron_cr, job):  # Odoo's job run: the answer cron reads its deadline
            deadlines.append(odoo_settings.cron_run_deadline({"cron_end_time": clock[0] + MIN_TIME_PER_JOB}))
            clock[0] += 80.0

        batch, next_batch = types.SimpleNamespace(closed=False), types.SimpleNamespace(closed=False)
        with patch.dict(config.options, {"limit_time_real_cron": 120}), \
                patch.object(BaseIrCron, "_process_job", classmethod(process_job)), \
                patch.object(cron_budget, "monotonic", lambda: clock[0]), \
                patch.object(odoo_settings.time, "monotonic", lambda: clock[0]), \
                patch.object(threading.current_thread(), "start_time", start_time, create=True), \
                patch.object(cron_budget._batch, "last_job_end", None, create=True):
            Cron = self.env.registry["ir.cron"]
            Cron._process_job(batch, {"id": 1})  # answer cron 1
            Cron._process_job(batch, {"id": 2})  # answer cron 2: same batch, same watchdog count
            Cron._process_job(next_batch, {"id": 1})  # the next batch
        return deadlines, cron_budget.idle_sleep()

    def test_second_cron_of_a_batch_gets_only_what_is_left_of_the_batch(self):
        budget = 120 * odoo_settings.MODEL_TIME_SHARE - odoo_settings.MODEL_TIME_MARGIN
        # prefork: the watchdog counted since the ping before the worker's idle sleep; after a
        # job of this process, since that job's end
        deadlines, idle = self.deadlines_of_jobs()
        self.assertEqual(deadlines, [1000.0 - idle + budget, 1000.0 - idle + budget, 1160.0 + budget])
        # threaded server: since the cron thread's start_time, which Odoo sets before the batch
        deadlines, _idle = self.deadlines_of_jobs(start_time=time.time() - 5.0)
        for got, want in zip(deadlines, [995.0 + budget, 995.0 + budget]):
            self.assertAlmostEqual(got, want, delta=1.0)

    def test_answer_cron_late_in_the_watchdogs_count_wakes_a_fresh_run(self):
        """Less than half a question's time left of the worker's count: a fresh batch (a fresh
        count) answers it, not a cut-short one."""
        self.import_kb()
        self.reindex()
        asked = self.env["pv_agent.conversation"].with_user(self.clerk).action_ask(QUESTION)
        question = self.env["pv_agent.message"].browse(asked["message_id"])
        self.ollama.default_reply = Reply(GOOD)
        budget = 120 * odoo_settings.MODEL_TIME_SHARE - odoo_settings.MODEL_TIME_MARGIN

        def run_answer_cron(counting_since):
            with patch.object(odoo_settings, "watchdog_counting_since", counting_since), \
                    self.enter_registry_test_mode(), self.registry.cursor() as cr:
                api.Environment(cr, SUPERUSER_ID, {})["pv_agent.message"]._cron_answer_pending()
            self.env.invalidate_all()

        with patch.dict(config.options, {"limit_time_real_cron": 120}):
            triggers = self.env["ir.cron.trigger"].search_count([])
            run_answer_cron(lambda: time.monotonic() - budget + 30)
            self.assertEqual(question.state, "pending", "30 s left of 91: not answered cut short")
            self.assertGreater(self.env["ir.cron.trigger"].search_count([]), triggers, "the crons are woken")
            run_answer_cron(time.monotonic)  # the fresh batch
        self.assertEqual(question.state, "done")
        self.assertEqual(question.answer_id.state, "answered")

    def test_reindex_left_running_by_a_dead_worker_is_detected_at_once(self):
        self.import_kb()
        dead = self.Job.create({"kind": "reindex", "state": "running",
                                "date_start": odoo_fields.Datetime.subtract(odoo_fields.Datetime.now(), minutes=3)})
        result = self.Job.with_user(self.manager).action_queue_reindex()
        self.assertEqual(dead.state, "failed")
        self.assertNotEqual(result["job_id"], dead.id)
        self.assertEqual(self.Job.browse(result["job_id"]).state, "queued")

    def test_reindex_of_a_living_worker_is_left_alone(self):
        from ..services import worker_lock  # new with this fix

        self.import_kb()
        alive = self.Job.create({"kind": "reindex", "state": "running",
                                 "date_start": odoo_fields.Datetime.subtract(odoo_fields.Datetime.now(), minutes=3)})
        with self.registry.cursor() as worker:  # the worker's own connection holds the job
            with worker_lock.holding(worker, worker_lock.INDEX_JOBS, alive.id):
                result = self.Job.with_user(self.manager).action_queue_reindex()
            worker.rollback()
        self.assertEqual((alive.state, result["job_id"]), ("running", alive.id))

    def test_question_left_running_by_a_dead_worker_fails_at_once(self):
        from ..services import worker_lock  # new with this fix

        self.import_kb()
        self.reindex()
        Message = self.env["pv_agent.message"]
        dead = Message.browse(self.env["pv_agent.conversation"].with_user(self.clerk).action_ask(QUESTION)["message_id"])
        alive = Message.browse(self.env["pv_agent.conversation"].with_user(self.clerk2).action_ask(QUESTION)["message_id"])
        (dead | alive).write({"state": "running"})  # both were claimed; one worker was killed since
        with self.registry.cursor() as worker:  # the living worker's own connection
            with worker_lock.holding(worker, worker_lock.QUESTIONS, alive.id):
                Message._fail_stuck()
            worker.rollback()
        self.assertEqual((dead.state, alive.state), ("error", "running"))
        self.assertIn("abgebrochen", dead.error)  # the clerk reads German

    def test_conversation_deleted_while_answering_does_not_stop_the_run(self):
        self.import_kb()
        self.reindex()
        Conversation = self.env["pv_agent.conversation"]
        gone = Conversation.with_user(self.clerk).action_ask(QUESTION)
        kept = Conversation.with_user(self.clerk2).action_ask(QUESTION)
        self.ollama.default_reply = Reply(GOOD)
        from ..services import engine_calls
        answer = engine_calls.answer

        def answer_while_the_clerk_deletes(question, index, settings, deadline=None, **kw):
            data = answer(question, index, settings, deadline=deadline, **kw)
            if Conversation.sudo().browse(gone["conversation_id"]).exists():
                Conversation.with_user(self.clerk).action_delete_my_history()  # meanwhile, in the clerk's tab
            return data

        with patch.object(engine_calls, "answer", answer_while_the_clerk_deletes):
            self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertFalse(Conversation.sudo().browse(gone["conversation_id"]).exists())
        kept_question = self.env["pv_agent.message"].browse(kept["message_id"])
        self.assertEqual(kept_question.state, "done", "the other clerk's question was answered in the same run")
