"""When the current batch of cron jobs began: Odoo's watchdog counts from there.

A cron worker runs every ready job of a database in one batch and pings its watchdog only
between batches, so a job that starts after another one has used its share (the second answer
cron behind the first, with one cron thread) has only what is left of the worker's time limit,
not a fresh one. ``ir.cron._process_job`` (models/ir_cron.py) calls ``job_starting`` with the
batch's cursor, which all jobs of one batch share; a new cursor is a new batch.

What this cannot see: a prefork cron worker pings before its idle sleep (up to 60 s plus a few),
so one woken late in that sleep by a trigger starts its batch with the sleep already counted.
Odoo offers no hook there; docs/reliability.md says what that means for the limits.
"""
from __future__ import annotations

import threading
from time import monotonic

_batch = threading.local()  # one cron worker process or cron thread runs one batch at a time


def job_starting(batch_cursor) -> None:
    if getattr(_batch, "cursor", None) is not batch_cursor:
        _batch.cursor, _batch.started = batch_cursor, monotonic()


def forget_batch() -> None:
    """A job run by hand (``method_direct_trigger``) is a batch of its own."""
    _batch.cursor = _batch.started = None


def batch_started() -> float | None:
    """``time.monotonic()`` at the start of the running batch; None outside one."""
    cursor = getattr(_batch, "cursor", None)
    if cursor is None or getattr(cursor, "closed", True):
        return None
    return _batch.started
