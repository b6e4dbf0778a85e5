"""Work a cron worker is doing, marked by a PostgreSQL session lock on the worker's connection.

A job commits several times while it runs, so no row lock can say it is alive; a session-level
advisory lock outlives those commits and goes with the connection when the worker dies (Odoo's
watchdog kills it, the machine restarts). A job that says "running" while nobody holds its lock
has been abandoned: found at once, not after an hour.

Ask ``is_abandoned`` from another connection than the worker's: PostgreSQL grants a session the
locks it already holds.
"""
from __future__ import annotations

from contextlib import contextmanager

import psycopg2

INDEX_JOBS = 0x50564A42  # lock space of pv_agent.index.job runs ("PVJB")
QUESTIONS = 0x50564151  # lock space of questions being answered ("PVAQ")


@contextmanager
def holding(cr, space: int, key: int):
    """Hold the lock ``(space, key)`` on ``cr``'s connection, across commits and rollbacks."""
    cr.execute("SELECT pg_advisory_lock(%s, %s)", [space, key])
    try:
        yield
    finally:
        try:
            cr.execute("SELECT pg_advisory_unlock(%s, %s)", [space, key])
        except psycopg2.errors.InFailedSqlTransaction:  # the work failed in SQL: unlock after its rollback
            cr.rollback()
            cr.execute("SELECT pg_advisory_unlock(%s, %s)", [space, key])


def is_abandoned(cr, space: int, key: int) -> bool:
    """True if no connection holds ``(space, key)``: the worker that took it is gone."""
    cr.execute("SELECT pg_try_advisory_lock(%s, %s)", [space, key])
    [free] = cr.fetchone()
    if free:
        cr.execute("SELECT pg_advisory_unlock(%s, %s)", [space, key])
    return free
