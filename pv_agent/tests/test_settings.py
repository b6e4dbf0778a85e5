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


@tagged("post_install", "-at_install")
class TestModelServerSettings(PvAgentCase):
    """The server API (Ollama or OpenAI-compatible), its API key and the warning for a remote URL."""

    def settings_form(self):
        return Form(self.env["res.config.settings"].with_user(self.admin))

    def test_openai_api_and_key_reach_the_engine_but_never_the_form(self):
        form = self.settings_form()
        form.pv_agent_llm_api = "openai"
        form.pv_agent_llm_api_key = "sk-geheim-123"
        form.save().execute()
        icp = self.env["ir.config_parameter"].sudo()
        self.assertEqual(icp.get_param(odoo_settings.PARAM_API_KEY), "sk-geheim-123")
        settings = odoo_settings.engine_settings(self.env)
        self.assertEqual((settings.llm_api, settings.llm_api_key), ("openai", "sk-geheim-123"))
        # what the browser gets when it opens Settings: defaults, the onchange values, a read
        Settings = self.env["res.config.settings"].with_user(self.admin)
        names = list(Settings._fields)
        self.assertNotIn("sk-geheim-123", repr(Settings.default_get(names)))
        record = Settings.create({})
        self.assertNotIn("sk-geheim-123", repr(record.read(names)))
        self.assertNotIn("sk-geheim-123", repr(Settings.onchange({}, [], {n: {} for n in names})))
        self.assertTrue(record.pv_agent_llm_api_key_set)
        # saving the form again without a new key keeps the stored one
        form = self.settings_form()
        self.assertFalse(form.pv_agent_llm_api_key)
        form.save().execute()
        self.assertEqual(icp.get_param(odoo_settings.PARAM_API_KEY), "sk-geheim-123")
        form.save().action_pv_agent_clear_api_key()
        self.assertFalse(icp.get_param(odoo_settings.PARAM_API_KEY))
        self.assertFalse(self.settings_form().save().pv_agent_llm_api_key_set)

    def test_connection_test_over_the_openai_api(self):
        from .openai_api_server import OpenAIAPIServer

        with OpenAIAPIServer(api_key="sk-vllm") as server:
            form = self.settings_form()
            form.pv_agent_llm_api = "openai"
            form.pv_agent_ollama_url = server.url + "/v1"
            result = form.save().action_pv_agent_test_connection()
            self.assertEqual(result["params"]["type"], "danger")  # no key yet: HTTP 401
            self.assertIn("API-Schlüssel", result["params"]["message"])
            form.pv_agent_llm_api_key = "sk-vllm"  # the key typed on the form is tried before saving
            result = form.save().action_pv_agent_test_connection()
            self.assertEqual(result["params"]["type"], "success", result["params"]["message"])
            self.assertEqual(result["models"], ["bge-m3", "qwen3.8:27b"])
            self.assertIn("Model server reachable", result["params"]["message"])
            self.assertEqual(server.requests[-1]["path"], "/v1/models")

    def test_a_url_outside_the_local_network_is_warned_about(self):
        form = self.settings_form()
        for url in ("http://localhost:11434", "http://10.0.0.7:8000/v1", "http://ollama:11434"):
            form.pv_agent_ollama_url = url
            self.assertFalse(form.pv_agent_url_warning, url)
        form.pv_agent_ollama_url = "https://llm.example.com/v1"
        self.assertIn("personal data", form.pv_agent_url_warning)
        german = Form(self.env["res.config.settings"].with_user(self.admin).with_context(lang="de_DE"))
        german.pv_agent_ollama_url = "https://llm.example.com/v1"
        self.assertIn("personenbezogene Daten", german.pv_agent_url_warning)
