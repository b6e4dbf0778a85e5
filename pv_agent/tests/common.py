"""Shared setup of the Odoo tests: users in each role, a copy of the test knowledge base,
the sidecar in a temporary folder and the Ollama-API test server as the one outside seam."""
from __future__ import annotations

import base64
import os
import shutil
import tempfile
import threading
import time

from odoo import SUPERUSER_ID, api
from odoo.tests import HttpCase, TransactionCase, new_test_user
from odoo.tests.common import ChromeBrowser

from ..services import index_access
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


class PvAgentSetup:
    """Users, the Ollama-API test server, a private sidecar and knowledge base per test."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="pv_agent_test_")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)

        cls.ollama = OllamaAPIServer().start()
        cls.addClassCleanup(cls.ollama.stop)
        icp = cls.env["ir.config_parameter"].sudo()
        icp.set_param("pv_agent.ollama_url", cls.ollama.url)
        # Embeddings from the Ollama test server only: with "auto" an unreachable one would fall
        # back to the built-in model, which embeds on the CPU (tests of that choice set it).
        icp.set_param("pv_agent.embedder", "ollama")

        # German-speaking clerks and manager get the German UI (i18n/de.po); clerk2 and admin English
        cls.env["res.lang"]._activate_lang("de_DE")
        cls.env.ref("base.module_pv_agent")._update_translations("de_DE")
        cls.clerk = new_test_user(cls.env, "pv_clerk", groups="pv_agent.group_user", name="Clara Clerk", lang="de_DE")
        cls.clerk2 = new_test_user(cls.env, "pv_clerk2", groups="pv_agent.group_user", name="Conrad Clerk")
        cls.manager = new_test_user(cls.env, "pv_manager", groups="pv_agent.group_manager", name="Maria Manager",
                                    lang="de_DE")
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
        self.patch(index_access, "index_path", lambda dbname: self.sidecar)
        self.addCleanup(index_access.forget_indexes)
        self.kb_dir = tempfile.mkdtemp(prefix="kb_", dir=self.tmp)
        shutil.copytree(KB_FIXTURE, self.kb_dir, dirs_exist_ok=True)
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", self.kb_dir)

    # -- helpers --------------------------------------------------------------------------
    def import_kb(self):
        # as from the manager's browser: the request's context carries their language
        return self.Entry.with_user(self.manager).with_context(lang=self.manager.lang).action_import_knowledge_base()

    def run_cron(self, xmlid):
        """Run a cron as the scheduler would: in its own (test) cursor, with commits."""
        with self.enter_registry_test_mode():
            self.env.ref(xmlid).method_direct_trigger()
        self.env.invalidate_all()

    def ask_as(self, user, question, *replies):
        """The clerk asks in the panel; the job answers with the scripted model replies."""
        self.ollama.script(*replies)
        asked = self.env["pv_agent.conversation"].with_user(user).action_ask(question)
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        return self.env["pv_agent.message"].browse(asked["message_id"])

    def reindex(self):
        self.Job.with_user(self.manager).action_queue_reindex()
        self.run_cron("pv_agent.ir_cron_pv_agent_reindex")
        return self.Job.search([("kind", "=", "reindex")], limit=1)

    def write_kb_file(self, name, text):
        with open(os.path.join(self.kb_dir, "dokumente", name), "w", encoding="utf-8") as f:
            f.write(text)


class PvAgentCase(TupleTimeoutMixin, PvAgentSetup, TransactionCase):
    pass


class PvAgentHttpCase(TupleTimeoutMixin, PvAgentSetup, HttpCase):
    """Tours. The answering cron runs the way Odoo's cron worker runs it — in its own cursor,
    in another thread, a moment after ``_trigger()`` — so the browser sees the pending
    state first and then the answer arriving over the bus."""

    # the job starts this long after the panel showed the question pending (longer when the
    # tours take screenshots, so that the pending state is on the picture)
    CRON_DELAY = 3.0 if os.environ.get("PV_AGENT_SCREENSHOTS") else 0.5
    SCREENSHOT_SIGNAL = "pv_agent:screenshot:"

    def start_tour(self, url_path, tour_name, step_delay=None, **kwargs):
        """Tours log ``pv_agent:screenshot:<name>`` where a picture belongs in the docs; with
        ``PV_AGENT_SCREENSHOTS=<folder>`` each becomes ``<folder>/<name>.png``."""
        folder = os.environ.get("PV_AGENT_SCREENSHOTS")
        if not folder:
            return super().start_tour(url_path, tour_name, step_delay, **kwargs)
        os.makedirs(folder, exist_ok=True)
        handle_console = ChromeBrowser._handle_console
        signal = self.SCREENSHOT_SIGNAL

        def save(name, future):
            data = future.result().get("data")
            if data:
                with open(os.path.join(folder, f"{name}.png"), "wb") as f:
                    f.write(base64.b64decode(data))

        def watched(browser, type, args=None, stackTrace=None, **kw):  # noqa: A002 - CDP's name
            text = str((args or [{}])[0].get("value", ""))
            if type == "log" and text.startswith(signal):
                name = text[len(signal):]
                future = browser._websocket_send("Page.captureScreenshot", with_future=True)
                future.add_done_callback(lambda f: save(name, f))
                return None
            return handle_console(browser, type, args, stackTrace, **kw)

        self.patch(ChromeBrowser, "_handle_console", watched)
        return super().start_tour(url_path, tour_name, step_delay, **kwargs)

    def run_cron(self, xmlid):
        self.env.ref(xmlid).method_direct_trigger()  # HttpCase is in registry test mode already
        self.env.invalidate_all()

    def run_answers_in_background(self, after_panel_shows_pending=False):
        """Answer triggered questions in a thread. With ``after_panel_shows_pending`` the job
        waits until the panel has loaded the question while it was still pending (in
        production the job takes seconds; here the browser's next request would otherwise
        wait for the test cursor the job holds)."""
        Cron = type(self.env["ir.cron"])
        original = Cron._trigger
        answer_cron = self.env.ref("pv_agent.ir_cron_pv_agent_answer").id
        threads = []
        shown_pending = threading.Event()
        if not after_panel_shows_pending:
            shown_pending.set()
        else:
            Conversation = type(self.env["pv_agent.conversation"])
            panel_load = Conversation.panel_load

            @api.model
            def watched_panel_load(conv, conversation_id=None):
                data = panel_load(conv, conversation_id)
                if any(m.get("pending") for m in (data["conversation"] or {}).get("messages", [])):
                    shown_pending.set()
                return data

            self.patch(Conversation, "panel_load", watched_panel_load)

        def job():
            shown_pending.wait(20)
            time.sleep(self.CRON_DELAY)
            with self.registry.cursor() as cr:
                api.Environment(cr, SUPERUSER_ID, {})["pv_agent.message"]._cron_answer_pending()

        def trigger(cron, at=None):
            if cron.ids != [answer_cron]:
                return original(cron, at)
            thread = threading.Thread(target=job, name="pv_agent test cron")
            threads.append(thread)
            thread.start()

        self.patch(Cron, "_trigger", trigger)
        self.addCleanup(lambda: [t.join(30) for t in threads])
