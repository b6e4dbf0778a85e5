"""Since when Odoo's watchdog has been counting for the running cron job: the answering job's
deadline counts from there, not from the job's own start.

A cron worker runs every ready job of a database in one batch and pings its watchdog only
between batches, so a job behind another one (the second answer cron behind the first, with
one cron thread) has only what is left of the worker's time limit, not a fresh one.
``ir.cron._process_job`` (models/ir_cron.py) calls ``job_starting`` with the batch's cursor,
which all jobs of one batch share (a new cursor is a new batch), and ``job_done`` after it.

Where the count began:
- Odoo's threaded server marks it itself: ``start_time`` of the cron thread, set just before
  the batch;
- a prefork cron worker pings *before* its idle sleep (``SLEEP_INTERVAL`` + pid % 10 seconds),
  and a trigger may wake it late in that sleep: the count began when this process's previous
  job ended (the ping follows right after), or, not known, a whole sleep before the batch.
  The answering job then wakes the crons for a fresh batch rather than answer in what is left.
"""
from __future__ import annotations

import os
import threading
import time
from time import monotonic

from odoo.service.server import SLEEP_INTERVAL

_batch = threading.local()  # one cron worker process or cron thread runs one batch at a time


def idle_sleep() -> float:
    """The longest idle sleep of this process as a prefork cron worker, plus a second of slack."""
    return SLEEP_INTERVAL + os.getpid() % 10 + 1.0


def job_starting(batch_cursor) -> None:
    if getattr(_batch, "cursor", None) is batch_cursor:
        return
    now = monotonic()
    marked = getattr(threading.current_thread(), "start_time", None)  # threaded server, wall clock
    if marked:
        counting_since = now - max(0.0, time.time() - marked)
    else:
        last_end = getattr(_batch, "last_job_end", None)
        counting_since = max(now - idle_sleep(), last_end) if last_end else now - idle_sleep()
    _batch.cursor, _batch.counting_since = batch_cursor, counting_since


def job_done() -> None:
    _batch.last_job_end = monotonic()


def forget_batch() -> None:
    """A job run by hand (``method_direct_trigger``) is a batch of its own."""
    _batch.cursor = _batch.counting_since = None


def watchdog_counting_since() -> float | None:
    """``time.monotonic()`` since which the watchdog counts for the running batch; None outside one."""
    cursor = getattr(_batch, "cursor", None)
    if cursor is None or getattr(cursor, "closed", True):
        return None
    return _batch.counting_since
