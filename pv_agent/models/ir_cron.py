"""Odoo's cron runner, telling services/cron_budget.py where a batch of jobs begins and where
each job ends: the answering job's deadline counts from where Odoo's watchdog counts."""
from __future__ import annotations

from odoo import models

from ..services import cron_budget


class IrCron(models.Model):
    _inherit = "ir.cron"

    @classmethod
    def _process_job(cls, cron_cr, job):
        cron_budget.job_starting(cron_cr)
        try:
            return super()._process_job(cron_cr, job)
        finally:
            cron_budget.job_done()

    def method_direct_trigger(self):
        cron_budget.forget_batch()
        return super().method_direct_trigger()
