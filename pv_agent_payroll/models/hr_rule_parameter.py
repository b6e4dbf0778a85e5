"""Rule parameters get a chatter: a version created from the check is posted there with the
entry it follows (the payroll's own model has none)."""
from odoo import models


class HrRuleParameter(models.Model):
    _name = "hr.rule.parameter"
    _inherit = ["hr.rule.parameter", "mail.thread"]
