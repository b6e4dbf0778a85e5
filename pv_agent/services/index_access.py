"""Index access for the Odoo layer: where the index lives and this thread's open handle.

Where: the sidecar file (default) or Odoo's own PostgreSQL with pgvector. Two parameters:
``pv_agent.index_store`` is the store chosen in Settings, and ``pv_agent.index_store_active``
the one questions read from. Choosing the other store queues a reindex into it; only when that
run completes does the active store follow, so questions keep using the old store until then
(and for good, if the run fails). In PostgreSQL the index is a set of ``pv_index_*`` tables in
Odoo's database, created by the engine (engine/index/pg_store.py) on the first reindex.

Plain functions, no models (part of the seam, see services/__init__.py). Everything that opens
an index goes through ``index_path``/``index_target``, so the tests redirect the sidecar to a
temporary folder with one patch of ``index_path``.
"""
from __future__ import annotations

import contextlib
import os
import threading
import urllib.parse

from odoo import SUPERUSER_ID, api
from odoo.exceptions import UserError
from odoo.sql_db import connection_info_for
from odoo.tools import config

# One open index per target (sidecar path or DSN) and thread, reused across questions;
# .refresh() notices a rebuilt (swapped) file or flipped build, or an in-place update. A handle
# per thread: questions in two cron workers or threads never wait for each other's model calls.
_open_indexes: dict = {}
_open_lock = threading.Lock()

PARAM_STORE = "pv_agent.index_store"
PARAM_STORE_ACTIVE = "pv_agent.index_store_active"
SQLITE, POSTGRESQL = "sqlite", "postgresql"
STORES = [(SQLITE, "SQLite file"), (POSTGRESQL, "PostgreSQL")]


def odoo_dsn(dbname: str) -> str:
    """A libpq URI for Odoo's own database, from Odoo's db_* options (libpq's PG* variables
    and defaults fill in what they leave open)."""
    db, info = connection_info_for(dbname)
    if "dsn" in info:
        return info["dsn"]
    user = urllib.parse.quote(str(info.get("user") or ""), safe="")
    password = urllib.parse.quote(str(info.get("password") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = str(info.get("host") or "")
    query = {}
    if host.startswith("/"):  # a socket directory
        query["host"], host = host, ""
    if info.get("sslmode"):
        query["sslmode"] = info["sslmode"]
    port = f":{info['port']}" if info.get("port") and host else ""
    if info.get("port") and not host:
        query["port"] = str(info["port"])
    uri = f"postgresql://{auth}{host}{port}/{urllib.parse.quote(db, safe='')}"
    return uri + ("?" + urllib.parse.urlencode(query) if query else "")


def target_for(dbname: str, store: str) -> str:
    """The engine's index target for ``store``: the sidecar path or Odoo's database as a DSN."""
    return odoo_dsn(dbname) if store == POSTGRESQL else index_path(dbname)


def active_store(dbname: str, env=None) -> str:
    """The store questions read from. Without an ``env``, read through the database's registry
    (a database without one, e.g. in engine-level tests, reads the sidecar)."""
    if env is not None:
        return env["ir.config_parameter"].sudo().get_param(PARAM_STORE_ACTIVE) or SQLITE
    from odoo.modules.registry import Registry

    if dbname not in Registry.registries:
        return SQLITE
    with Registry(dbname).cursor() as cr:
        return active_store(dbname, api.Environment(cr, SUPERUSER_ID, {}))


def wanted_store(env) -> str:
    return env["ir.config_parameter"].sudo().get_param(PARAM_STORE) or SQLITE


def build_target(env) -> tuple[str, str]:
    """(store, target) a reindex builds into: the store chosen in Settings."""
    store = wanted_store(env)
    return store, target_for(env.cr.dbname, store)


def activate(env, store: str) -> None:
    """A reindex into ``store`` completed: questions read from it from now on."""
    icp = env["ir.config_parameter"].sudo()
    if (icp.get_param(PARAM_STORE_ACTIVE) or SQLITE) != store:
        icp.set_param(PARAM_STORE_ACTIVE, store)


def check_store(env, store: str) -> None:
    """UserError naming what is missing if ``store`` cannot hold the index (pgvector)."""
    if store != POSTGRESQL:
        return
    from ..engine.index.pg_store import connect, require_pgvector
    from ..engine.index.base import IndexError_

    try:
        conn = connect(odoo_dsn(env.cr.dbname))
        try:
            require_pgvector(conn)
        finally:
            conn.close()
    except IndexError_ as exc:
        raise UserError(str(exc)) from exc


def index_path(dbname: str) -> str:
    """The database's sidecar file, beside Odoo's filestore in the data directory."""
    return os.path.join(config["data_dir"], "pv_agent", dbname, "index.db")


def index_target(dbname: str, env=None) -> str:
    """Where questions read the index: the sidecar path or Odoo's database (the active store)."""
    return target_for(dbname, active_store(dbname, env))


def _open_index(target: str):
    """The index at ``target``, or None if none has been built there yet."""
    from ..engine.index.target import is_dsn, open_index
    from ..engine.index.base import IndexMissing

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
    from ..engine.index.base import IndexError_

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


def queue_store_switch(env) -> None:
    """Queue a reindex into the chosen store. A run already under way builds into the store
    chosen before, so the switch gets a queued run of its own."""
    Job = env["pv_agent.index.job"].sudo()
    if not Job.search([("kind", "=", "reindex"), ("state", "=", "queued")], limit=1):
        Job.create({"kind": "reindex", "state": "queued"})
    env.ref("pv_agent.ir_cron_pv_agent_reindex").sudo()._trigger()
