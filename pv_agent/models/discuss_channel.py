"""@PV-Agent in a channel restricted to a group: Odoo keeps only mentions of partners whose user
is in the channel's group, and PV-Agent's partner has no user, so the mention was dropped and
the question never reached the bot. Kept for PV-Agent only; it is never notified (mail_thread.py)."""
from __future__ import annotations

from odoo import models


class DiscussChannel(models.Model):
    _inherit = "discuss.channel"

    def _get_allowed_message_partner_ids(self, partner_ids):
        allowed = super()._get_allowed_message_partner_ids(partner_ids)
        bot = self.env["pv_agent.bot"]._bot_partner()
        if self.channel_type == "channel" and bot and bot.id in (partner_ids or []) and bot.id not in allowed:
            allowed = [*allowed, bot.id]
        return allowed
