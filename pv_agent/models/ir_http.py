"""The session tells the web client whether the user may use PV-Agent (the systray panel)."""
from __future__ import annotations

from odoo import models


class IrHttp(models.AbstractModel):
    _inherit = "ir.http"

    def session_info(self):
        result = super().session_info()
        user = self.env.user
        if user._is_internal() and user.has_group("pv_agent.group_user"):
            result["pv_agent"] = {
                "is_manager": user.has_group("pv_agent.group_manager"),
                "bot_partner_id": self.env["pv_agent.bot"]._bot_partner().id,
            }
        return result
