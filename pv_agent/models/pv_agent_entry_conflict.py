"""The side-by-side view of an entry's conflict with its file: Odoo version left, file version
right, and a merged text to edit. The three decisions are the entry's own methods; the view
hands them the fingerprints of both versions as they were when it opened, so that a decision
is never taken on a version nobody saw ("veraltet, bitte neu öffnen" otherwise)."""
from __future__ import annotations

from markupsafe import Markup

from odoo import api, fields, models

from ..services.engine_calls import entry_to_markdown, parse_entry_text, side_by_side
from .pv_agent_entry import FILE_DELETED


class PvAgentEntryConflict(models.TransientModel):
    _name = "pv_agent.entry.conflict"
    _description = "PV-Agent: conflict of an entry with its file"

    entry_id = fields.Many2one("pv_agent.entry", "Entry", required=True, readonly=True, ondelete="cascade")
    path = fields.Char(related="entry_id.path", string="File", compute_sudo=False)
    odoo_text = fields.Text("Odoo version", compute="_compute_versions")
    file_text = fields.Text("File version", compute="_compute_versions")
    diff_html = fields.Html("Differences", compute="_compute_versions", sanitize=False)
    merged_text = fields.Text("Merged version", help="The complete file text (frontmatter and sections)")
    file_deleted = fields.Boolean("File deleted", compute="_compute_versions")
    seen_content_hash = fields.Char("Odoo version shown", readonly=True)
    seen_file_hash = fields.Char("File version shown", readonly=True)

    @api.depends("entry_id")
    def _compute_versions(self):
        for wizard in self:
            entry = wizard.entry_id
            wizard.odoo_text = entry._markdown() if entry else ""
            # both sides written the same way, so that only what they say differs (the raw file
            # stays on the entry, page "File version")
            parsed = parse_entry_text(entry.conflict_file_text or "", entry.path or "")[0]
            wizard.file_text = entry_to_markdown(parsed) if parsed else (entry.conflict_file_text or "")
            wizard.diff_html = _diff_table(self.env, wizard.odoo_text, wizard.file_text)
            wizard.file_deleted = entry.conflict_file_hash == FILE_DELETED

    @api.model_create_multi
    def create(self, vals_list):
        self.env["pv_agent.entry"]._check_manager()
        for vals in vals_list:  # what the view shows, fixed when it opens
            entry = self.env["pv_agent.entry"].browse(vals.get("entry_id"))
            vals.update(seen_content_hash=entry.content_hash, seen_file_hash=entry.conflict_file_hash)
        records = super().create(vals_list)
        for wizard in records:
            if not wizard.merged_text:
                wizard.merged_text = wizard.entry_id._markdown()
        return records

    def _seen(self) -> dict:
        return {"content_hash": self.seen_content_hash, "file_hash": self.seen_file_hash}

    def _done(self):
        return {"type": "ir.actions.act_window_close", "infos": {"pv_agent_conflict": "resolved"}}

    def action_take_file(self):
        self.env["pv_agent.entry"]._check_manager()
        self.ensure_one()
        self.entry_id.action_conflict_take_file(**self._seen())
        return self._done()

    def action_keep_odoo(self):
        self.env["pv_agent.entry"]._check_manager()
        self.ensure_one()
        self.entry_id.action_conflict_keep_odoo(**self._seen())
        return self._done()

    def action_save_merged(self):
        self.env["pv_agent.entry"]._check_manager()
        self.ensure_one()
        self.entry_id.action_conflict_save_merged(self.merged_text, **self._seen())
        return self._done()


CONTEXT_LINES = 2  # unchanged lines shown around each difference


def _diff_table(env, left: str, right: str) -> Markup:
    all_rows = side_by_side(left, right)
    near_change = set()
    for i, (kind, _a, _b) in enumerate(all_rows):
        if kind != "equal":
            near_change.update(range(i - CONTEXT_LINES, i + CONTEXT_LINES + 1))
    rows, skipped = [], False
    for i, (kind, a, b) in enumerate(all_rows):
        if i not in near_change:
            if not skipped:
                rows.append(Markup('<tr class="o_pv_agent_diff_gap text-muted"><td>…</td><td>…</td></tr>'))
            skipped = True
            continue
        skipped = False
        rows.append(Markup('<tr class="o_pv_agent_diff_%s"><td class="%s">%s</td><td class="%s">%s</td></tr>') % (
            kind, "bg-danger-subtle" if kind in ("changed", "left") else "", a,
            "bg-success-subtle" if kind in ("changed", "right") else "", b))
    head = Markup('<thead><tr><th class="w-50">%s</th><th class="w-50">%s</th></tr></thead>') % (
        env._("Odoo version (in use)"), env._("File version"))
    return (Markup('<table class="table table-sm o_pv_agent_conflict_diff font-monospace small" '
                   'style="white-space: pre-wrap">') + head + Markup("<tbody>") + Markup("").join(rows)
            + Markup("</tbody></table>"))
