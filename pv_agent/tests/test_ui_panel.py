"""Tours in Chromium: the systray panel, feedback and review, Discuss, chatter, no access.

``PV_AGENT_SCREENSHOTS=docs/screenshots tools/test-odoo -k Ui`` also writes the screenshots
of docs/odoo.md ("Using PV-Agent")."""
import json

from odoo.tests import new_test_user, tagged

from ..services import odoo_settings
from .common import PvAgentHttpCase
from .ollama_api_server import Reply

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
# worded as the sample knowledge base words it today (pv-sv-13: a Moore preview, superseded by the ÖGK)
BOTH_SIDES = (
    "Für 2025 nennen die Quellen für die mittleren Stufen der AV-Staffel unterschiedliche Sätze "
    "(Stand 2025-01) [pv-sv-12, pv-sv-13]:\n\n"
    "- ⚠ **ÖGK:** 1 % bis 2.262 € und 2 % bis 2.451 € monatlicher Beitragsgrundlage (Stand 2025-01) [pv-sv-12]\n"
    "- ⚠ **Moore-Vorschau (überholt):** 0,95 % und 1,95 % (Stand 2025-01) [pv-sv-13]\n\n"
    "Maßgeblich sind die von der **ÖGK** veröffentlichten Werte [pv-sv-12]."
)


@tagged("post_install", "-at_install")
class TestPanelUi(PvAgentHttpCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.contact_clerk = new_test_user(cls.env, "pv_clerk_contacts", name="Carla Contacts",
                                          groups="pv_agent.group_user,base.group_partner_manager")
        cls.contact_outsider = new_test_user(cls.env, "pv_outsider_contacts", name="Olga Outsider",
                                             groups="base.group_user,base.group_partner_manager")
        cls.anna = cls.env["res.partner"].create({"name": "Anna Angestellte", "street": "Lohngasse 7"})

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()

    def bot_posts(self, record):
        return self.env["mail.message"].search([("model", "=", record._name), ("res_id", "=", record.id),
                                                ("author_id", "=", self.bot.id)])

    def test_panel_tour(self):
        self.run_answers_in_background(after_panel_shows_pending=True)
        self.ollama.script(GOOD)
        self.start_tour("/odoo", "pv_agent_panel", login="pv_clerk")
        question = self.env["pv_agent.message"].search([("role", "=", "question"), ("author_id", "=", self.clerk.id)])
        self.assertEqual(question.state, "done")
        self.assertEqual(question.answer_id.state, "answered")

    def test_sources_tour(self):
        """A model that takes several seconds: the source chips are on screen before the answer."""
        self.run_answers_in_background(after_panel_shows_pending=True)
        self.ollama.script(Reply(content=GOOD, delay=4.0))
        self.start_tour("/odoo", "pv_agent_sources", login="pv_clerk")
        question = self.env["pv_agent.message"].search([("role", "=", "question"), ("author_id", "=", self.clerk.id)])
        self.assertEqual(question.answer_id.state, "answered")
        self.assertEqual(json.loads(question.sources_json)[0]["id"], "pv-sv-01")

    def test_cancel_tour(self):
        """No answer worker runs: the clerk cancels the waiting question in the panel."""
        self.start_tour("/odoo", "pv_agent_cancel", login="pv_clerk")
        question = self.env["pv_agent.message"].search([("role", "=", "question"), ("author_id", "=", self.clerk.id)])
        self.assertEqual((question.state, question.cancelled_by_id), ("cancelled", self.clerk))
        self.assertFalse(self.ollama.requests_to("/api/chat"))

    def test_feedback_and_review_tours(self):
        answer = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD).answer_id
        self.start_tour("/odoo", "pv_agent_feedback", login="pv_clerk")
        feedback = self.env["pv_agent.feedback"].search([("message_id", "=", answer.id)])
        self.assertEqual(sorted(feedback.mapped("kind")), ["correction", "down"])
        self.start_tour("/odoo/action-pv_agent.action_pv_agent_feedback_review", "pv_agent_review", login="pv_manager")
        correction = feedback.filtered(lambda f: f.kind == "correction")
        self.assertEqual((correction.state, correction.reviewer_id), ("accepted", self.manager))

    def test_discuss_tour(self):
        self.run_answers_in_background()
        self.ollama.script(GOOD)
        self.start_tour("/odoo/action-pv_agent.action_pv_agent_conversation", "pv_agent_discuss", login="pv_clerk")

    def test_chatter_tour(self):
        self.run_answers_in_background()
        self.ollama.script(GOOD)
        self.start_tour(f"/odoo/res.partner/{self.anna.id}", "pv_agent_chatter", login="pv_clerk_contacts")
        note = self.bot_posts(self.anna)
        self.assertEqual(note.subtype_id, self.env.ref("mail.mt_note"))

    def test_no_access_tour(self):
        self.run_answers_in_background()
        self.start_tour(f"/odoo/res.partner/{self.anna.id}", "pv_agent_no_access", login="pv_outsider_contacts")
        self.assertTrue(self.env["mail.message"].search([("model", "=", "res.partner"), ("res_id", "=", self.anna.id),
                                                         ("body", "ilike", "Geringfügigkeitsgrenze 2026")]))
        self.assertFalse(self.env["pv_agent.message"].search([]), "nothing was queued")
        self.assertFalse(self.bot_posts(self.anna), "and nothing answered")

    def test_conflict_tour_on_the_sample_knowledge_base(self):
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", odoo_settings.DEFAULT_KB_PATH)
        self.import_kb()
        self.reindex()
        self.run_answers_in_background(after_panel_shows_pending=True)
        self.ollama.script(BOTH_SIDES)
        self.start_tour("/odoo/action-pv_agent.action_pv_agent_entry", "pv_agent_conflict", login="pv_clerk")
        answer = self.env["pv_agent.message"].search([("role", "=", "answer")])
        self.assertEqual(answer.state, "answered")
        self.assertEqual(answer.citation_entry_ids.mapped("entry_id"), ["pv-sv-12", "pv-sv-13"])

    def test_drift_tour(self):
        answer = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD).answer_id
        entry = self.Entry.search([("entry_id", "=", "pv-sv-01")])
        entry.with_user(self.manager).body = entry.body.replace(
            "| Geringfügigkeitsgrenze monatlich | 551,10 € | 551,10 € |",
            "| Geringfügigkeitsgrenze monatlich | 551,10 € | 556,81 € |")
        self.reindex()  # and the drift check queued after it
        self.assertEqual(answer.drift_state, "changed")
        self.run_answers_in_background(after_panel_shows_pending=True)
        self.ollama.script("Die Geringfügigkeitsgrenze beträgt 2026 monatlich 556,81 € (Stand 2026-01) [pv-sv-01].")
        self.start_tour("/odoo/action-pv_agent.action_pv_agent_conversation", "pv_agent_drift", login="pv_clerk")
        new = self.env["pv_agent.message"].search([("reask_of_id", "=", answer.id)]).answer_id
        self.assertEqual((new.state, new.drift_state), ("answered", "unchanged"))

    def test_reuse_tour(self):
        """A colleague's checked answer reused (no model call), labelled; "Neu beantworten" asks the model."""
        first = self.ask_as(self.clerk2, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD).answer_id
        self.ollama.requests.clear()
        self.run_answers_in_background()
        self.ollama.script("Die Geringfügigkeitsgrenze 2026 liegt bei 551,10 € im Monat (Stand 2026-01) [pv-sv-01].")
        self.start_tour("/odoo", "pv_agent_reuse", login="pv_clerk")
        answers = self.env["pv_agent.message"].search([("role", "=", "answer"), ("author_id", "=", self.clerk.id)])
        self.assertEqual(len(answers), 2)
        self.assertEqual(answers[0].sudo().reused_from_id, first)
        self.assertFalse(answers[1].sudo().reused_from_id)
        self.assertEqual(len(self.ollama.requests_to("/api/chat")), 1, "only the fresh answer asked the model")
