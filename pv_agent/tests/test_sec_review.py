"""The security review's findings (issue 16), each reproduced and closed: clerks cannot rewrite
PV-Agent records (the conversation's origin decided where the bot posted), answers are posted
only where the asker may still post and everybody reading may read them, the import reads only
the saved folder, related fields never read protected text as superuser, every question has a
deadline below Odoo's worker limit, and the queue is fair between users."""
from __future__ import annotations

import json
from unittest.mock import patch

from markupsafe import Markup

from odoo import fields as odoo_fields
from odoo.exceptions import AccessError, UserError
from odoo.service.model import call_kw
from odoo.tests import new_test_user, tagged
from odoo.tools import config

from .common import PvAgentCase
from .ollama_api_server import Reply

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"
SECRET = "Qx9Geheimfrage"

PV_MODELS = ["pv_agent.conversation", "pv_agent.message", "pv_agent.feedback", "pv_agent.entry",
             "pv_agent.index.job", "pv_agent.answer.source"]


def _value_for(field, record, other_user):
    """A value a clerk might try to write into ``field``."""
    kind = field.type
    if kind == "many2one":
        return other_user.id if field.comodel_name == "res.users" else record.env[field.comodel_name].search([], limit=1).id
    if kind in ("many2many", "one2many"):
        return [(6, 0, [])] if kind == "many2many" else [(5, 0, 0)]
    if kind == "many2one_reference":
        return 1
    if kind == "selection":
        return field.get_values(record.env)[-1]
    if kind in ("integer", "float", "monetary"):
        return 7
    if kind == "boolean":
        return True
    if kind == "datetime":
        return odoo_fields.Datetime.now()
    if kind == "date":
        return odoo_fields.Date.today()
    return "überschrieben"


@tagged("post_install", "-at_install")
class TestClerksCannotRewrite(PvAgentCase):
    """Finding 1 (high): ``group_user`` had write/create on conversations; ``readonly=True`` is
    only the UI's. A clerk wrote ``origin_res_id`` and PV-Agent posted into a chat of others."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def clerk_records(self):
        answered = self.ask_as(self.clerk, QUESTION, GOOD)
        answered.answer_id.with_user(self.clerk).action_vote("down")
        pending = self.env["pv_agent.conversation"].with_user(self.clerk).action_ask("Und 2025?")
        pending = self.env["pv_agent.message"].browse(pending["message_id"])
        self.assertEqual(pending.state, "pending")
        return {
            "pv_agent.conversation": answered.conversation_id | pending.conversation_id,
            "pv_agent.message": answered | answered.answer_id | pending,
            "pv_agent.feedback": self.env["pv_agent.feedback"].search([("user_id", "=", self.clerk.id)]),
            "pv_agent.entry": self.Entry.search([], limit=1),
            "pv_agent.index.job": self.Job.search([], limit=1),
            "pv_agent.answer.source": self.env["pv_agent.answer.source"].search([("user_id", "=", self.clerk.id)]),
        }

    def test_clerk_can_write_and_create_nothing(self):
        """Every stored field of every PV-Agent model, on the clerk's own records (a queued and
        an answered question among them): write and create are AccessError."""
        records = self.clerk_records()
        tried = 0
        for model in PV_MODELS:
            recs = records[model]
            self.assertTrue(recs, model)
            Model = self.env[model].with_user(self.clerk)
            for name, field in Model._fields.items():
                if not field.store or field.compute or name in models_magic() or field.type == "binary":
                    continue
                value = _value_for(field, recs[:1], self.clerk2)
                for rec in recs:
                    with self.subTest(model=model, field=name, record=rec.id):
                        with self.assertRaises(AccessError), self.env.cr.savepoint():
                            rec.with_user(self.clerk).write({name: value})
                        tried += 1
            with self.subTest(model=model, method="create"), self.assertRaises(AccessError), \
                    self.env.cr.savepoint():
                Model.create({"name": "x"} if "name" in Model._fields else {})
        self.assertGreater(tried, 60)
        # nothing moved: the conversations are still the clerk's, from the panel
        self.assertEqual(records["pv_agent.conversation"].user_id, self.clerk)
        self.assertFalse(any(records["pv_agent.conversation"].mapped("origin_model")))

    def test_answer_is_posted_where_the_question_was_asked(self):
        """Even if a conversation's origin points elsewhere (old data, or the attack of the
        review), the answer goes to the thread of the question, never into others' chats."""
        chat = self.env["discuss.channel"].with_user(self.clerk)._get_or_create_chat([self.bot.id])
        private = self.env["discuss.channel"].with_user(self.clerk2)._get_or_create_chat([self.manager.partner_id.id])
        self.ollama.script(GOOD)
        chat.with_user(self.clerk).message_post(body=QUESTION, message_type="comment", subtype_xmlid="mail.mt_comment")
        question = self.env["pv_agent.message"].search([("author_id", "=", self.clerk.id)])
        self.assertEqual((question.origin_model, question.origin_res_id), ("discuss.channel", chat.id))
        question.conversation_id.sudo().write({"origin_res_id": private.id})  # what the clerk could do before
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertFalse(private.message_ids.filtered(lambda m: m.author_id == self.bot), "nothing in others' chat")
        self.assertIn("551,10", chat.message_ids.filtered(lambda m: m.author_id == self.bot)[:1].body)

    def test_no_post_where_the_asker_may_no_longer_post(self):
        group = self.env["discuss.channel"].sudo().create({"name": "Lohnteam", "channel_type": "group"})
        group.add_members(partner_ids=[self.clerk.partner_id.id, self.clerk2.partner_id.id, self.bot.id])
        self.ollama.script(GOOD)
        group.with_user(self.clerk).message_post(
            body=Markup('<a data-oe-model="res.partner" data-oe-id="%s">@PV-Agent</a> %s') % (self.bot.id, QUESTION),
            message_type="comment", subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id])
        question = self.env["pv_agent.message"].search([("author_id", "=", self.clerk.id)])
        self.assertEqual(question.state, "pending")
        group.channel_member_ids.filtered(lambda m: m.partner_id == self.clerk.partner_id).sudo().unlink()
        self.assertFalse(group.with_user(self.clerk).has_access("read"), "the clerk left the group chat")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(question.answer_id.state, "answered", "answered, in the panel")
        self.assertFalse(group.message_ids.filtered(lambda m: m.author_id == self.bot),
                         group.message_ids.mapped("body"))

    def test_manager_cannot_rate_another_users_answer(self):
        answer = self.ask_as(self.clerk, QUESTION, GOOD).answer_id
        with self.assertRaises(AccessError):
            answer.with_user(self.manager).action_vote("down")
        with self.assertRaises(AccessError):
            answer.with_user(self.manager).action_suggest_correction(self.Entry.search([], limit=1).id, "falsch")
        self.assertEqual(answer.with_user(self.clerk).action_vote("up"), "up")


def models_magic():
    return {"id", "create_uid", "create_date", "write_uid", "write_date", "display_name"}


@tagged("post_install", "-at_install")
class TestSharedThreads(PvAgentCase):
    """Finding 5: in a channel with portal users or guests the answer was posted for all to
    read, and failures posted exception texts and the Ollama URL."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.portal = new_test_user(cls.env, "pv_portal_sec", groups="base.group_portal", name="Paula Portal")

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def mention(self, channel, user):
        channel.with_user(user).message_post(
            body=Markup('<a data-oe-model="res.partner" data-oe-id="%s">@PV-Agent</a> %s') % (self.bot.id, QUESTION),
            message_type="comment", subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id])

    def bot_posts(self, channel):
        return channel.message_ids.filtered(lambda m: m.author_id == self.bot)

    def test_channel_with_outsiders_gets_a_pointer_not_the_answer(self):
        channel = self.env["discuss.channel"].sudo().create({"name": "Alle", "channel_type": "channel",
                                                             "group_public_id": False})
        channel.add_members(partner_ids=[self.clerk.partner_id.id, self.portal.partner_id.id, self.bot.id])
        self.ollama.script(GOOD)
        self.mention(channel, self.clerk)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        question = self.env["pv_agent.message"].search([("author_id", "=", self.clerk.id), ("role", "=", "question")])
        self.assertEqual(question.answer_id.state, "answered")
        [post] = self.bot_posts(channel)
        self.assertNotIn("551,10", post.body)
        self.assertIn("PV-Agent-Fenster", post.body)  # the clerk reads German: "… im PV-Agent-Fenster …"

    def test_channel_of_the_group_gets_the_answer(self):
        """Issue 29: a channel's readers are its authorized group, not its members. Open to
        everybody (no group), a channel of clerks only gets the pointer; restricted to the
        PV-Agent group, the answer."""
        for group, shown in ((False, False), (self.env.ref("pv_agent.group_user"), True)):
            channel = self.env["discuss.channel"].sudo().create({"name": "Lohnteam", "channel_type": "channel",
                                                                 "group_public_id": group and group.id})
            channel.add_members(partner_ids=[self.clerk.partner_id.id, self.clerk2.partner_id.id, self.bot.id])
            self.ollama.script(GOOD)
            self.mention(channel, self.clerk)
            self.run_cron("pv_agent.ir_cron_pv_agent_answer")
            [post] = self.bot_posts(channel)
            with self.subTest(group=group and group.name):
                self.assertEqual("551,10" in post.body, shown, post.body)
                self.assertEqual("PV-Agent-Fenster" in post.body, not shown)

    def test_failure_details_stay_out_of_the_thread(self):
        chat = self.env["discuss.channel"].with_user(self.clerk)._get_or_create_chat([self.bot.id])
        chat.with_user(self.clerk).message_post(body=QUESTION, message_type="comment", subtype_xmlid="mail.mt_comment")
        with patch("odoo.addons.pv_agent.engine.answer.ask.ask", side_effect=RuntimeError(f"kaputt {self.ollama.url}")), \
                self.assertLogs("odoo.addons.pv_agent.models.pv_agent_message", "ERROR"):
            self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        [post] = self.bot_posts(chat)
        self.assertIn("Die Frage konnte nicht beantwortet werden", post.body)  # in the asker's language
        self.assertNotIn("kaputt", post.body)
        self.assertNotIn(self.ollama.url, post.body)
        question = self.env["pv_agent.message"].search([("author_id", "=", self.clerk.id)])
        self.assertIn("kaputt", question.error, "the details stay on the question (panel, audit trail)")


@tagged("post_install", "-at_install")
class TestImportTakesNoPath(PvAgentCase):
    """Finding 2: a PV-Agent manager could import (and archive against) any server folder."""

    def test_path_argument_is_refused(self):
        self.import_kb()
        before = self.Entry.search_count([])
        elsewhere = self.tmp  # a folder without the knowledge base: importing it would archive all
        with self.assertRaises(TypeError), self.env.cr.savepoint():
            call_kw(self.Entry.with_user(self.manager), "action_import_knowledge_base", [elsewhere], {})
        self.assertEqual(self.Entry.search_count([]), before)
        self.assertFalse(self.Job.search([("kb_path", "=", elsewhere)]))
        self.assertEqual(self.import_kb().kb_path, self.kb_dir, "the saved folder is the only one")


@tagged("post_install", "-at_install")
class TestRelatedFieldsReadAsTheCaller(PvAgentCase):
    """Finding 6: related fields read as superuser handed a clerk's question to anyone calling a
    method that reads them (Enterprise's ``web_gantt_init_old_vals_per_pill_id`` did). Every
    field of every PV-Agent record, read directly as somebody the record rules keep out."""

    def test_no_field_hands_out_protected_text(self):
        self.import_kb()
        self.reindex()
        answered = self.ask_as(self.clerk2, f"{QUESTION} {SECRET}", GOOD)
        answered.answer_id.with_user(self.clerk2).action_vote("down")
        records = {
            "pv_agent.feedback": self.env["pv_agent.feedback"].search([("user_id", "=", self.clerk2.id)]),
            "pv_agent.answer.source": self.env["pv_agent.answer.source"].search([("user_id", "=", self.clerk2.id)]),
            "pv_agent.message": answered | answered.answer_id,
            "pv_agent.conversation": answered.conversation_id,
        }
        portal = new_test_user(self.env, "pv_portal_rel", groups="base.group_portal")
        readers = {"other clerk": self.clerk, "internal user": self.outsider, "portal user": portal,
                   "public user": self.env.ref("base.public_user")}
        checked = 0
        for model, recs in records.items():
            self.assertTrue(recs, model)
            for name in recs._fields:
                for label, user in readers.items():
                    with self.subTest(model=model, field=name, user=label):
                        self.env.invalidate_all()
                        try:
                            value = recs[:1].with_user(user)[name]
                        except AccessError:
                            continue
                        finally:
                            checked += 1
                        self.assertNotIn(SECRET, json.dumps(str(value)), f"{model}.{name} as {label}")
                        if hasattr(value, "_name"):
                            self.assertNotIn(SECRET, str(value.sudo(False).with_user(user).mapped("display_name")))
        self.assertGreater(checked, 100)
        # the owner and the managers still read them
        feedback = records["pv_agent.feedback"].with_user(self.clerk2)
        self.assertIn(SECRET, feedback.question)
        self.assertIn(SECRET, records["pv_agent.feedback"].with_user(self.manager).question)


@tagged("post_install", "-at_install")
class TestDeadline(PvAgentCase):
    """Finding 3: no deadline per question. Odoo kills a cron worker after limit_time_real; a
    question must end (sources_only, with the reason) before that, never stay "running"."""

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def test_slow_model_ends_sources_only_before_the_worker_limit(self):
        # a 14 s worker limit leaves 14 × 0.8 − 5 = 6.2 s of model time (Odoo's test guard raises
        # every request timeout to at least 10 s, so the call is cut after 10 s here)
        with patch.dict(config.options, {"limit_time_real": 14, "limit_time_real_cron": -1}):
            question = self.ask_as(self.clerk, QUESTION, Reply(GOOD, delay=30.0))
        answer = question.answer_id
        self.assertEqual(question.state, "done")
        self.assertEqual(answer.state, "sources_only")
        self.assertIn("Zeitlimit", json.loads(answer.answer_json)["notice"])
        self.assertLess(answer.duration_ms, 14000, "done before Odoo would have killed the worker")

    def test_settings_warn_when_the_limits_do_not_fit(self):
        settings = self.env["res.config.settings"].with_user(self.admin).create({})
        with patch.dict(config.options, {"limit_time_real": 60, "limit_time_real_cron": -1}):
            settings.invalidate_recordset()
            self.assertIn("60", settings.pv_agent_time_warning)
        with patch.dict(config.options, {"limit_time_real": 600, "limit_time_real_cron": -1}):
            settings.invalidate_recordset()
            self.assertFalse(settings.pv_agent_time_warning)


@tagged("post_install", "-at_install")
class TestFairQueue(PvAgentCase):
    """Finding 4: one global queue; one user could queue hundreds of questions."""

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.Conversation = self.env["pv_agent.conversation"]

    def queue(self, user, n):
        return [self.Conversation.with_user(user).action_ask(f"Frage {i} von {user.name}")["message_id"]
                for i in range(n)]

    def test_pending_questions_per_user_are_capped(self):
        self.queue(self.clerk, 3)
        with self.assertRaises(UserError):
            self.queue(self.clerk, 1)
        self.queue(self.clerk2, 1)  # the others are not affected
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.max_pending_per_user", "4")
        self.queue(self.clerk, 1)

    def test_answers_go_round_robin_between_users(self):
        mine = self.queue(self.clerk, 3)
        theirs = self.queue(self.clerk2, 1)
        expected = [mine[0], theirs[0], mine[1], mine[2]]
        self.assertEqual(self.env["pv_agent.message"]._next_questions().ids, expected)
        self.ollama.default_reply = Reply(GOOD)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        answers = self.env["pv_agent.message"].search([("role", "=", "answer")], order="id")
        self.assertEqual(answers.question_id.ids, expected)

    def test_every_answer_cron_answers(self):
        crons = [self.env.ref("pv_agent.ir_cron_pv_agent_answer"), self.env.ref("pv_agent.ir_cron_pv_agent_answer_2")]
        self.assertEqual({c.code for c in crons}, {"model._cron_answer_pending()"})
        triggers = self.env["ir.cron.trigger"].search_count([("cron_id", "in", [c.id for c in crons])])
        self.queue(self.clerk, 1)
        self.assertEqual(self.env["ir.cron.trigger"].search_count([("cron_id", "in", [c.id for c in crons])]),
                         triggers + 2, "asking wakes both answer crons")


@tagged("post_install", "-at_install")
class TestEngineFailuresTranslated(PvAgentCase):
    """The engine speaks German; what reaches the UI of a failure is in the asker's language."""

    def test_failure_reason_in_the_askers_language(self):
        from ..engine.ollama import OllamaUnavailable

        self.import_kb()
        self.reindex()
        with patch("odoo.addons.pv_agent.engine.answer.ask.ask", side_effect=OllamaUnavailable("Verbindung weg")), \
                self.assertLogs("odoo.addons.pv_agent.models.pv_agent_message", "ERROR"):
            german = self.ask_as(self.clerk, QUESTION)  # lang de_DE
            english = self.ask_as(self.clerk2, QUESTION)  # lang en_US
        self.assertEqual(german.error, "Sprachmodell nicht erreichbar: Verbindung weg")
        self.assertEqual(english.error, "Language model not reachable: Verbindung weg")


@tagged("post_install", "-at_install")
class TestUninstallHook(PvAgentCase):
    def test_hook_removes_index_tables_and_sidecar(self):
        import os

        from odoo.addons.pv_agent import uninstall_hook

        self.import_kb()
        self.reindex()
        self.assertTrue(os.path.exists(self.sidecar))
        self.env.cr.execute("CREATE TABLE pv_index_hooktest (id int)")
        self.env.cr.execute("CREATE TABLE pvxindex_keep (id int)")  # "_" is no wildcard here
        uninstall_hook(self.env)
        self.assertFalse(os.path.exists(self.sidecar))
        self.env.cr.execute("SELECT tablename FROM pg_tables WHERE tablename IN ('pv_index_hooktest', 'pvxindex_keep')")
        self.assertEqual(self.env.cr.fetchall(), [("pvxindex_keep",)])
