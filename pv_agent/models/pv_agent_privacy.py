"""A user's PV-Agent history goes when they ask for it ("Meinen Verlauf löschen", in their
preferences) and when the user is deleted: conversations with every question, answer and its
audit record, their feedback, and their Discuss chat with PV-Agent.

Not deleted: PV-Agent's notes in records' chatters — they belong to the record's history,
which other people read too.
"""
from __future__ import annotations

from odoo import api, models
from odoo.exceptions import AccessError

from .pv_agent_conversation import _check_user


def _delete_history(env, users) -> int:
    """Delete the PV-Agent history of ``users`` (sudo); returns the number of conversations."""
    su = env(su=True)
    convs = su["pv_agent.conversation"].search([("user_id", "in", users.ids)])
    count = len(convs)
    su["pv_agent.feedback"].search([("user_id", "in", users.ids)]).unlink()
    convs.unlink()  # messages (and feedback on them) follow by ondelete=cascade
    bot = su["pv_agent.bot"]._bot_partner()
    if bot:
        for user in users:
            chats = su["discuss.channel"].search([
                ("channel_type", "=", "chat"),
                ("channel_member_ids.partner_id", "=", user.partner_id.id),
                ("channel_member_ids.partner_id", "=", bot.id),
            ]).filtered(lambda c: set(c.channel_member_ids.partner_id.ids) == {user.partner_id.id, bot.id})
            chats.unlink()  # the chat's messages go with it (mail.thread)
    return count


class PvAgentConversation(models.Model):
    _inherit = "pv_agent.conversation"

    @api.model
    def action_delete_my_history(self):
        """Delete the caller's own PV-Agent history, nobody else's; returns the number of conversations."""
        _check_user(self.env)
        return _delete_history(self.env, self.env.user)


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
