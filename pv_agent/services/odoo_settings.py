"""Engine settings from Odoo: the Settings page's config parameters, the knowledge-base folder,
and the time one cron run may spend on model calls (Odoo's worker limits).

Plain functions, no models (part of the seam, see services/__init__.py).
"""
from __future__ import annotations

import logging
import os
import time

from odoo.tools import config

from ..engine.config import Settings, llm_api_problem
from .cron_budget import watchdog_counting_since

_logger = logging.getLogger(__name__)

ADDON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_KB_PATH = os.path.normpath(os.path.join(ADDON_DIR, "..", "wissensbasis"))

# ir.config_parameter keys → Settings fields (the Settings page writes these).
PARAM_FIELDS = {
    "pv_agent.llm_api": ("llm_api", str),
    "pv_agent.ollama_url": ("ollama_url", str),
    "pv_agent.chat_model": ("chat_model", str),
    "pv_agent.embed_model": ("embed_model", str),
    "pv_agent.embedder": ("embedder", str),
    "pv_agent.num_ctx": ("num_ctx", int),
    "pv_agent.top_k": ("top_k", int),
    "pv_agent.llm_api_key": ("llm_api_key", str),
}
# The model server's API key: a system parameter the Settings form writes and never reads back.
PARAM_API_KEY = "pv_agent.llm_api_key"
PARAM_KB_PATH = "pv_agent.kb_path"
PARAM_INDEX_DIRTY = "pv_agent.index_dirty"

# What the Settings page shows before anything is saved: the engine's defaults with the
# server's environment applied (e.g. OLLAMA_URL=http://ollama:11434 in docker-compose.yml).
def _defaults() -> Settings:
    try:
        return Settings.from_env()
    except ValueError as exc:  # a typo in PV_AGENT_* must not keep Odoo from starting
        _logger.warning("pv_agent: %s – using the built-in defaults", exc)
        return Settings()


DEFAULTS = _defaults()

# Share of Odoo's worker time limit one cron run may spend on model calls; the rest is for
# retrieval, storing the answer and Odoo's own bookkeeping.
MODEL_TIME_SHARE = 0.8
MODEL_TIME_MARGIN = 5.0


def worker_time_limit() -> float | None:
    """Seconds after which Odoo kills a cron worker (limit_time_real_cron, -1: limit_time_real);
    None if unlimited."""
    cron = config.get("limit_time_real_cron", -1)
    limit = config.get("limit_time_real") if cron in (-1, None) else cron
    return float(limit) if limit and limit > 0 else None


def model_time_budget() -> float | None:
    """Seconds one cron run may spend answering; None without a worker limit."""
    limit = worker_time_limit()
    return None if limit is None else max(5.0, limit * MODEL_TIME_SHARE - MODEL_TIME_MARGIN)


def cron_run_deadline(context) -> float | None:
    """The ``time.monotonic()`` by which the current cron run must be done with model calls.

    Odoo's watchdog counts the worker limit from before the worker's batch of cron jobs
    (services/cron_budget.py), not from this job's start: a job behind another one in the
    same batch gets only what is left. Outside a batch, from the job's start (Odoo's cron
    runner puts ``cron_end_time`` = start + MIN_TIME_PER_JOB into the context)."""
    budget = model_time_budget()
    if budget is None:
        return None
    from odoo.addons.base.models.ir_cron import MIN_TIME_PER_JOB

    end = context.get("cron_end_time")
    job_started = end - MIN_TIME_PER_JOB if end else time.monotonic()
    counting_since = watchdog_counting_since()
    return (job_started if counting_since is None else min(counting_since, job_started)) + budget


def engine_settings(env, **overrides) -> Settings:
    """Engine settings: defaults, PV_AGENT_* / OLLAMA_URL environment, then Odoo's parameters."""
    icp = env["ir.config_parameter"].sudo()
    values = {}
    for key, (field, kind) in PARAM_FIELDS.items():
        raw = icp.get_param(key)
        if raw not in (None, "", False):
            try:
                values[field] = kind(raw)
            except ValueError:
                _logger.warning("pv_agent: ignoring invalid parameter %s=%r", key, raw)
    values.update({k: v for k, v in overrides.items() if v not in (None, "", False, 0)})
    if llm_api_problem(values.get("llm_api", "")):  # a parameter written by hand must not stop answers
        _logger.warning("pv_agent: ignoring invalid parameter pv_agent.llm_api=%r", values.pop("llm_api"))
    return Settings.from_env(**values)


def kb_path(env) -> str:
    path = env["ir.config_parameter"].sudo().get_param(PARAM_KB_PATH) or DEFAULT_KB_PATH
    return os.path.normpath(os.path.expanduser(path))
