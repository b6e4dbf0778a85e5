"""Prompt injection in the browser (issue 7): the model's answer, the clerk's question and a
knowledge-base entry carry script, event-handler, javascript: and raw-HTML payloads; tours in
Chromium check that the panel, its history, a chatter note, a Discuss chat and the managers'
review form show them as text and that none of them runs (window.__pwned stays undefined)."""
from markupsafe import Markup

from odoo.tests import new_test_user, tagged

from .common import PvAgentHttpCase

PAYLOADS = (
    "<script>window.__pwned='script'</script> <img src=x onerror=\"window.__pwned='img'\"> "
    "[klick](javascript:window.__pwned='link') <a href=\"javascript:window.__pwned='a'\">Link</a> "
    "<svg onload=\"window.__pwned='svg'\"></svg> <details open ontoggle=\"window.__pwned='details'\">x</details> "
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>"
)
HOSTILE_ANSWER = (
    "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]. " + PAYLOADS
    + " Sie gilt 2026 [pv-sv-01].\n\n"
    "| Wert | <img src=x onerror=\"window.__pwned='cell'\"> |\n|---|---|\n| Grenze | 551,10 € [pv-sv-01] |\n\n"
    "`<img src=x onerror=\"window.__pwned='code'\">` **<b onmouseover=\"window.__pwned='bold'\">fett</b>**\n\n"
    "> <img src=x onerror=\"window.__pwned='quote'\">\n\n"
    "- <svg onload=\"window.__pwned='list'\"></svg> [pv-xss-01]"
)
HOSTILE_QUESTION = "Wie hoch ist die Geringfügigkeitsgrenze 2026? <img src=x onerror=\"window.__pwned='question'\">"
HOSTILE_ENTRY = """---
id: pv-xss-01
title: "Geringfügigkeitsgrenze <img src=x onerror=window.__pwned='title'>"
stand: 2026-01
topic: sozialversicherung
tags: [Geringfügigkeitsgrenze, Geringfügigkeit]
legal_bases: ["§ 5 Abs 2 ASVG"]
source: briefing
official: true
---

## Zusammenfassung
Die Geringfügigkeitsgrenze gilt monatlich. <script>window.__pwned='entry'</script>
<img src=x onerror="window.__pwned='entry-img'"> [Link](javascript:window.__pwned='entry-link')

## Kernwerte & Fristen
- Geringfügigkeitsgrenze: monatlich

## Rechtsgrundlagen
- § 5 Abs 2 ASVG – Geringfügigkeitsgrenze

## Payroll-Relevanz (Odoo)
<iframe srcdoc="<script>parent.__pwned='entry-iframe'</script>"></iframe>

## Verweise
- [pv-sv-01] Geringfügigkeitsgrenze
"""


@tagged("post_install", "-at_install")
class TestInjectionInTheBrowser(PvAgentHttpCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.contact_clerk = new_test_user(cls.env, "pv_clerk_xss", name="Carla Contacts",
                                          groups="pv_agent.group_user,base.group_partner_manager")
        cls.person = cls.env["res.partner"].create({"name": "Anna Angestellte"})

    def setUp(self):
        super().setUp()
        self.write_kb_file("pv-xss-01.md", HOSTILE_ENTRY)
        self.import_kb()
        self.reindex()

    def test_panel_shows_hostile_answer_question_and_history_as_text(self):
        question = self.ask_as(self.clerk, HOSTILE_QUESTION, HOSTILE_ANSWER, HOSTILE_ANSWER)
        answer = question.answer_id
        self.assertIn("<script>", answer.body, "the engine keeps the model's text as it is")
        self.assertIn(answer.state, ("answered", "answered_after_retry", "uncertain"))
        self.start_tour("/odoo", "pv_agent_injection_panel", login="pv_clerk")

    def test_chatter_discuss_and_review_show_it_as_text(self):
        mention = Markup('<a href="/odoo/res.partner/%s" class="o_mail_redirect" data-oe-id="%s" '
                         'data-oe-model="res.partner" target="_blank">@PV-Agent</a> ') % (self.bot.id, self.bot.id)
        self.ollama.script(HOSTILE_ANSWER, HOSTILE_ANSWER, HOSTILE_ANSWER, HOSTILE_ANSWER)
        self.person.with_user(self.contact_clerk).message_post(
            body=mention + HOSTILE_QUESTION, message_type="comment", subtype_xmlid="mail.mt_note",
            partner_ids=[self.bot.id])
        chat = self.env["discuss.channel"].with_user(self.contact_clerk)._get_or_create_chat([self.bot.id])
        chat.with_user(self.contact_clerk).message_post(body=HOSTILE_QUESTION, message_type="comment",
                                                        subtype_xmlid="mail.mt_comment")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        notes = self.env["mail.message"].search([("author_id", "=", self.bot.id)])
        self.assertEqual(len(notes), 2, "PV-Agent answered in the chatter and in the chat")
        for note in notes:
            self.assertNotIn("<script", note.body)
        # the chatter's readers need not be in the group (issue 29): there only a pointer to the panel
        in_chatter = notes.filtered(lambda m: m.model == "res.partner")
        self.assertNotIn("script", in_chatter.body)
        self.assertIn("&lt;script&gt;", (notes - in_chatter).body)
        self.start_tour(f"/odoo/res.partner/{self.person.id}", "pv_agent_injection_chatter", login="pv_clerk_xss")
        self.start_tour(f"/odoo/discuss?active_id=discuss.channel_{chat.id}", "pv_agent_injection_discuss",
                        login="pv_clerk_xss")

        answer = self.env["pv_agent.message"].search([("role", "=", "question"), ("source", "=", "chatter")]).answer_id
        entry = self.Entry.search([("entry_id", "=", "pv-xss-01")])
        answer.with_user(self.contact_clerk).action_suggest_correction(
            entry.id, "Falsch <img src=x onerror=\"window.__pwned='feedback'\"> <script>window.__pwned='fb'</script>")
        feedback = self.env["pv_agent.feedback"].search([("message_id", "=", answer.id)])
        self.assertIn("&lt;script&gt;", str(feedback.cited_html), "the hostile entry, escaped, in the review")
        self.start_tour(f"/odoo/action-pv_agent.action_pv_agent_feedback_review/{feedback.id}",
                        "pv_agent_injection_review", login="pv_manager")
