"""Every posted message goes to PV-Agent's bot (Discuss chats and @PV-Agent mentions, see
pv_agent_bot.py); PV-Agent itself is never notified by e-mail."""
from __future__ import annotations

from odoo import models


class MailThread(models.AbstractModel):
    _inherit = "mail.thread"

    def _message_post_after_hook(self, message, msg_vals):
        result = super()._message_post_after_hook(message, msg_vals)
        self.env["pv_agent.bot"]._on_message_posted(self, message, msg_vals)
        return result

    def _notify_get_recipients(self, message, msg_vals=False, **kwargs):
        # PV-Agent reads mentions through the hook above; it is never notified by e-mail.
        recipients = super()._notify_get_recipients(message, msg_vals=msg_vals, **kwargs)
        bot = self.env["pv_agent.bot"]._bot_partner()
        return [r for r in recipients if r.get("id") != bot.id] if bot else recipients
