from odoo.tests import HttpCase, tagged

from ..services import index_access
from .common import TupleTimeoutMixin
from .ollama_api_server import OllamaAPIServer


@tagged("post_install", "-at_install")
class TestSettingsUi(TupleTimeoutMixin, HttpCase):
    def test_settings_tour(self):
        with OllamaAPIServer() as ollama:
            self.env["ir.config_parameter"].sudo().set_param("pv_agent.ollama_url", ollama.url)
            self.patch(index_access, "index_path", lambda dbname: "/nonexistent/pv_agent/index.db")
            self.start_tour("/odoo", "pv_agent_settings", login="admin")
        job = self.env["pv_agent.index.job"].search([("kind", "=", "reindex")])
        self.assertEqual(job.state, "queued")

    def test_settings_server_tour(self):
        """A stored API key never reaches the page; a remote URL shows the warning."""
        with OllamaAPIServer() as ollama:
            icp = self.env["ir.config_parameter"].sudo()
            icp.set_param("pv_agent.ollama_url", ollama.url)
            icp.set_param("pv_agent.llm_api_key", "sk-nie-im-browser")
            self.patch(index_access, "index_path", lambda dbname: "/nonexistent/pv_agent/index.db")
            self.start_tour("/odoo", "pv_agent_settings_server", login="admin")
