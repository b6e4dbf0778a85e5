"""Imports and reindex runs, as records the admin can watch; reindexing runs in a cron job.

"Neu indizieren" only queues a job and triggers the cron (Odoo's job queue); the cron builds
the sidecar from the entry records. The engine writes the new index beside the old one and
swaps it in at the end, so questions keep using the old index until then. After a completed
reindex a queued drift check compares every stored answer's sources with the new index
(see pv_agent_answer_source.py).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import time

import psycopg2

from odoo import api, fields, models

from ..services import engine_calls, index_access, odoo_settings, worker_lock

_logger = logging.getLogger(__name__)

PROGRESS_EVERY_SECONDS = 1.0
STUCK_AFTER_MINUTES = 60  # imports: they run in the request and show "running" only to it


class PvAgentIndexJob(models.Model):
    _name = "pv_agent.index.job"
    _description = "PV-Agent: import and index run"
    _order = "id desc"

    kind = fields.Selection([("import", "Knowledge-base import"), ("reindex", "Reindexing"),
                             ("drift", "Source check of stored answers")], "Kind", required=True, readonly=True)
    state = fields.Selection([("queued", "Queued"), ("running", "Running"), ("done", "Done"),
                              ("failed", "Failed")], "Status", default="queued", required=True,
                             readonly=True, index=True)
    full = fields.Boolean("Full rebuild", readonly=True,
                          help="Embed all sections again, not only changed ones")
    requested_by = fields.Many2one("res.users", "Requested by", default=lambda self: self.env.user,
                                   readonly=True)
    date_start = fields.Datetime("Start", default=fields.Datetime.now, readonly=True)
    date_end = fields.Datetime("End", readonly=True)
    seconds = fields.Float("Duration (s)", readonly=True)
    progress_stage = fields.Char("Step", readonly=True)
    progress_done = fields.Integer("Done so far", readonly=True)
    progress_total = fields.Integer("Total", readonly=True)
    progress = fields.Float("Progress (%)", compute="_compute_progress")
    kb_path = fields.Char("Folder", readonly=True)
    entries = fields.Integer("Entries", readonly=True)
    chunks = fields.Integer("Sections", readonly=True)
    embedded = fields.Integer("Newly embedded", readonly=True)
    mode = fields.Char("Mode", readonly=True)
    message = fields.Text("Result", readonly=True)
    report_json = fields.Text("Report (JSON)", readonly=True)
    answers_checked = fields.Integer("Answers checked", readonly=True)
    answers_flagged = fields.Integer("Answers newly flagged", readonly=True)

    @api.depends("progress_done", "progress_total", "state")
    def _compute_progress(self):
        for job in self:
            if job.state == "done":
                job.progress = 100.0
            else:
                job.progress = 100.0 * job.progress_done / job.progress_total if job.progress_total else 0.0

    @api.depends("kind", "date_start")
    def _compute_display_name(self):
        labels = dict(self._fields["kind"].selection)
        for job in self:
            when = (fields.Datetime.context_timestamp(job, job.date_start).strftime("%d.%m.%Y %H:%M")
                    if job.date_start else "")
            job.display_name = f"{labels.get(job.kind, '')} {when}".strip()

    # -- queueing ----------------------------------------------------------------------------
    @api.model
    def action_queue_reindex(self, full=False):
        """Queue a reindex (one at a time) and wake the cron; returns a notification."""
        self.env["pv_agent.entry"]._check_manager()
        self.sudo()._fail_stuck_jobs()  # a job its dead worker left "running" must not stand for the new one
        job = self.sudo().search([("kind", "=", "reindex"), ("state", "in", ("queued", "running"))], limit=1)
        if not job:
            job = self.sudo().create({"kind": "reindex", "state": "queued", "full": full})
        self.env.ref("pv_agent.ir_cron_pv_agent_reindex").sudo()._trigger()
        return {
            "type": "ir.actions.client",
            "tag": "display_notification",
            "params": {
                "title": self.env._("Reindex queued"),
                "message": self.env._("The index is rebuilt in the background; until it is done, questions "
                                      "use the previous index."),
                "type": "info",
                "next": {"type": "ir.actions.client", "tag": "soft_reload"},
            },
            "job_id": job.id,
        }

    # -- the cron ----------------------------------------------------------------------------
    @api.model
    def _cron_run_queued(self):
        """Run queued jobs, oldest first (the cron ``PV-Agent: Neu indizieren``)."""
        cron = self.env["ir.cron"]
        self._fail_stuck_jobs()
        while True:
            job = self.search([("kind", "!=", "import"), ("state", "=", "queued")], order="id", limit=1)
            if not job:
                break
            # held until the job's end is committed: while it is, the job is alive (see _fail_stuck_jobs)
            with worker_lock.holding(self.env.cr, worker_lock.INDEX_JOBS, job.id):
                job._run_job()
                more = cron._commit_progress(1)
            if not more:
                break

    def _run_job(self):
        if self.kind == "drift":
            return self._run_drift()
        return self._run_reindex()

    def _fail_stuck_jobs(self):
        """Fail the jobs left "running" by a worker that is gone: a cron job whose worker no longer
        holds its lock (see services/worker_lock.py), an import after an hour."""
        limit = fields.Datetime.subtract(fields.Datetime.now(), minutes=STUCK_AFTER_MINUTES)
        stuck = self.search([("state", "=", "running")]).filtered(
            lambda job: job.date_start < limit if job.kind == "import"
            else worker_lock.is_abandoned(self.env.cr, worker_lock.INDEX_JOBS, job.id))
        for job in stuck:
            try:
                with self.env.cr.savepoint():
                    job.write({"state": "failed", "date_end": fields.Datetime.now(),
                               "message": self.env._("Interrupted (process ended?) – please start again.")})
            except psycopg2.errors.SerializationFailure:
                continue  # its worker finished it since this transaction began

    def _run_reindex(self):
        """Reindex, then queue the drift check of the stored answers against the new index."""
        self._build_index()
        if self.state == "done":
            # queued like the reindex; the running cron picks it up next
            self.create({"kind": "drift", "state": "queued", "requested_by": self.requested_by.id})

    def _build_index(self):
        """Build the sidecar from the entry records. Commits: running → progress → done/failed."""
        self.ensure_one()
        self = self.with_context(lang=self.requested_by.lang or self.env.lang)  # the result in the requester's language
        cron = self.env["ir.cron"]
        Entry = self.env["pv_agent.entry"].sudo().with_context(active_test=False)
        records = Entry.search([])
        snapshot = {rec.id: (rec.content_hash, rec.active) for rec in records}
        entries = records.filtered("active")._engine_entries()
        settings = odoo_settings.engine_settings(self.env)
        store, target = index_access.build_target(self.env)  # the store chosen in Settings
        self.write({"state": "running", "date_start": fields.Datetime.now(), "progress_done": 0,
                    "progress_total": len(entries), "progress_stage": engine_calls.stage_text(self.env, "vorbereiten"),
                    "message": False})
        cron._commit_progress(remaining=1)  # the admin sees "running" now
        started = time.monotonic()
        last = [0.0]

        def progress(stage, done, total):
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY_SECONDS or done >= total:
                last[0] = now
                self.write({"progress_stage": engine_calls.stage_text(self.env, stage), "progress_done": done,
                            "progress_total": total})
                cron._commit_progress(0)  # the admin watches the job's progress bar move

        try:
            report = engine_calls.build_index(entries, target, settings, kb_path=odoo_settings.kb_path(self.env),
                                              full=self.full, progress=progress)
        except Exception as exc:  # the job must end visibly failed, with the cause, whatever broke
            _logger.exception("pv_agent: reindex job %s failed", self.id)
            self.env.cr.rollback()
            self.write({"state": "failed", "date_end": fields.Datetime.now(),
                        "seconds": round(time.monotonic() - started, 2),
                        "message": self.env._("Reindex failed, the previous index stays in "
                                              "service: %(error)s", error=engine_calls.failure_text(self.env, exc))})
            return
        self._mark_indexed(Entry, snapshot)
        index_access.activate(self.env, store)  # questions read from the new store from now on
        data = _as_dict(report)
        self.write({
            "state": "done",
            "date_end": fields.Datetime.now(),
            "seconds": round(time.monotonic() - started, 2),
            "progress_done": len(entries),
            "entries": data.get("entries", len(entries)),
            "chunks": data.get("chunks", 0),
            "embedded": data.get("embedded", 0),
            "mode": data.get("mode", ""),
            "progress_stage": False,
            "message": "\n".join(filter(None, [self.env._(
                "%(entries)s entries, %(chunks)s sections, %(vectors)s vectors, %(embedded)s newly embedded "
                "(mode: %(mode)s, generation %(generation)s).", entries=data.get("entries", len(entries)),
                chunks=data.get("chunks", 0), vectors=data.get("vectors", 0), embedded=data.get("embedded", 0),
                mode=data.get("mode", "?"), generation=data.get("generation", "?")), data.get("notice")])),
            "report_json": json.dumps(data, ensure_ascii=False, indent=1, default=str),
        })

    def _run_drift(self):
        """Check every stored answer's sources against the current index; flag and notify."""
        self.ensure_one()
        self = self.with_context(lang=self.requested_by.lang or self.env.lang)
        self.write({"state": "running", "date_start": fields.Datetime.now(), "message": False})
        self.env["ir.cron"]._commit_progress(0)
        started = time.monotonic()
        with index_access.using_index(self.env.cr.dbname, self.env) as index:
            if index is None:
                self.write({"state": "failed", "date_end": fields.Datetime.now(),
                            "message": self.env._("There is no index to check against.")})
                return
            result = self.env["pv_agent.message"].sudo()._check_drift(index)
        seconds = time.monotonic() - started
        self.write({
            "state": "done", "date_end": fields.Datetime.now(), "seconds": round(seconds, 3),
            "answers_checked": result["answers"], "answers_flagged": len(result["newly_flagged"]),
            "message": self.env._(
                "%(answers)s answers checked in %(seconds)s s: %(changed)s with a changed source, %(removed)s with a "
                "removed source, %(new)s newly flagged.", answers=result["answers"], seconds=f"{seconds:.3f}",
                changed=result["changed"], removed=result["removed"], new=len(result["newly_flagged"])),
        })
        _logger.info("pv_agent: drift check of %s answers took %.3f s", result["answers"], seconds)

    @api.model
    def _mark_indexed(self, Entry, snapshot):
        """Clear the stale flag of entries that did not change while the index was built."""
        current = Entry.browse(list(snapshot)).exists()
        unchanged = current.filtered(lambda r: snapshot[r.id] == (r.content_hash, r.active))
        unchanged.write({"stale": False})
        if len(unchanged) == len(snapshot):
            self.env["ir.config_parameter"].sudo().set_param(odoo_settings.PARAM_INDEX_DIRTY, "")

    @api.model
    def _index_is_stale(self) -> bool:
        Entry = self.env["pv_agent.entry"].sudo().with_context(active_test=False)
        dirty = self.env["ir.config_parameter"].sudo().get_param(odoo_settings.PARAM_INDEX_DIRTY)
        return bool(dirty) or bool(Entry.search_count([("stale", "=", True)], limit=1))


def _as_dict(report) -> dict:
    return report.as_dict() if hasattr(report, "as_dict") else dataclasses.asdict(report)

