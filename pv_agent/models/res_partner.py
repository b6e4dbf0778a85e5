"""PV-Agent's partner (pv_agent_bot_data.xml) is the bot's identity in every thread: contact
rights must not let anyone rename it ("Geschäftsführung") or delete it (the bot falls silent).
Like OdooBot's partner, which base keeps through its inactive technical user, it changes only
through the addon's data, a PV-Agent manager or an administrator."""
from __future__ import annotations

from odoo import api, models
from odoo.exceptions import AccessError

from .pv_agent_bot import BOT_XMLID


class ResPartner(models.Model):
    _inherit = "res.partner"

    def _check_pv_agent_bot_change(self):
        bot_id = self.env["ir.model.data"]._xmlid_to_res_id(BOT_XMLID, raise_if_not_found=False)
        if not bot_id or bot_id not in self.ids or self.env.su:
            return  # every write on any contact passes here: the cheap checks first
        user = self.env.user
        if not (user.has_group("pv_agent.group_manager") or user.has_group("base.group_system")):
            raise AccessError(self.env._("Only PV-Agent managers and administrators may change PV-Agent's contact."))

    def write(self, vals):
        self._check_pv_agent_bot_change()
        return super().write(vals)

    @api.ondelete(at_uninstall=False)
    def _unlink_except_pv_agent_bot(self):
        self._check_pv_agent_bot_change()
