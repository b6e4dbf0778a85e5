"""What the panel shows: safe HTML from markdown, the one-line state, the conversation data."""
import json

from odoo.exceptions import AccessError
from odoo.tests import BaseCase, tagged

from ..services.answer_html import render
from .common import PvAgentCase

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."


@tagged("post_install", "-at_install")
class TestAnswerHtml(BaseCase):
    def test_html_in_an_answer_never_runs(self):
        for hostile in ('<script>alert(1)</script>', '<img src=x onerror="alert(1)">', '<a href="javascript:x">y</a>',
                        '[klick](javascript:alert(1))', '**<b onclick=x>fett</b>**', '`<script>`',
                        '| <svg onload=x> | a |\n|---|---|\n| b | c |', '> <iframe src=x>', '"><script>x</script>'):
            out = str(render(hostile, lambda i: "/odoo/pv_agent.entry/1"))
            self.assertNotIn("<script", out)
            self.assertNotIn("<img", out)
            self.assertNotIn("<iframe", out)
            self.assertNotIn("<svg", out)
            self.assertNotIn("href=\"javascript", out)
            self.assertNotIn("onerror=\"", out)
            self.assertNotIn("<b ", out)

    def test_markdown_subset(self):
        text = ("## Ergebnis\nDie Grenze beträgt **551,10 €** und _gilt_ *monatlich* `§ 5` [pv-sv-01].\n\n"
                "- eins\n  - zwei\n1. drei\n\n| Wert | 2026 |\n|---|---|\n| Grenze | 551,10 € |\n\n"
                "> ⚠ Hinweis\n\n```\ncode <x>\n```\n---")
        out = str(render(text, lambda i: f"/odoo/pv_agent.entry/{i}" if i == "pv-sv-01" else None))
        for piece in ("<h5>Ergebnis</h5>", "<strong>551,10 €</strong>", "<em>gilt</em>", "<em>monatlich</em>",
                      "<code>§ 5</code>", "<ul><li>eins<ul><li>zwei</li></ul></li></ul>", "<ol><li>drei</li></ol>",
                      "<th>Wert</th>", "<td>551,10 €</td>", "<blockquote><p>⚠ Hinweis</p></blockquote>",
                      "<pre><code>code &lt;x&gt;</code></pre>", "<hr>",
                      '<a href="/odoo/pv_agent.entry/pv-sv-01" class="o_pv_agent_cite" data-pv-entry="pv-sv-01">'):
            self.assertIn(piece, out)

    def test_only_known_citations_become_links(self):
        out = str(render("Siehe [pv-sv-01, pv-xx-99] und [⚠ pv-sz-01].",
                         lambda i: {"pv-sv-01": "/odoo/pv_agent.entry/5", "pv-sz-01": "/odoo/pv_agent.entry/6"}.get(i)))
        self.assertIn('href="/odoo/pv_agent.entry/5"', out)
        self.assertIn("pv-xx-99]", out)
        self.assertNotIn("pv_agent.entry/pv-xx-99", out)
        self.assertIn('⚠ <a href="/odoo/pv_agent.entry/6"', out)

    def test_a_citation_naming_its_cell_links_the_entry_and_shows_the_cell(self):
        # prompt v3: "[pv-gfb-02 · Betrag · 2026]" – the clerk sees where the figure stands
        out = str(render("551,10 € [pv-gfb-02 · Geringfügigkeitsgrenze <b>monatlich</b> · 2026; pv-xx-99 · X]",
                         lambda i: "/odoo/pv_agent.entry/7" if i == "pv-gfb-02" else None))
        self.assertIn('data-pv-entry="pv-gfb-02">pv-gfb-02</a> · <span class="o_pv_agent_cell text-muted">'
                      'Geringfügigkeitsgrenze &lt;b&gt;monatlich&lt;/b&gt; · 2026</span>', out)
        self.assertIn("; pv-xx-99 · X]", out)
        self.assertNotIn("<b>", out)
        # ids separated by "," beside one naming a cell: each is a link (the verifier's reading)
        out = str(render("[pv-sv-01, pv-sz-01; pv-gfb-02 · Betrag]", lambda i: f"/odoo/pv_agent.entry/{i}"))
        for cid in ("pv-sv-01", "pv-sz-01", "pv-gfb-02"):
            self.assertIn(f'data-pv-entry="{cid}">{cid}</a>', out)


@tagged("post_install", "-at_install")
class TestPanelData(PvAgentCase):
    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.Conversation = self.env["pv_agent.conversation"]

    def test_panel_loads_the_latest_conversation_with_rendered_answer(self):
        question = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD)
        data = self.Conversation.with_user(self.clerk).panel_load()
        conv = data["conversation"]
        self.assertEqual(conv["id"], question.conversation_id.id)
        self.assertEqual([m["role"] for m in conv["messages"]], ["question", "answer"])
        answer = conv["messages"][1]
        entry = self.Entry.search([("entry_id", "=", "pv-sv-01")])
        self.assertEqual(answer["citations"], [{"id": "pv-sv-01", "stand": "2026-01", "title": "Geringfügigkeitsgrenze",
                                                "record_id": entry.id, "supported": True}])
        self.assertIn(f'href="/odoo/pv_agent.entry/{entry.id}"', answer["html"])
        self.assertEqual(answer["state_line"]["level"], "success")
        self.assertEqual([c["id"] for c in data["conversations"]], [conv["id"]])
        # "Neues Gespräch": the panel asks for no conversation
        self.assertFalse(self.Conversation.with_user(self.clerk).panel_load(conversation_id=False)["conversation"])
        # another clerk's conversation is not loaded, whatever id the browser sends
        other = self.Conversation.with_user(self.clerk2).panel_load(conversation_id=conv["id"])
        self.assertFalse(other["conversation"])
        self.assertFalse(other["conversations"])
        with self.assertRaises(AccessError):
            self.Conversation.with_user(self.outsider).panel_load()

    def test_state_lines(self):
        question = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD)
        answer = question.answer_id
        data = json.loads(answer.answer_json)
        expected = {
            "answered": "success", "answered_after_retry": "success", "uncertain": "danger",
            "unanswered": "warning", "refused": "secondary", "off_topic": "secondary", "sources_only": "warning",
        }
        for state, level in expected.items():
            answer.sudo().state = state
            line = answer._state_line(data)
            self.assertEqual(line["level"], level, state)
            self.assertFalse(line["conflict"])
            self.assertTrue(line["text"])
            if state in ("answered", "answered_after_retry"):  # says what was checked, not a blanket claim
                self.assertIn("in den zitierten Einträgen geprüft", line["text"])
        data["flags"]["conflicts"] = [{"ids": ["pv-sz-01", "pv-sz-02"], "reason": "marked", "cited": ["pv-sz-01", "pv-sz-02"],
                                       "one_sided": False}]
        answer.sudo().state = "answered"
        line = answer._state_line(data)
        self.assertTrue(line["conflict"])
        self.assertTrue(line["text"].startswith("⚠"))
        self.assertIn("Conflict in the sources", line["text"])


@tagged("post_install", "-at_install")
class TestTranslations(PvAgentCase):
    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def test_german_po_covers_every_term(self):
        import os

        import polib

        i18n = os.path.join(os.path.dirname(os.path.dirname(__file__)), "i18n")
        pot = polib.pofile(os.path.join(i18n, "pv_agent.pot"))
        de = {e.msgid: e.msgstr for e in polib.pofile(os.path.join(i18n, "de.po"))}
        self.assertEqual(set(de), {e.msgid for e in pot}, "de.po and the .pot list the same terms")
        self.assertFalse([m for m, t in de.items() if not t.strip()], "every term is translated")
        # and the .pot is current: every term Odoo's exporter finds in the module (Python _(),
        # views, data, JS _t and templates) is in it
        from odoo.tools.translate import TranslationModuleReader

        terms = {source for _module, _type, _name, _res_id, source, _value, _comments
                 in TranslationModuleReader(self.env.cr, modules=["pv_agent"])}
        self.assertFalse(terms - set(de), "terms missing from i18n/pv_agent.pot and de.po")

    def test_german_speaking_users_see_german(self):
        entry_model = self.env["ir.model"]._get("pv_agent.entry").with_context(lang="de_DE")
        self.assertEqual(entry_model.name, "Wissensbasis-Eintrag")
        labels = self.env["pv_agent.message"].with_user(self.clerk).with_context(lang="de_DE").fields_get(["state"])
        self.assertIn(("uncertain", "Unsicher"), labels["state"]["selection"])
        menu = self.env.ref("pv_agent.menu_pv_agent_conversations").with_context(lang="de_DE")
        self.assertEqual(menu.name, "Gespräche")
        self.assertEqual(self.env.ref("pv_agent.menu_pv_agent_conversations").with_context(lang="en_US").name,
                         "Conversations")
        answer = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD).answer_id
        line = answer.with_context(lang="de_DE")._state_line()
        # says what was checked, in German, not a blanket "every statement is backed"
        self.assertRegex(line["text"], r"^Beantwortet: \d+ Zahlen? in den zitierten Einträgen geprüft")
