"""Where the index lives: the sidecar file (default) or Odoo's own PostgreSQL with pgvector.

Two parameters: ``pv_agent.index_store`` is the store chosen in Settings, and
``pv_agent.index_store_active`` the one questions read from. Choosing the other store queues a
reindex into it; only when that run completes does the active store follow, so questions
keep using the old store until then (and for good, if the run fails).

In PostgreSQL the index is a set of ``pv_index_*`` tables in Odoo's database, created by the
engine (engine/pgstore.py) on the first reindex; it needs the pgvector extension.
"""
from __future__ import annotations

import urllib.parse

from odoo import SUPERUSER_ID, api, fields, models
from odoo.exceptions import UserError
from odoo.sql_db import connection_info_for

from . import engine_bridge

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
    return odoo_dsn(dbname) if store == POSTGRESQL else engine_bridge.index_path(dbname)


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
    from ..engine.pgstore import connect, require_pgvector
    from ..engine.store import IndexError_

    try:
        conn = connect(odoo_dsn(env.cr.dbname))
        try:
            require_pgvector(conn)
        finally:
            conn.close()
    except IndexError_ as exc:
        raise UserError(str(exc)) from exc


class ResConfigSettings(models.TransientModel):
    _inherit = "res.config.settings"

    pv_agent_index_store = fields.Selection(
        STORES, "Index store", config_parameter=PARAM_STORE, default=SQLITE,
        help="SQLite file: one file per database in this Odoo server's data directory. "
             "PostgreSQL: tables in Odoo's database (with pgvector), for several Odoo servers "
             "behind a load balancer. Switching rebuilds the index in the other store; "
             "until then the current one answers.")
    pv_agent_index_store_active = fields.Selection(STORES, "Questions currently use",
                                                   compute="_compute_pv_agent_index_store_active")

    def _compute_pv_agent_index_store_active(self):
        store = active_store(self.env.cr.dbname, self.env)
        for rec in self:
            rec.pv_agent_index_store_active = store

    def set_values(self):
        # Odoo's own set_values does not check the caller: called on no record over RPC it would
        # reset every config parameter. Only who may write settings may save them.
        self.check_access("write")
        wanted = self.pv_agent_index_store or SQLITE
        switching = wanted != wanted_store(self.env) or wanted != active_store(self.env.cr.dbname, self.env)
        if switching and wanted != SQLITE:
            check_store(self.env, wanted)
        super().set_values()
        if switching and wanted != active_store(self.env.cr.dbname, self.env):
            queue_store_switch(self.env)


def queue_store_switch(env) -> None:
    """Queue a reindex into the chosen store. A run already under way builds into the store
    chosen before, so the switch gets a queued run of its own."""
    Job = env["pv_agent.index.job"].sudo()
    if not Job.search([("kind", "=", "reindex"), ("state", "=", "queued")], limit=1):
        Job.create({"kind": "reindex", "state": "queued"})
    env.ref("pv_agent.ir_cron_pv_agent_reindex").sudo()._trigger()
