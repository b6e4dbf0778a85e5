"""Privacy (issue 7): deleting a user and "Meinen Verlauf löschen" remove the history (only the
caller's), and nothing of a record — a contact's name, e-mail, phone, address, bank account,
an employee's data — ever reaches the model: the assertions read every /api/chat and
/api/embed body the Ollama-API test server received."""
from __future__ import annotations

import json
import os
import re

from markupsafe import Markup

from odoo.exceptions import AccessError
from odoo.service.model import call_kw
from odoo.tests import new_test_user, tagged

from ..engine.answer import prompts
from .common import PvAgentCase

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"

# what a payroll clerk's records hold, and must never be sent to the model
PRIVATE = {
    "name": "Anna Angestellte-Privat",
    "email": "anna.privat@example.com",
    "phone": "+43 660 1234567",
    "street": "Lohngasse 7",
    "city": "Wiener Neustadt",
    "zip": "2700",
    "vat": "ATU12345675",
    "comment": "Gehalt 3.100 € brutto, SV-Nr. 1234 010190, Kind: Ben",
    "ref": "PERS-4711",
}
IBAN = "AT611904300234573201"


@tagged("post_install", "-at_install")
class TestPrivacy(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.contact_clerk = new_test_user(cls.env, "pv_clerk_privacy", name="Carla Contacts", email="carla@example.com",
                                          groups="pv_agent.group_user,base.group_partner_manager")
        cls.person = cls.env["res.partner"].create(dict(PRIVATE))
        cls.env["res.partner.bank"].create({"partner_id": cls.person.id, "acc_number": IBAN})

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.answer_cron = self.env.ref("pv_agent.ir_cron_pv_agent_answer")

    # -- helpers ---------------------------------------------------------------------------
    def mention(self):
        return Markup('<a href="/odoo/res.partner/%s" class="o_mail_redirect" data-oe-id="%s" '
                      'data-oe-model="res.partner" target="_blank">@PV-Agent</a> ') % (self.bot.id, self.bot.id)

    def chat_with_bot(self, user):
        return self.env["discuss.channel"].with_user(user)._get_or_create_chat([self.bot.id])

    def bot_chats(self, user):
        return self.env["discuss.channel"].search([("channel_type", "=", "chat")]).filtered(
            lambda c: set(c.channel_member_ids.partner_id.ids) == {user.partner_id.id, self.bot.id})

    def history_everywhere(self, user):
        """Ask in the panel, in a Discuss chat and by a mention in a contact's chatter; rate and
        suggest a correction; a manager rejects it (PV-Agent tells the clerk in the chat)."""
        self.ollama.script(GOOD, GOOD, GOOD)
        panel = self.ask_as(user, QUESTION)
        self.chat_with_bot(user).with_user(user).message_post(body="Und im Jahr 2025?", message_type="comment",
                                                              subtype_xmlid="mail.mt_comment")
        if user.has_group("base.group_partner_manager"):
            self.person.with_user(user).message_post(body=self.mention() + Markup("Gilt die Grenze auch 2026?"),
                                                     message_type="comment", subtype_xmlid="mail.mt_note",
                                                     partner_ids=[self.bot.id])
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        panel.answer_id.with_user(user).action_vote("down")
        panel.answer_id.with_user(user).action_suggest_correction(panel.answer_id.citation_entry_ids[:1].id,
                                                                  "Bitte den Wert für 2026 prüfen")
        feedback = self.env["pv_agent.feedback"].search([("user_id", "=", user.id), ("kind", "=", "correction")])
        feedback.with_user(self.manager).action_reject()
        return self.rows_of(user)

    def rows_of(self, user):
        """The ids of the user's history rows (conversations, messages, feedback, bot chats)."""
        convs = self.env["pv_agent.conversation"].search([("user_id", "=", user.id)])
        return {
            "pv_agent_conversation": set(convs.ids),
            "pv_agent_message": set(convs.message_ids.ids),
            "pv_agent_feedback": set(self.env["pv_agent.feedback"].search([("user_id", "=", user.id)]).ids),
            "discuss_channel": set(self.bot_chats(user).ids),
        }

    def remaining(self, rows):
        """Which of ``rows`` still exist, read in SQL (no cache, no record rules)."""
        self.env.flush_all()
        left = {}
        for table, ids in rows.items():
            self.env.cr.execute(f"SELECT id FROM {table} WHERE id = ANY(%s)", [list(ids) or [0]])  # noqa: S608
            left[table] = {r[0] for r in self.env.cr.fetchall()}
        return left

    # -- deleting a user -------------------------------------------------------------------
    def test_deleting_a_user_removes_their_history(self):
        theirs = self.history_everywhere(self.contact_clerk)
        others = self.history_everywhere(self.clerk2)
        self.assertTrue(all(theirs.values()), theirs)
        answers = self.env["pv_agent.message"].browse(theirs["pv_agent_message"]).filtered("answer_json")
        self.assertEqual(len(answers), 3, "three answers with their audit record (answer object)")
        chatter_note = self.person.message_ids.filtered(lambda m: m.author_id == self.bot)
        self.assertEqual(len(chatter_note), 1)

        self.contact_clerk.with_user(self.admin).unlink()
        self.assertEqual(self.remaining(theirs), {t: set() for t in theirs}, "the deleted user's history is gone")
        self.assertEqual(self.remaining(others), others, "the other clerk's history is untouched")
        self.assertTrue(chatter_note.exists(), "PV-Agent's note stays in the contact's chatter (the record's history)")

    def test_a_user_without_rights_cannot_delete_users(self):
        rows = self.history_everywhere(self.clerk2)
        with self.assertRaises(AccessError):
            self.clerk2.with_user(self.clerk).unlink()
        self.assertEqual(self.remaining(rows), rows)

    # -- "Meinen Verlauf löschen" ------------------------------------------------------------
    def test_delete_my_history_removes_the_callers_history_only(self):
        mine = self.history_everywhere(self.contact_clerk)
        others = self.history_everywhere(self.clerk2)
        managers = self.history_everywhere(self.manager)
        count = call_kw(self.env["pv_agent.conversation"].with_user(self.contact_clerk), "action_delete_my_history", [], {})
        self.assertEqual(count, 3, "panel, Discuss and chatter conversations")
        self.assertEqual(self.remaining(mine), {t: set() for t in mine})
        self.assertEqual(self.remaining(others), others)
        self.assertEqual(self.remaining(managers), managers)
        # the clerk starts afresh: an empty panel, and asking works
        panel = self.env["pv_agent.conversation"].with_user(self.contact_clerk).panel_load()
        self.assertEqual((panel["conversation"], panel["conversations"]), (False, []))
        question = self.ask_as(self.contact_clerk, QUESTION, GOOD)
        self.assertEqual(question.answer_id.state, "answered")

    def test_delete_my_history_from_the_preferences(self):
        mine = self.history_everywhere(self.clerk)
        others = self.history_everywhere(self.clerk2)
        Users = self.env["res.users"]
        # the button is on the clerk's preferences form, not on an outsider's
        view = self.env.ref("base.view_users_form_simple_modif")
        arch = Users.with_user(self.clerk).get_views([(view.id, "form")])["views"]["form"]["arch"]
        self.assertIn('name="action_pv_agent_delete_my_history"', arch)
        arch = Users.with_user(self.outsider).get_views([(view.id, "form")])["views"]["form"]["arch"]
        self.assertNotIn("action_pv_agent_delete_my_history", arch)
        # someone else's id: refused, nothing deleted
        with self.assertRaises(AccessError):
            call_kw(Users.with_user(self.clerk), "action_pv_agent_delete_my_history", [[self.clerk2.id]], {})
        with self.assertRaises(AccessError):
            call_kw(Users.with_user(self.clerk), "action_pv_agent_delete_my_history", [[self.clerk.id, self.clerk2.id]], {})
        self.assertEqual(self.remaining(mine), mine)
        self.assertEqual(self.remaining(others), others)
        action = call_kw(Users.with_user(self.clerk), "action_pv_agent_delete_my_history", [[self.clerk.id]], {})
        self.assertEqual(action["params"]["next"]["tag"], "reload")
        self.assertIn("2", action["params"]["message"])  # panel and Discuss conversations
        self.assertEqual(self.remaining(mine), {t: set() for t in mine})
        self.assertEqual(self.remaining(others), others)
        for stranger in (self.outsider, self.env.ref("base.public_user")):
            with self.assertRaises(AccessError):
                call_kw(Users.with_user(stranger), "action_pv_agent_delete_my_history", [[stranger.id]], {})
            with self.assertRaises(AccessError):
                call_kw(self.env["pv_agent.conversation"].with_user(stranger), "action_delete_my_history", [], {})
        self.assertEqual(self.remaining(others), others)

    # -- what reaches the model ------------------------------------------------------------
    def sent(self):
        return [r for r in self.ollama.requests if r["path"] in ("/api/chat", "/api/embed")]

    def assert_nothing_private_sent(self, private):
        requests = self.sent()
        self.assertTrue(requests)
        body = json.dumps([r["json"] for r in requests], ensure_ascii=False)
        leaked = [p for p in private if p in body]
        self.assertFalse(leaked, f"sent to the model: {leaked}")
        return requests

    def assert_only_prompt_blocks_and_question(self, questions):
        """Every chat request: the system prompt, then knowledge-base blocks and one of the questions."""
        entries = self.Entry.with_context(active_test=False).search([])
        kb_text = "\n".join(str(v) for e in entries for k, v in e._to_engine_entry().metadata().items()) + "\n".join(
            entries.mapped("body"))
        kb_words = set(re.findall(r"\w+", kb_text))
        allowed_words = kb_words | set(re.findall(r"\w+", prompts.system_prompt() + json.dumps(
            prompts._texts(prompts.PROMPT_VERSION), ensure_ascii=False) + " ".join(questions)))
        chats = [r["json"] for r in self.sent() if r["path"] == "/api/chat"]
        self.assertTrue(chats)
        for chat in chats:
            messages = chat["messages"]
            self.assertEqual(messages[0], {"role": "system", "content": prompts.system_prompt()})
            self.assertTrue(messages[1]["content"].startswith("Kontextblöcke:"))
            asked = messages[1]["content"].rsplit("Frage: ", 1)[1].strip()
            self.assertIn(asked, questions)
            for message in messages[1:]:
                stray = set(re.findall(r"\w+", message["content"])) - allowed_words
                # block headers carry the Stand and numbers; nothing else may be new
                self.assertFalse({w for w in stray if not w.isdigit() and w not in ("amtlich", "Stand", "Block")},
                                 f"words from outside the knowledge base, the prompt and the question: {stray}")
        for embed in [r["json"] for r in self.sent() if r["path"] == "/api/embed"]:
            for text in embed["input"] if isinstance(embed["input"], list) else [embed["input"]]:
                stray = set(re.findall(r"\w+", text)) - allowed_words
                self.assertFalse({w for w in stray if not w.isdigit()}, f"embedded text from outside: {stray}")

    def test_nothing_of_a_contact_reaches_the_model(self):
        """A clerk asks in a contact's chatter, in a Discuss chat and in the panel; the contact has
        name, e-mail, phone, address, VAT number, bank account and salary notes."""
        # the requests recorded since setUp include the first reindex's /api/embed bodies
        self.assertTrue(self.ollama.requests_to("/api/embed"))
        questions = ["Gilt die Geringfügigkeitsgrenze auch für Anna?", "Und im Jahr 2025?", QUESTION]
        self.ollama.script(GOOD, GOOD, GOOD)
        self.person.with_user(self.contact_clerk).message_post(
            body=self.mention() + Markup(questions[0]), message_type="comment", subtype_xmlid="mail.mt_note",
            partner_ids=[self.bot.id])
        self.chat_with_bot(self.contact_clerk).with_user(self.contact_clerk).message_post(
            body=questions[1], message_type="comment", subtype_xmlid="mail.mt_comment")
        self.env["pv_agent.conversation"].with_user(self.contact_clerk).action_ask(questions[2])
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        answered = self.env["pv_agent.message"].search([("role", "=", "answer"),
                                                         ("author_id", "=", self.contact_clerk.id)])
        self.assertEqual(len(answered), 3)
        # "Anna" is in the question the clerk typed: that is sent, as typed; nothing else of her
        private = [v for k, v in PRIVATE.items()] + [IBAN, "Angestellte", "anna.privat", "1234 010190", "3.100",
                                                     "Carla Contacts", "carla@example.com", self.person.display_name]
        requests = self.assert_nothing_private_sent(private)
        self.assert_only_prompt_blocks_and_question(questions)
        print(f"\nprivacy: {len(requests)} bodies sent to the model server checked "
              f"({sum(r['path'] == '/api/chat' for r in requests)} chat, "
              f"{sum(r['path'] == '/api/embed' for r in requests)} embed)")

    def test_nothing_of_an_employee_reaches_the_model(self):
        """Needs the Employees app: tools/test-odoo installs hr with PV-Agent wherever the addons
        path has it (CI's Odoo does); under CI (PV_AGENT_REQUIRE_ODOO=1) a missing hr fails."""
        if "hr.employee" not in self.env:
            if os.environ.get("PV_AGENT_REQUIRE_ODOO") == "1":
                self.fail("hr is not installed: the employee-privacy test cannot run")
            self.skipTest("hr is not installed")
        employee = self.env["hr.employee"].create({
            "name": "Egon Employee-Privat", "private_email": "egon.privat@example.com", "private_phone": "+43 664 7654321",
            "private_street": "Gehaltsweg 12", "ssnid": "9876 150385", "identification_id": "ID-EGON-77",
            "work_email": "egon@example.com",
        })
        self.contact_clerk.group_ids = [(4, self.env.ref("hr.group_hr_user").id)]
        self.ollama.requests.clear()
        self.ollama.script(GOOD)
        question = "Wie hoch ist die Geringfügigkeitsgrenze für geringfügig Beschäftigte?"
        employee.with_user(self.contact_clerk).message_post(
            body=self.mention() + Markup(question), message_type="comment", subtype_xmlid="mail.mt_note",
            partner_ids=[self.bot.id])
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertTrue(employee.message_ids.filtered(lambda m: m.author_id == self.bot))
        self.assert_nothing_private_sent(["Egon", "Employee-Privat", "egon.privat", "7654321", "Gehaltsweg",
                                          "9876 150385", "ID-EGON-77", "egon@example.com"])
        self.assert_only_prompt_blocks_and_question([question])
