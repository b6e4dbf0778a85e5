"""PV-Agent on users: delete one's own PV-Agent history (preferences), and the history goes with
the user (see ``_delete_history`` in pv_agent_conversation.py)."""
from __future__ import annotations

from odoo import models
from odoo.exceptions import AccessError

from .pv_agent_conversation import _delete_history


class ResUsers(models.Model):
    _inherit = "res.users"

    def action_pv_agent_delete_my_history(self):
        """The button in the user's preferences."""
        if self != self.env.user:
            raise AccessError(self.env._("You can only delete your own history."))
        count = self.env["pv_agent.conversation"].action_delete_my_history()
        return {
            "type": "ir.actions.client",
            "tag": "display_notification",
            "params": {
                "title": "PV-Agent",
                "message": self.env._("Your PV-Agent history has been deleted (%s conversations).", count),
                "type": "success",
                "next": {"type": "ir.actions.client", "tag": "reload"},
            },
        }

    def unlink(self):
        # before the user goes: their conversations would otherwise block or outlive them
        self.check_access("unlink")
        _delete_history(self.env, self)
        return super().unlink()
