"""PV-Agent in Discuss and in any record's chatter: thin adapters around the one answering job.

mail_bot's pattern: ``mail.thread._message_post_after_hook`` hands every posted message to
``pv_agent.bot._on_message_posted``. A chat with the PV-Agent partner, or an @PV-Agent
mention, queues the message's text (nothing else of the record) as a question through
``pv_agent.conversation._queue_question`` — the same job the systray panel uses. When the
job is done, ``_post_result`` posts back into the thread as PV-Agent (a comment in Discuss, an
internal note in a chatter): the answer where everybody who may read the thread is in the
PV-Agent group, elsewhere — every chatter, open channels — a pointer to the asker's panel.
Where the answer may be shown, ``_post_sources`` posts the sources found as soon as the question
is asked, and ``_post_result`` edits that one message into the answer.
"""
from __future__ import annotations

import json
import logging
import re

from lxml import html as lxml_html
from markupsafe import Markup, escape

from odoo import api, models
from odoo.exceptions import UserError

from ..services import answer_html

_logger = logging.getLogger(__name__)

BOT_XMLID = "pv_agent.partner_pv_agent"


def entry_url(record_id: int) -> str:
    return f"/odoo/pv_agent.entry/{record_id}"


class PvAgentBot(models.AbstractModel):
    _name = "pv_agent.bot"
    _description = "PV-Agent in Discuss and chatter"

    @api.model
    def _bot_partner(self):
        return self.env.ref(BOT_XMLID, raise_if_not_found=False) or self.env["res.partner"]

    # -- incoming ------------------------------------------------------------------------
    @api.model
    def _on_message_posted(self, record, message, msg_vals):
        """Queue a question if ``message`` (just posted on ``record``) is addressed to PV-Agent."""
        if msg_vals.get("message_type", message.message_type) != "comment" or len(record) != 1:
            return  # cheap checks first: this runs for every message posted anywhere
        bot = self._bot_partner()
        author_id = msg_vals.get("author_id") or message.author_id.id
        if not bot or author_id == bot.id:
            return
        user = self.env.user
        if user._is_public() or user.partner_id.id != author_id:
            return  # mail gateway, portal guests, impersonated authors: never
        mentioned = bot.id in (msg_vals.get("partner_ids") or message.partner_ids.ids)
        if record._name == "discuss.channel":
            in_chat = record.channel_type == "chat" and bot in record.sudo().channel_member_ids.partner_id
            if not (in_chat or mentioned):
                return
            source = "discuss"
        elif mentioned:
            source = "chatter"
        else:
            return
        if not user.has_group("pv_agent.group_user"):
            return  # only members of the group get answers; others get no reply at all
        question = self._question_text(msg_vals.get("body", message.body), bot)
        if not question:
            return
        try:
            self.env["pv_agent.conversation"]._queue_question(question, user, source=source, origin=record)
        except UserError as exc:
            self._post(record, source, Markup("<p>%s</p>") % exc.args[0])

    @api.model
    def _question_text(self, body, bot) -> str:
        """The message as plain text without the @PV-Agent mention: the only thing sent on."""
        if not body:
            return ""
        try:
            tree = lxml_html.fragment_fromstring(str(body), create_parent="div")
        except (ValueError, lxml_html.etree.ParserError):
            return ""
        for link in tree.xpath("//a[@data-oe-model='res.partner']"):
            if link.get("data-oe-id") == str(bot.id):
                link.drop_tree()
        for node in tree.iter("br", "p", "div", "li"):
            node.tail = "\n" + (node.tail or "")
        text = tree.text_content()
        text = re.sub(rf"@{re.escape(bot.name)}\b", " ", text, flags=re.IGNORECASE)
        return re.sub(r"[ \t]+", " ", text).strip()

    # -- outgoing ------------------------------------------------------------------------
    @api.model
    def _post_sources(self, question):
        """Post the sources found for ``question`` at once, labelled as such (not the answer), where
        the answer itself will be posted; the answer replaces them in the same message."""
        record = self._thread_for(question)
        if not record or not self._readers_within_group(record):
            return  # the pointer to the panel comes with the answer; sources are knowledge text too
        asker = question.author_id or question.conversation_id.user_id
        lang_self = self.with_context(lang=asker.lang or self.env.lang)
        try:
            with self.env.cr.savepoint():
                message = self._post(record, question.source, lang_self._sources_html(question))
                question.sudo().post_message_id = message.id
        except Exception:  # the question is queued; a thread refusing the post must not undo it
            _logger.exception("pv_agent: could not post the sources of question %s on %s", question.id, record)

    @api.model
    def _sources_html(self, question) -> Markup:
        items = []
        for src in question._sources_for_panel():
            label = Markup("[%s] %s · %s") % (src["id"], src["title"], src["stand"])
            link = Markup('<a href="%s">%s</a>') % (entry_url(src["record_id"]), label) if src["record_id"] else label
            items.append(Markup("<li>%s%s</li>") % (link, Markup(" – %s") % src["line"] if src["line"] else ""))
        heading = self.env._("Sources found – answer in progress …")
        return Markup("<p><em>%s</em></p><ul>%s</ul>") % (heading, Markup("").join(items))

    @api.model
    def _thread_for(self, question):
        """The thread ``question`` was asked in, if its asker may still post there (sudo), else None."""
        model = question.origin_model
        if not model or model not in self.env or not question.origin_res_id:
            return None
        asker = question.author_id or question.conversation_id.user_id
        Thread = self.env[model].with_user(asker)
        thread = Thread._get_thread_with_access(question.origin_res_id, mode=Thread._mail_post_access)
        return thread.sudo() if thread else None

    @api.model
    def _post_result(self, question, answer):
        """Post the answer of ``question`` (or a failure line) where the question was asked.

        The place comes from the question, which only the answering job writes. Nothing is posted
        unless the asker may still post there; the answer itself only where everybody who may
        read the thread is in the PV-Agent group (``_readers_within_group``), elsewhere a pointer
        to the asker's panel, where the answer is.
        """
        model = question.origin_model
        if not model or model not in self.env or not question.origin_res_id:
            return
        asker = question.author_id or question.conversation_id.user_id
        Thread = self.env[model].with_user(asker)
        thread = Thread._get_thread_with_access(question.origin_res_id, mode=Thread._mail_post_access)
        if not thread:
            _logger.info("pv_agent: %s may no longer post on %s,%s; answer %s stays in the panel",
                         asker.login, model, question.origin_res_id, question.id)
            early = question.sudo().post_message_id
            if early.exists():  # the sources posted when the question was asked go too: nothing of it stays there
                early.unlink()
            return
        record = thread.sudo()
        lang_self = self.with_context(lang=asker.lang or self.env.lang)
        if not answer or self._readers_within_group(record):
            body = lang_self._result_html(question, answer)  # a failure line names no reason: fine anywhere
        elif record._name == "discuss.channel":
            body = Markup("<p>%s</p>") % lang_self.env._(
                "PV-Agent answered %s in the PV-Agent panel: people outside the PV-Agent group may read this "
                "channel.", asker.name)
        else:
            body = Markup("<p>%s</p>") % lang_self.env._(
                "PV-Agent answered %s in the PV-Agent panel: people outside the PV-Agent group may read this "
                "record.", asker.name)
        try:
            with self.env.cr.savepoint():
                self._post_or_edit(record, question, body)
        except Exception:  # the answer is stored and in the panel; a thread refusing the post must not undo it
            _logger.exception("pv_agent: could not post the answer to question %s on %s", question.id, record)

    # -- who reads a thread --------------------------------------------------------------
    @api.model
    def _readers_within_group(self, record) -> bool:
        """True if everybody who may read ``record`` is a user of the PV-Agent group.

        Decided from the audience Odoo's record rule on ``discuss.channel`` gives a channel, not
        from its members: a ``channel`` is read by its authorized group (by everybody without
        one), a chat or group chat by its members, a sub-thread also by its parent's members.
        Any other record's readers follow that model's own rules: never assumed to be inside.
        """
        if record._name != "discuss.channel":
            return False
        channel = record.sudo()
        return all(self._channel_readers_within_group(c) for c in channel | channel.parent_channel_id)

    @api.model
    def _channel_readers_within_group(self, channel) -> bool:
        if channel.channel_type == "channel":
            group = channel.group_public_id
            return bool(group) and self.env.ref("pv_agent.group_user") in group.all_implied_ids
        return self._members_within_group(channel)

    @api.model
    def _members_within_group(self, channel) -> bool:
        """True for a chat whose every member (PV-Agent aside) is a user of the PV-Agent group."""
        bot = self._bot_partner()
        for member in channel.sudo().channel_member_ids:
            if member.partner_id == bot:
                continue
            users = member.partner_id.with_context(active_test=False).user_ids  # OdooBot's user is inactive
            if member.guest_id or not users or not any(u.has_group("pv_agent.group_user") for u in users):
                return False
        return True

    @api.model
    def _result_html(self, question, answer) -> Markup:
        if not answer and question.state == "cancelled":
            return Markup("<p>%s</p>") % self.env._("The question was cancelled: %s", question.error or "")
        if not answer:
            # the reason (an exception, the model server's address) stays in the asker's panel
            return Markup("<p>⚠ %s</p>") % self.env._(
                "The question could not be answered. The reason is shown in the asker's PV-Agent panel.")
        answer = answer.with_env(self.env)
        data = json.loads(answer.answer_json or "{}")
        by_id = {e.entry_id: e for e in answer.citation_entry_ids}
        line = answer._state_line(data)
        parts = [Markup("<p><strong>%s</strong></p>") % line["text"]]
        reused = answer._reused_label(data, question.author_id or question.conversation_id.user_id)
        if reused:  # a stored verdict for the identical prompt: say so, link the original for the asker
            link = Markup(' – <a href="/odoo/pv_agent.message/%s">%s</a>') % (
                reused["answer_id"], self.env._("open the original answer")) if reused["answer_id"] else ""
            parts.append(Markup('<p class="o_pv_agent_reused"><em>%s</em>%s</p>') % (reused["label"], link))
        parts.append(answer_html.render(answer.body or "", lambda i: entry_url(by_id[i].id) if i in by_id else None))
        chips = []
        for cite in data.get("citations") or []:
            entry = by_id.get(cite.get("id"))
            label = f"{cite.get('id')} · {cite.get('stand') or ''}".strip(" ·")
            chips.append(Markup('<a href="%s">%s</a>') % (entry_url(entry.id), label) if entry else escape(label))
        if chips:
            # entries shown without an answer were never checked against one: say so at the chips too
            label = (self.env._("Entries (not checked):") if answer.state in ("unanswered", "sources_only")
                     else self.env._("Sources:"))
            parts.append(Markup("<p>%s %s</p>") % (label, Markup(", ").join(chips)))
        return Markup("").join(parts)

    @api.model
    def _post(self, record, source, body):
        bot = self._bot_partner()
        subtype = "mail.mt_note" if source == "chatter" else "mail.mt_comment"
        extra = {"silent": True} if record._name == "discuss.channel" else {}
        return record.sudo().with_context(mail_create_nosubscribe=True, mail_post_autofollow=False).message_post(
            author_id=bot.id, body=body, message_type="comment", subtype_xmlid=subtype, **extra,
        )

    @api.model
    def _post_or_edit(self, record, question, body):
        """The answer replaces PV-Agent's message with the sources (one message per question);
        posted anew if there is none (any more) on ``record``."""
        message = question.sudo().post_message_id
        if message.exists() and message.model == record._name and message.res_id == record.id:
            record.sudo()._message_update_content(message, body=body)
            return message
        return self._post(record, question.source, body)

    @api.model
    def _notify_user(self, user, body):
        """A Discuss message from PV-Agent to ``user`` in their chat with PV-Agent."""
        bot = self._bot_partner()
        channel = self.env["discuss.channel"].with_user(user).sudo()._get_or_create_chat([bot.id], pin=True)
        channel.message_post(author_id=bot.id, body=body, message_type="comment",
                             subtype_xmlid="mail.mt_comment")
        return channel
