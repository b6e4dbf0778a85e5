import os

from odoo.exceptions import ValidationError
from odoo.tests import Form, tagged

from ..services import odoo_settings
from .common import PvAgentCase


@tagged("post_install", "-at_install")
class TestSettings(PvAgentCase):
    def settings_form(self):
        return Form(self.env["res.config.settings"].with_user(self.admin))

    def test_save_stores_parameters_and_engine_uses_them(self):
        form = self.settings_form()
        form.pv_agent_chat_model = "gemma3:27b"
        form.pv_agent_embed_model = "bge-m3"
        form.pv_agent_num_ctx = 16384
        form.pv_agent_top_k = 10
        form.pv_agent_kb_path = "/srv/wissensbasis"
        form.save().execute()
        icp = self.env["ir.config_parameter"].sudo()
        self.assertEqual(icp.get_param("pv_agent.chat_model"), "gemma3:27b")
        self.assertEqual(icp.get_param("pv_agent.num_ctx"), "16384")
        self.assertEqual(icp.get_param("pv_agent.kb_path"), "/srv/wissensbasis")
        settings = odoo_settings.engine_settings(self.env)
        self.assertEqual((settings.chat_model, settings.num_ctx, settings.top_k, settings.ollama_url),
                         ("gemma3:27b", 16384, 10, self.ollama.url))
        self.assertEqual(odoo_settings.kb_path(self.env), "/srv/wissensbasis")
        # the form shows what was saved
        form = self.settings_form()
        self.assertEqual((form.pv_agent_chat_model, form.pv_agent_top_k), ("gemma3:27b", 10))

    def test_embedder_choice_reaches_the_engine(self):
        form = self.settings_form()
        form.pv_agent_embedder = "builtin"
        form.save().execute()
        self.assertEqual(self.env["ir.config_parameter"].sudo().get_param("pv_agent.embedder"), "builtin")
        self.assertEqual(odoo_settings.engine_settings(self.env).embedder, "builtin")
        form = self.settings_form()
        form.pv_agent_embedder = "none"
        form.save().execute()
        self.assertEqual(odoo_settings.engine_settings(self.env).embedder, "none")

    def test_defaults_point_at_the_bundled_knowledge_base(self):
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", False)
        self.assertTrue(odoo_settings.DEFAULT_KB_PATH.endswith("/wissensbasis"))
        self.assertEqual(odoo_settings.kb_path(self.env), odoo_settings.DEFAULT_KB_PATH)
        self.assertEqual(self.settings_form().pv_agent_kb_path, odoo_settings.DEFAULT_KB_PATH)

    def test_connection_test_lists_models_and_checks_configured_ones(self):
        settings = self.settings_form().save()
        result = settings.action_pv_agent_test_connection()
        self.assertEqual(result["params"]["type"], "success")
        self.assertEqual(result["models"], ["bge-m3:latest", "qwen3.8:27b"])
        self.assertIn("bge-m3:latest", result["params"]["message"])

        form = self.settings_form()
        form.pv_agent_chat_model = "llama-gibt-es-nicht"
        result = form.save().action_pv_agent_test_connection()
        self.assertEqual(result["params"]["type"], "warning")
        self.assertEqual(result["missing"], ["llama-gibt-es-nicht"])
        self.assertIn("missing: llama-gibt-es-nicht", result["params"]["message"])  # admin: English

    def test_connection_test_reports_unreachable_server(self):
        form = self.settings_form()
        form.pv_agent_ollama_url = "http://127.0.0.1:9"  # discard port: nothing listens
        result = form.save().action_pv_agent_test_connection()
        self.assertEqual(result["params"]["type"], "danger")
        self.assertIn("nicht erreichbar", result["params"]["message"])

    def test_status_without_index(self):
        settings = self.settings_form().save()
        self.assertFalse(settings.pv_agent_index_exists)
        self.assertTrue(settings.pv_agent_index_stale)
        self.assertEqual(settings.pv_agent_index_entries, 0)

    def test_manager_without_admin_rights_uses_actions_outside_settings(self):
        # managers who are not Settings admins import and reindex from the PV-Agent menu
        job = self.env.ref("pv_agent.action_pv_agent_entry_import").with_user(self.manager).run()
        self.assertEqual(job["res_model"], "pv_agent.index.job")
        action = self.env.ref("pv_agent.action_pv_agent_entry_reindex").with_user(self.manager).run()
        self.assertEqual(action["tag"], "display_notification")

    def test_invalid_values_are_refused(self):
        for field, value in (("pv_agent_ollama_url", "localhost:11434"), ("pv_agent_num_ctx", 512),
                             ("pv_agent_top_k", 500)):
            with self.subTest(field=field), self.assertRaises(ValidationError):
                form = self.settings_form()
                setattr(form, field, value)
                form.save()

    def test_status_names_a_damaged_index(self):
        os.makedirs(os.path.dirname(self.sidecar), exist_ok=True)
        with open(self.sidecar, "wb") as f:
            f.write(b"kein SQLite")
        settings = self.settings_form().save()
        self.assertFalse(settings.pv_agent_index_exists)
        self.assertIn(self.sidecar, settings.pv_agent_index_problem)
