"""Shared setup of the Odoo tests: users in each role, a copy of the test knowledge base,
the sidecar in a temporary folder and the Ollama-API test server as the one outside seam."""
from __future__ import annotations

import os
import shutil
import tempfile

from odoo.tests import TransactionCase, new_test_user

from ..models import engine_bridge
from .ollama_api_server import OllamaAPIServer

KB_FIXTURE = os.path.join(os.path.dirname(__file__), "data", "kb")


class TupleTimeoutMixin:
    @classmethod
    def _request_handler(cls, s, r, /, **kw):
        # Odoo's test guard on outgoing requests compares ``timeout < 10`` and breaks on the
        # (connect, read) tuples the Ollama client sends; give it the larger of the two.
        if isinstance(kw.get("timeout"), tuple):
            kw["timeout"] = max(t for t in kw["timeout"] if t is not None)
        return super()._request_handler(s, r, **kw)


class PvAgentCase(TupleTimeoutMixin, TransactionCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="pv_agent_test_")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

        cls.ollama = OllamaAPIServer().start()
        cls.addClassCleanup(cls.ollama.stop)
        icp = cls.env["ir.config_parameter"].sudo()
        icp.set_param("pv_agent.ollama_url", cls.ollama.url)

        cls.clerk = new_test_user(cls.env, "pv_clerk", groups="pv_agent.group_user", name="Clara Clerk")
        cls.clerk2 = new_test_user(cls.env, "pv_clerk2", groups="pv_agent.group_user", name="Conrad Clerk")
        cls.manager = new_test_user(cls.env, "pv_manager", groups="pv_agent.group_manager", name="Maria Manager")
        cls.outsider = new_test_user(cls.env, "pv_outsider", groups="base.group_user", name="Otto Outsider")
        cls.admin = cls.env.ref("base.user_admin")
        cls.Entry = cls.env["pv_agent.entry"]
        cls.Job = cls.env["pv_agent.index.job"]

    def setUp(self):
        super().setUp()
        self.ollama.replies.clear()
        self.ollama.requests.clear()
        self.ollama.embed_status = 200
        # each test gets its own sidecar and its own copy of the test knowledge base to change
        self.sidecar = os.path.join(tempfile.mkdtemp(prefix="index_", dir=self.tmp), "index.db")
        self.patch(engine_bridge, "index_path", lambda dbname: self.sidecar)
        self.addCleanup(engine_bridge.forget_indexes)
        self.kb_dir = tempfile.mkdtemp(prefix="kb_", dir=self.tmp)
        shutil.copytree(KB_FIXTURE, self.kb_dir, dirs_exist_ok=True)
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", self.kb_dir)

    # -- helpers --------------------------------------------------------------------------
    def import_kb(self):
        return self.Entry.with_user(self.manager).action_import_knowledge_base()

    def run_cron(self, xmlid):
        """Run a cron as the scheduler would: in its own (test) cursor, with commits."""
        with self.enter_registry_test_mode():
            self.env.ref(xmlid).method_direct_trigger()
        self.env.invalidate_all()

    def reindex(self):
        self.Job.with_user(self.manager).action_queue_reindex()
        self.run_cron("pv_agent.ir_cron_pv_agent_reindex")
        return self.Job.search([("kind", "=", "reindex")], limit=1)

    def write_kb_file(self, name, text):
        with open(os.path.join(self.kb_dir, "dokumente", name), "w", encoding="utf-8") as f:
            f.write(text)
