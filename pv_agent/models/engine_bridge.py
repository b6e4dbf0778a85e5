"""The one seam between Odoo and the engine: settings, the index target, open indexes.

Plain functions, no models. Everything the addon does with the engine goes through here,
so the tests can redirect the sidecar to a temporary folder with one patch.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time

from odoo.tools import config

from ..engine.config import Settings

_logger = logging.getLogger(__name__)

ADDON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_KB_PATH = os.path.normpath(os.path.join(ADDON_DIR, "..", "wissensbasis"))

# ir.config_parameter keys → Settings fields (the Settings page writes these).
PARAM_FIELDS = {
    "pv_agent.ollama_url": ("ollama_url", str),
    "pv_agent.chat_model": ("chat_model", str),
    "pv_agent.embed_model": ("embed_model", str),
    "pv_agent.embedder": ("embedder", str),
    "pv_agent.num_ctx": ("num_ctx", int),
    "pv_agent.top_k": ("top_k", int),
}
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

# One open index per target (sidecar path or DSN) and thread, reused across questions;
# .refresh() notices a rebuilt (swapped) file or flipped build, or an in-place update. A handle
# per thread: questions in two cron workers or threads never wait for each other's model calls.
_open_indexes: dict = {}
_open_lock = threading.Lock()

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

    Odoo's cron runner puts ``cron_end_time`` (start + MIN_TIME_PER_JOB) into the context and
    counts the worker limit from the start of the run, which may answer several questions."""
    budget = model_time_budget()
    if budget is None:
        return None
    from odoo.addons.base.models.ir_cron import MIN_TIME_PER_JOB

    end = context.get("cron_end_time")
    started = end - MIN_TIME_PER_JOB if end else time.monotonic()
    return started + budget


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
    return Settings.from_env(**values)


def kb_path(env) -> str:
    path = env["ir.config_parameter"].sudo().get_param(PARAM_KB_PATH) or DEFAULT_KB_PATH
    return os.path.normpath(os.path.expanduser(path))


def index_path(dbname: str) -> str:
    """The database's sidecar file, beside Odoo's filestore in the data directory."""
    return os.path.join(config["data_dir"], "pv_agent", dbname, "index.db")


def index_target(dbname: str, env=None) -> str:
    """Where questions read the index: the sidecar path or Odoo's database (pv_agent_store)."""
    from . import pv_agent_store

    return pv_agent_store.target_for(dbname, pv_agent_store.active_store(dbname, env))


def _open_index(target: str):
    """The index at ``target``, or None if none has been built there yet."""
    from ..engine.index_target import is_dsn, open_index
    from ..engine.store import IndexMissing

    if not is_dsn(target) and not os.path.exists(target):
        return None
    try:
        return open_index(target)
    except IndexMissing:
        return None


@contextlib.contextmanager
def using_index(dbname: str, env=None):
    """``with using_index(db, env) as index:`` this thread's open, refreshed index (None if none built).

    The lock covers only the handle cache; the caller's model calls run without it."""
    key = (index_target(dbname, env), threading.get_ident())
    with _open_lock:
        index = _open_indexes.get(key)
        if index is None:
            index = _open_index(key[0])
            if index is not None:
                _open_indexes[key] = index
    if index is not None:
        index.refresh()
    yield index


def index_stats(dbname: str, env=None) -> dict | None:
    """Statistics of the database's index, read through a short-lived handle.

    None if there is none yet; ``{"problem": …}`` if it cannot be read.
    """
    from ..engine.store import IndexError_

    try:
        index = _open_index(index_target(dbname, env))
    except IndexError_ as exc:
        return {"problem": str(exc)}
    if index is None:
        return None
    try:
        return index.stats()
    finally:
        index.close()


def forget_indexes() -> None:
    """Close every cached handle (tests that replace sidecar files use this)."""
    with _open_lock:
        indexes = list(_open_indexes.values())
        _open_indexes.clear()
    for index in indexes:
        index.close()


def failure_text(env, exc: BaseException) -> str:
    """A failure from the engine for the UI: its reason in the user's language (the engine speaks
    German, Odoo translates), then the engine's detail."""
    from ..engine.deadline import DeadlineExceeded
    from ..engine.indexer import EmbeddingDimensionMismatch
    from ..engine.ollama import OllamaError, OllamaModelMissing, OllamaTimeout, OllamaUnavailable

    _ = env._
    reasons = (  # most specific first
        (DeadlineExceeded, _("Time limit for the question reached")),
        (EmbeddingDimensionMismatch, _("The embedding dimension does not match the index")),
        (OllamaTimeout, _("The language model does not answer in time")),
        (OllamaModelMissing, _("Model not present on the Ollama server")),
        (OllamaUnavailable, _("Language model not reachable")),
        (OllamaError, _("Language model error")),
    )
    detail = str(exc) or type(exc).__name__
    for kind, reason in reasons:
        if isinstance(exc, kind):
            return f"{reason}: {detail}"
    return detail


def stage_text(env, stage: str | None):
    """A reindex stage of the engine ("vorbereiten", "einbetten", "speichern") in the user's language."""
    if not stage:
        return stage
    _ = env._
    return {"vorbereiten": _("preparing"), "einbetten": _("embedding"), "speichern": _("saving")}.get(stage, stage)
