"""Odoo's cron runner, told where a batch of jobs begins (see services/cron_budget.py): the
answering job's deadline counts from there, as Odoo's watchdog does."""
from __future__ import annotations

from odoo import models

from ..services import cron_budget


class IrCron(models.Model):
    _inherit = "ir.cron"

    @classmethod
    def _process_job(cls, cron_cr, job):
        cron_budget.job_starting(cron_cr)
        return super()._process_job(cron_cr, job)

    def method_direct_trigger(self):
        cron_budget.forget_batch()
        return super().method_direct_trigger()
