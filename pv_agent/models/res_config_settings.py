"""Settings → PV-Agent: the model server (Ollama or OpenAI-compatible), models, retrieval,
knowledge-base folder, index status."""
from __future__ import annotations

from datetime import datetime, timezone

from odoo import api, fields, models
from odoo.exceptions import AccessError, ValidationError

from ..services.engine_calls import OllamaError, make_client, url_is_local
from ..services import answer_crons, index_access, odoo_settings

D = odoo_settings.DEFAULTS


class ResConfigSettings(models.TransientModel):
    _inherit = "res.config.settings"

    pv_agent_llm_api = fields.Selection(
        [("ollama", "Ollama"), ("openai", "OpenAI-compatible (vLLM, llama.cpp server, LM Studio, LocalAI, TGI)")],
        string="Server API", config_parameter="pv_agent.llm_api", default=D.llm_api,
        help="Ollama's own API (/api/chat), or the OpenAI-compatible API (/v1/chat/completions, /v1/embeddings) "
             "that vLLM, llama.cpp's llama-server, LM Studio, LocalAI and TGI serve.")
    pv_agent_ollama_url = fields.Char("Server URL", config_parameter="pv_agent.ollama_url", default=D.ollama_url)
    pv_agent_url_warning = fields.Char("Server outside the local network", compute="_compute_pv_agent_url_warning")
    # The API key is a system parameter (odoo_settings.PARAM_API_KEY) that the form never reads:
    # this field only takes a new key, and is empty whenever the form is loaded.
    pv_agent_llm_api_key = fields.Char(
        "New API key", help="Sent as a Bearer token to an OpenAI-compatible server (vLLM --api-key, LocalAI, ...). "
                            "It is stored on the server and never shown again; leave empty to keep the stored key.")
    pv_agent_llm_api_key_set = fields.Boolean("API key stored", compute="_compute_pv_agent_llm_api_key_set")
    pv_agent_chat_model = fields.Char("Language model", config_parameter="pv_agent.chat_model", default=D.chat_model)
    pv_agent_embedder = fields.Selection(
        [("auto", "Automatic (Ollama, else the built-in model)"), ("ollama", "Ollama"),
         ("builtin", "Built-in model (multilingual-e5-small)"), ("none", "None (lexical search only)")],
        string="Embeddings", config_parameter="pv_agent.embedder", default=D.embedder)
    pv_agent_embed_model = fields.Char("Embedding model", config_parameter="pv_agent.embed_model",
                                       default=D.embed_model)
    pv_agent_num_ctx = fields.Integer("Context window (num_ctx)", config_parameter="pv_agent.num_ctx",
                                      default=D.num_ctx)
    pv_agent_top_k = fields.Integer("Sources per answer (top-k)", config_parameter="pv_agent.top_k",
                                    default=D.top_k)
    pv_agent_kb_path = fields.Char("Knowledge-base folder", config_parameter=odoo_settings.PARAM_KB_PATH,
                                   default=lambda self: odoo_settings.DEFAULT_KB_PATH)
    pv_agent_export_to_folder = fields.Boolean(
        "Managers may write edited entries into the folder", config_parameter="pv_agent.export_to_folder",
        help="Entries edited in Odoo are written back as markdown files into the knowledge-base folder "
             "(when Odoo may write there). Off: managers download them and commit them themselves.")

    pv_agent_max_pending = fields.Integer(
        "Waiting questions per user", config_parameter="pv_agent.max_pending_per_user", default=3,
        help="How many questions one user may have waiting for an answer at a time.")
    pv_agent_time_warning = fields.Char("Time limits", compute="_compute_pv_agent_time_warning")
    pv_agent_answer_workers = fields.Integer(
        "Answers computed at once", config_parameter=answer_crons.PARAM, default=answer_crons.DEFAULT,
        help="One answer job per question answered in parallel (1-16). Odoo runs at most max_cron_threads "
             "scheduled jobs at once, and the model server must serve as many requests in parallel "
             "(Ollama: OLLAMA_NUM_PARALLEL; vLLM: --max-num-seqs; llama.cpp: --parallel).")
    pv_agent_answer_parallel = fields.Char("Parallel answers", compute="_compute_pv_agent_answer_parallel")
    pv_agent_answer_parallel_short = fields.Boolean("Fewer answer jobs run than set",
                                                    compute="_compute_pv_agent_answer_parallel")
    pv_agent_answer_cache_size = fields.Integer(
        "Checked answers kept for reuse", config_parameter="pv_agent.answer_cache_size", default=2000,
        help="An identical question on the same entries and model gets a kept checked answer without a model call. "
             "At most this many are kept, the least recently used dropped; 0 turns reuse off.")

    pv_agent_index_entries = fields.Integer("Entries in the index", compute="_compute_pv_agent_index")
    pv_agent_index_chunks = fields.Integer("Sections in the index", compute="_compute_pv_agent_index")
    pv_agent_index_vectors = fields.Boolean("Vectors present", compute="_compute_pv_agent_index")
    pv_agent_index_built_at = fields.Datetime("Built on", compute="_compute_pv_agent_index")
    pv_agent_index_generation = fields.Integer("Generation", compute="_compute_pv_agent_index")
    pv_agent_index_exists = fields.Boolean("Index present", compute="_compute_pv_agent_index")
    pv_agent_index_stale = fields.Boolean("Index out of date", compute="_compute_pv_agent_index")
    pv_agent_index_problem = fields.Char("Problem with the index", compute="_compute_pv_agent_index")
    pv_agent_last_job_id = fields.Many2one("pv_agent.index.job", "Last run", compute="_compute_pv_agent_index")
    pv_agent_entry_count = fields.Integer("Active entries", compute="_compute_pv_agent_index")

    @api.model
    def default_get(self, fields):
        # Odoo hands config parameters to anyone who asks for the defaults of these fields;
        # PV-Agent's (Ollama URL, knowledge-base folder, index state) are for administrators.
        if (not self.env.su and any(f.startswith("pv_agent_") for f in fields or ())
                and not self.env.user.has_group("base.group_system")):
            raise AccessError(self.env._("Only administrators may read the PV-Agent settings."))
        return super().default_get(fields)

    @api.depends_context("uid")
    def _compute_pv_agent_index(self):
        stats = index_access.index_stats(self.env.cr.dbname, self.env) or {}
        Job = self.env["pv_agent.index.job"].sudo()
        last = Job.search([("kind", "in", ("import", "reindex"))], limit=1)  # not the drift check after it
        stale = Job._index_is_stale()
        count = self.env["pv_agent.entry"].sudo().search_count([])
        for rec in self:
            rec.pv_agent_index_problem = stats.get("problem", False)
            rec.pv_agent_index_exists = bool(stats) and not rec.pv_agent_index_problem
            rec.pv_agent_index_entries = stats.get("entries", 0)
            rec.pv_agent_index_chunks = stats.get("chunks", 0)
            rec.pv_agent_index_vectors = bool(stats.get("vectors"))
            rec.pv_agent_index_built_at = _utc_naive(stats.get("built_at"))
            rec.pv_agent_index_generation = int(stats.get("generation") or 0)
            rec.pv_agent_index_stale = stale or not stats
            rec.pv_agent_last_job_id = last
            rec.pv_agent_entry_count = count

    def _compute_pv_agent_time_warning(self):
        """A warning when Odoo's worker time limit leaves a question too little model time."""
        limit = odoo_settings.worker_time_limit()
        budget = odoo_settings.model_time_budget()
        settings = odoo_settings.engine_settings(self.env)
        warning = False
        if budget is not None and budget < settings.chat_timeout:
            warning = self.env._(
                "Odoo stops a cron worker after %(limit)s s (limit_time_real / limit_time_real_cron): a question gets "
                "%(budget)s s of model time, less than one call may take (chat timeout %(timeout)s s). Slow answers "
                "end as \"sources only\"; raise Odoo's limit or use a faster model.",
                limit=int(limit), budget=int(budget), timeout=int(settings.chat_timeout))
        for rec in self:
            rec.pv_agent_time_warning = warning

    @api.depends("pv_agent_answer_workers")
    def _compute_pv_agent_answer_parallel(self):
        """What Odoo's cron workers leave of the setting: min(setting, max_cron_threads), and one
        fewer while a reindex or another scheduled action holds a worker."""
        threads = answer_crons.cron_threads()
        for rec in self:
            count = min(answer_crons.MAXIMUM, max(1, rec.pv_agent_answer_workers or answer_crons.DEFAULT))
            effective = answer_crons.effective(count, threads)
            rec.pv_agent_answer_parallel_short = count > threads
            if not threads:
                rec.pv_agent_answer_parallel = self.env._(
                    "Odoo runs no scheduled jobs (max_cron_threads = 0): no question is answered. Start Odoo with "
                    "--max-cron-threads of at least 1.")
            elif count > threads:
                rec.pv_agent_answer_parallel = self.env._(
                    "Odoo runs at most %(threads)s scheduled jobs at once (max_cron_threads): %(effective)s of the "
                    "%(count)s answer jobs run at a time, fewer while a reindex or another scheduled action runs. "
                    "Raise max_cron_threads in Odoo's configuration to use all %(count)s.",
                    threads=threads, effective=effective, count=count)
            else:
                rec.pv_agent_answer_parallel = self.env._(
                    "Up to %(effective)s questions are answered at once (Odoo: max_cron_threads = %(threads)s); "
                    "a reindex or another scheduled action takes one of those workers while it runs. The model "
                    "server must serve %(effective)s requests in parallel, or they wait there.",
                    effective=effective, threads=threads)

    @api.depends("pv_agent_ollama_url")
    def _compute_pv_agent_url_warning(self):
        """Questions may name employees and their pay: say so when they would leave the network."""
        for rec in self:
            url = (rec.pv_agent_ollama_url or "").strip()
            rec.pv_agent_url_warning = bool(url) and not url_is_local(url) and self.env._(
                "%(url)s is neither this machine nor the local network: questions may contain personal data "
                "(names, salaries, health) and would leave it. Use a model server inside your network, or make sure a "
                "data-processing agreement covers this one.", url=url)

    @api.depends_context("uid")
    def _compute_pv_agent_llm_api_key_set(self):
        stored = bool(self.env["ir.config_parameter"].sudo().get_param(odoo_settings.PARAM_API_KEY))
        for rec in self:
            rec.pv_agent_llm_api_key_set = stored

    def action_pv_agent_clear_api_key(self):
        self.check_access("write")
        self.env["ir.config_parameter"].sudo().set_param(odoo_settings.PARAM_API_KEY, False)

    @api.constrains("pv_agent_ollama_url", "pv_agent_num_ctx", "pv_agent_top_k", "pv_agent_max_pending",
                    "pv_agent_answer_workers")
    def _check_pv_agent_values(self):
        for rec in self:
            url = (rec.pv_agent_ollama_url or "").strip()
            if url and not url.startswith(("http://", "https://")):
                raise ValidationError(self.env._("The server URL must start with http:// or https://."))
            if rec.pv_agent_num_ctx and rec.pv_agent_num_ctx < 2048:
                raise ValidationError(self.env._("The context window (num_ctx) must be at least 2048."))
            if rec.pv_agent_max_pending and not 1 <= rec.pv_agent_max_pending <= 100:
                raise ValidationError(self.env._("Waiting questions per user must be between 1 and 100."))
            if rec.pv_agent_top_k and not 1 <= rec.pv_agent_top_k <= 50:
                raise ValidationError(self.env._("Sources per answer (top-k) must be between 1 and 50."))
            if not 1 <= rec.pv_agent_answer_workers <= answer_crons.MAXIMUM:
                raise ValidationError(self.env._("Answers computed at once must be between 1 and %s.",
                                                 answer_crons.MAXIMUM))

    def _pv_agent_form_settings(self):
        """Engine settings from the values on the form (they may not be saved yet)."""
        self.ensure_one()
        return odoo_settings.engine_settings(
            self.env, llm_api=self.pv_agent_llm_api, ollama_url=self.pv_agent_ollama_url,
            chat_model=self.pv_agent_chat_model, embed_model=self.pv_agent_embed_model, embedder=self.pv_agent_embedder,
            num_ctx=self.pv_agent_num_ctx, top_k=self.pv_agent_top_k, llm_api_key=self.pv_agent_llm_api_key)

    def action_pv_agent_test_connection(self):
        """List the models the server has and say whether the configured ones are among them."""
        self.env["pv_agent.entry"]._check_manager()
        settings = self._pv_agent_form_settings()
        try:
            names = make_client(settings).list_models()
        except OllamaError as exc:
            return _notify(self.env._("Connection failed"), f"{exc.reason}: {exc}", "danger")
        have = set(names) | {n.removesuffix(":latest") for n in names}
        wanted = [settings.chat_model]
        if settings.embedder not in ("builtin", "none"):  # the built-in model needs nothing from the server
            wanted.append(settings.embed_model)
        missing = [m for m in wanted if m not in have]
        listing = ", ".join(names) or self.env._("(none)")
        ollama = settings.llm_api == "ollama"
        if missing:
            text = (self.env._("Ollama reachable, but missing: %(missing)s. Available: %(listing)s",
                               missing=", ".join(missing), listing=listing) if ollama else
                    self.env._("Model server reachable, but missing: %(missing)s. Available: %(listing)s",
                               missing=", ".join(missing), listing=listing))
            return _notify(self.env._("Models missing"), text, "warning", models=names, missing=missing)
        text = (self.env._("Ollama reachable, language and embedding model present. Models: %s", listing) if ollama
                else self.env._("Model server reachable, the configured models are present. Models: %s", listing))
        return _notify(self.env._("Connection OK"), text, "success", models=names, missing=[])

    def action_pv_agent_reindex(self):
        return self.env["pv_agent.index.job"].action_queue_reindex()

    def action_pv_agent_import(self):
        self.env["pv_agent.entry"]._check_manager()
        # the saved folder: Odoo saves the form (set_values, administrators only) before this runs
        job = self.env["pv_agent.entry"].action_import_knowledge_base()
        return {
            "type": "ir.actions.act_window",
            "res_model": "pv_agent.index.job",
            "res_id": job.id,
            "view_mode": "form",
            "target": "new",
        }

    def action_pv_agent_open_jobs(self):
        self.env["pv_agent.entry"]._check_manager()
        return self.env["ir.actions.act_window"]._for_xml_id("pv_agent.action_pv_agent_index_job")

    # Index store: SQLite file or PostgreSQL (services/index_access.py)

    pv_agent_index_store = fields.Selection(
        index_access.STORES, "Index store", config_parameter=index_access.PARAM_STORE, default=index_access.SQLITE,
        help="SQLite file: one file per database in this Odoo server's data directory. "
             "PostgreSQL: tables in Odoo's database (with pgvector), for several Odoo servers "
             "behind a load balancer. Switching rebuilds the index in the other store; "
             "until then the current one answers.")
    pv_agent_index_store_active = fields.Selection(index_access.STORES, "Questions currently use",
                                                   compute="_compute_pv_agent_index_store_active")

    def _compute_pv_agent_index_store_active(self):
        store = index_access.active_store(self.env.cr.dbname, self.env)
        for rec in self:
            rec.pv_agent_index_store_active = store

    def set_values(self):
        # Odoo's own set_values does not check the caller: called on no record over RPC it would
        # reset every config parameter. Only who may write settings may save them.
        self.check_access("write")
        wanted = self.pv_agent_index_store or index_access.SQLITE
        active = index_access.active_store(self.env.cr.dbname, self.env)
        switching = wanted != index_access.wanted_store(self.env) or wanted != active
        if switching and wanted != index_access.SQLITE:
            index_access.check_store(self.env, wanted)
        super().set_values()
        if self.pv_agent_llm_api_key:  # a new key replaces the stored one; the form never holds it again
            self.env["ir.config_parameter"].sudo().set_param(odoo_settings.PARAM_API_KEY, self.pv_agent_llm_api_key.strip())
            self.pv_agent_llm_api_key = False
        if switching and wanted != index_access.active_store(self.env.cr.dbname, self.env):
            index_access.queue_store_switch(self.env)
        answer_crons.sync(self.env)  # as many active answer crons as the saved value asks for


def _utc_naive(iso: str | None):
    """The sidecar's ISO timestamp as Odoo stores datetimes (naive UTC); False if unreadable."""
    try:
        stamp = datetime.fromisoformat(iso or "")
    except ValueError:
        return False
    if stamp.tzinfo:
        stamp = stamp.astimezone(timezone.utc).replace(tzinfo=None)
    return stamp.replace(microsecond=0)


def _notify(title, message, kind, **extra):
    return {
        "type": "ir.actions.client",
        "tag": "display_notification",
        "params": {"title": title, "message": message, "type": kind, "sticky": kind != "success"},
        **extra,
    }
