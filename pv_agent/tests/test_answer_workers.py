"""Settings → "Answers computed at once" (issue 31, item 4): as many active answer crons as set,
each woken by a question; the form says what Odoo's cron workers leave of it."""
from odoo.exceptions import AccessError, ValidationError
from odoo.tests import Form, tagged

from ..services import answer_crons
from .common import PvAgentCase

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."


@tagged("post_install", "-at_install")
class TestAnswerWorkers(PvAgentCase):
    def save(self, count):
        form = Form(self.env["res.config.settings"].with_user(self.admin))
        form.pv_agent_answer_workers = count
        form.save().execute()

    def active(self):
        return self.env["ir.cron"].with_context(active_test=False).search(
            [("code", "=", answer_crons.CODE), ("active", "=", True)])

    def triggers(self):
        return self.env["ir.cron.trigger"].search_count([("cron_id.code", "=", answer_crons.CODE)])

    def test_the_shipped_two_by_default(self):
        self.assertEqual(answer_crons.wanted(self.env), 2)
        self.assertEqual(self.active(), self.env.ref("pv_agent.ir_cron_pv_agent_answer")
                         | self.env.ref("pv_agent.ir_cron_pv_agent_answer_2"))
        self.assertEqual(Form(self.env["res.config.settings"].with_user(self.admin)).pv_agent_answer_workers, 2)

    def test_saving_creates_and_archives_answer_crons_and_asking_wakes_the_active_ones(self):
        self.save(4)
        self.assertEqual(self.env["ir.config_parameter"].sudo().get_param(answer_crons.PARAM), "4")
        crons = self.active()
        self.assertEqual(len(crons), 4)
        self.assertEqual(set(crons.mapped("code")), {"model._cron_answer_pending()"})
        self.assertEqual(set(crons.mapped("model_id.model")), {"pv_agent.message"})
        third = self.env.ref("pv_agent.ir_cron_pv_agent_answer_3")
        self.assertIn(third, crons)
        self.assertTrue(self.env["ir.model.data"].search([("module", "=", "pv_agent"),
                                                          ("name", "=", "ir_cron_pv_agent_answer_4")]).noupdate,
                        "a module update must not delete the crons the Settings created")
        before = self.triggers()
        self.env["pv_agent.conversation"].with_user(self.clerk).action_ask("Wie hoch ist die Geringfügigkeitsgrenze?")
        self.assertEqual(self.triggers(), before + 4, "asking wakes each of the four")

        self.save(1)
        self.assertEqual(self.active(), self.env.ref("pv_agent.ir_cron_pv_agent_answer"))
        self.assertFalse(third.active, "the surplus is archived, not deleted")
        before = self.triggers()
        self.env["pv_agent.conversation"].with_user(self.clerk).action_ask("Und 2025?")
        self.assertEqual(self.triggers(), before + 1, "an archived answer cron is not woken")

        self.save(3)
        self.assertEqual(len(self.active()), 3)
        self.assertTrue(third.active, "reactivated, not created again")
        self.assertEqual(self.env["ir.cron"].with_context(active_test=False).search_count(
            [("code", "=", answer_crons.CODE)]), 4)

    def test_a_question_is_answered_by_a_cron_the_settings_created(self):
        self.save(3)
        self.import_kb()
        self.reindex()
        self.ollama.script(GOOD)
        asked = self.env["pv_agent.conversation"].with_user(self.clerk).action_ask(
            "Wie hoch ist die Geringfügigkeitsgrenze 2026?")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer_3")
        question = self.env["pv_agent.message"].browse(asked["message_id"])
        self.assertEqual(question.state, "done")
        self.assertTrue(question.answer_id)

    def test_out_of_range_is_refused(self):
        for count in (0, answer_crons.MAXIMUM + 1):
            with self.subTest(count=count), self.assertRaises(ValidationError):
                self.save(count)
        self.assertEqual(len(self.active()), 2)

    def test_a_hand_written_parameter_cannot_stop_answers(self):
        icp = self.env["ir.config_parameter"].sudo()
        for raw, expected in (("0", 1), ("-3", 1), ("viele", 2), ("99", answer_crons.MAXIMUM)):
            icp.set_param(answer_crons.PARAM, raw)
            self.assertEqual(answer_crons.wanted(self.env), expected, raw)

    def test_the_form_explains_what_odoos_cron_workers_leave(self):
        def shown(count, threads):
            self.patch(answer_crons, "cron_threads", lambda: threads)
            form = Form(self.env["res.config.settings"].with_user(self.admin))
            form.pv_agent_answer_workers = count
            return form.pv_agent_answer_parallel, form.pv_agent_answer_parallel_short

        text, short = shown(2, 4)
        self.assertFalse(short)
        self.assertIn("Up to 2 questions", text)
        self.assertIn("max_cron_threads = 4", text)
        self.assertIn("reindex", text)
        text, short = shown(4, 2)
        self.assertTrue(short)
        self.assertIn("2 of the 4 answer jobs", text)
        text, short = shown(1, 0)
        self.assertIn("no question is answered", text)
        self.assertEqual(answer_crons.effective(5, 3), 3)
        self.assertEqual(answer_crons.effective(2, 3), 2)

    def test_only_administrators_save_it(self):
        with self.assertRaises(AccessError):
            Form(self.env["res.config.settings"].with_user(self.manager))
        self.assertEqual(len(self.active()), 2)
