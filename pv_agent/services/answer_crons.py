"""How many questions are answered at once (issue 31, item 4): the answer crons.

Odoo never runs one cron job twice at the same time, so each question answered in parallel needs
its own cron job (``PV-Agent: answer questions``, all calling ``_cron_answer_pending``; each claims
its question with a row lock the others skip). The shipped data has two; the Settings value
``pv_agent.answer_workers`` creates more (xmlid ``pv_agent.ir_cron_pv_agent_answer_<n>``, noupdate,
so a module update keeps them and an uninstall removes them) or archives the surplus.

What runs at once is also bounded by Odoo: its cron workers (``max_cron_threads``) run one job each,
and a reindex or any other scheduled action takes one of them while it runs. ``effective()`` says
what that leaves; the Settings form shows it.

Plain functions, no models (part of the seam, see services/__init__.py).
"""
from __future__ import annotations

import re

from odoo.tools import config

PARAM = "pv_agent.answer_workers"
DEFAULT = 2  # the two crons of data/ir_cron_data.xml
MAXIMUM = 16
CODE = "model._cron_answer_pending()"
MODULE = "pv_agent"
_FIRST = "ir_cron_pv_agent_answer"
_NAME = re.compile(r"^ir_cron_pv_agent_answer(?:_(\d+))?$")


def xmlid_name(n: int) -> str:
    """The xmlid name of answer cron ``n`` (1-based): the first has no number (the shipped data)."""
    return _FIRST if n == 1 else f"{_FIRST}_{n}"


def wanted(env) -> int:
    """The Settings value, within 1..MAXIMUM (a hand-written parameter must not stop answers)."""
    raw = env["ir.config_parameter"].sudo().get_param(PARAM)
    try:
        return min(MAXIMUM, max(1, int(raw))) if raw else DEFAULT
    except ValueError:
        return DEFAULT


def numbered_crons(env) -> dict[int, object]:
    """Answer cron number → its ``ir.cron`` record (archived ones too), by the addon's xmlids."""
    data = env["ir.model.data"].sudo().search([("module", "=", MODULE), ("model", "=", "ir.cron"),
                                               ("name", "=like", _FIRST + "%")])
    crons = {}
    for row in data:
        match = _NAME.match(row.name)
        if match:
            cron = env["ir.cron"].sudo().with_context(active_test=False).browse(row.res_id).exists()
            if cron:
                crons[int(match.group(1) or 1)] = cron
    return crons


def active_crons(env):
    """The answer crons that run: the ones ``wake`` triggers."""
    crons = env["ir.cron"].sudo()
    for _n, cron in sorted(numbered_crons(env).items()):
        if cron.active:
            crons |= cron
    return crons


def wake(env) -> None:
    """Wake every active answer cron: Odoo runs each in its own cron worker when it has several."""
    for cron in active_crons(env):
        cron._trigger()


def sync(env, count: int | None = None) -> None:
    """Make exactly ``count`` (default: the Settings value) answer crons active: create the missing
    ones, reactivate archived ones, archive the rest. Callers have checked the user may do this."""
    count = wanted(env) if count is None else min(MAXIMUM, max(1, count))
    crons = numbered_crons(env)
    for n in range(1, max(count, max(crons, default=0)) + 1):
        cron = crons.get(n)
        if n > count:
            if cron and cron.active:
                cron.active = False
        elif not cron:
            _create(env, n)
        elif not cron.active:
            cron.active = True


def _create(env, n: int):
    """Answer cron ``n`` as data/ir_cron_data.xml defines the first, with its xmlid."""
    cron = env["ir.cron"].sudo().create({
        "name": "PV-Agent: answer questions" + (f" (worker {n})" if n > 1 else ""),
        "model_id": env["ir.model"]._get_id("pv_agent.message"),
        "state": "code",
        "code": CODE,
        "user_id": env.ref("base.user_root").id,
        "interval_number": 1,
        "interval_type": "hours",
        "priority": 5,
    })
    env["ir.model.data"].sudo().create({"module": MODULE, "name": xmlid_name(n), "model": "ir.cron",
                                        "res_id": cron.id, "noupdate": True})
    return cron


def cron_threads() -> int:
    """Odoo's cron workers (prefork) or threads (threaded server): ``max_cron_threads``."""
    try:
        return max(0, int(config.get("max_cron_threads") or 0))
    except (TypeError, ValueError):
        return 0


def effective(count: int, threads: int | None = None) -> int:
    """At most this many questions are answered at once: one per answer cron, one per cron worker
    (fewer while a reindex or another scheduled action holds a worker)."""
    return min(count, cron_threads() if threads is None else threads)
