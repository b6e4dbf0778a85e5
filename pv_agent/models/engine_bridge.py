"""The one seam between Odoo and the engine: settings, the sidecar path, open indexes.

Plain functions, no models. Everything the addon does with the engine goes through here,
so the tests can redirect the sidecar to a temporary folder with one patch.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading

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

# One open SidecarIndex per sidecar path and worker process, reused across questions;
# .refresh() notices a rebuilt (swapped) file or an in-place update. The lock keeps two
# threads of a threaded server from refreshing the shared connection under each other.
_open_indexes: dict = {}
_open_lock = threading.Lock()
_use_locks: dict = {}


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


@contextlib.contextmanager
def using_index(dbname: str):
    """``with using_index(db) as index:`` this process's open, refreshed index (None if none built)."""
    from ..engine.store import SidecarIndex

    path = index_path(dbname)
    with _open_lock:
        lock = _use_locks.setdefault(path, threading.Lock())
    with lock:
        index = _open_indexes.get(path)
        if index is None and os.path.exists(path):
            index = _open_indexes[path] = SidecarIndex.open(path)
        if index is not None:
            index.refresh()
        yield index


def index_stats(dbname: str) -> dict | None:
    """Statistics of the database's sidecar, read through a short-lived handle.

    None if there is none yet; ``{"problem": …}`` if the file cannot be read.
    """
    from ..engine.store import IndexError_, SidecarIndex

    path = index_path(dbname)
    if not os.path.exists(path):
        return None
    try:
        index = SidecarIndex.open(path)
    except IndexError_ as exc:
        return {"problem": str(exc)}
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
