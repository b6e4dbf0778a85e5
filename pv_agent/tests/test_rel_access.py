"""Access, method by method (issue 7): every public method of PV-Agent's models — the addon's
own, found by introspection, and every ORM method Odoo exposes on them — called the way the
browser calls it (``call_kw``, as /web/dataset/call_kw does) as a user without the PV-Agent
group, a portal user and the public user; a clerk against another clerk's conversation,
messages and feedback; a clerk calling manager actions. Each must be denied with AccessError
(searches by a clerk return nothing of the other clerk), nothing may change, and no response
or error may contain knowledge-base text or another user's history."""
from __future__ import annotations

import inspect
import json

from markupsafe import Markup

from odoo.exceptions import AccessError
from odoo.http import Controller
from odoo.service.model import call_kw, get_public_method
from odoo.tests import new_test_user, tagged

from .common import PvAgentCase, PvAgentHttpCase

GOOD = "Die Geringfügigkeitsgrenze beträgt monatlich 551,10 € (Stand 2026-01) [pv-sv-01]."
KB_MARKER = "Zaunkoenig4711"  # only in one knowledge-base entry
HISTORY_MARKER = "Hx7Verlauf"  # only in the other clerk's questions
CORRECTION_MARKER = "Kx7Korrektur"  # only in the other clerk's correction suggestion
MARKER_ENTRY = f"""---
id: pv-marker-01
title: Markerwert
stand: 2026-01
topic: sozialversicherung
tags: [Markerwert]
legal_bases: ["§ 5 Abs 2 ASVG"]
source: briefing
official: true
---

## Zusammenfassung
Der Markerwert heißt {KB_MARKER} und steht nur in diesem Eintrag der Wissensbasis.

## Kernwerte & Fristen
- Markerwert: {KB_MARKER}

## Rechtsgrundlagen
- § 5 Abs 2 ASVG – Markerwert

## Payroll-Relevanz (Odoo)
Der Markerwert ist kein Parameter.

## Verweise
- [pv-sv-01] Geringfügigkeitsgrenze
"""

PV_MODELS = ["pv_agent.entry", "pv_agent.conversation", "pv_agent.message", "pv_agent.feedback",
             "pv_agent.index.job", "pv_agent.bot", "pv_agent.entry.version", "pv_agent.answer.cache"]

# Odoo's ORM entry points that read, search, write or create data: for a user without the group
# each must raise AccessError on every PV-Agent model (the rest — fields_get, get_views, … — only
# describe the model and may answer, without data).
ORM_DATA_METHODS = {
    "read", "web_read", "search", "search_read", "web_search_read", "search_count", "read_group",
    "formatted_read_group", "formatted_read_grouping_sets", "web_read_group", "read_progress_bar",
    "name_search", "web_name_search", "export_data", "copy", "copy_data", "create", "write", "unlink",
    "web_save", "web_save_multi", "name_create", "action_archive", "action_unarchive", "toggle_active",
    "get_metadata", "search_panel_select_range", "search_panel_select_multi_range", "get_field_translations",
    "update_field_translations", "web_resequence", "onchange", "load",
}

ADDON_METHODS = {"action_ask", "panel_load", "action_retry", "action_cancel", "action_vote", "action_suggest_correction",
                 "action_accept", "action_reject", "action_import_knowledge_base", "action_reindex",
                 "action_queue_reindex", "action_conflict_take_file", "action_conflict_keep_odoo",
                 "action_conflict_save_merged", "action_open_conflict", "action_export_markdown",
                 "action_export_changed", "action_write_to_folder", "action_answer_fresh"}

# the fields each model's sweep asks for: the ones that hold knowledge-base text or history
TEXT_FIELDS = {
    "pv_agent.entry": ["entry_id", "name", "body", "tags"],
    "pv_agent.conversation": ["name", "user_id", "message_ids"],
    "pv_agent.message": ["body", "answer_json", "error", "citation_entry_ids"],
    "pv_agent.feedback": ["question", "text", "answer_json", "answer_html", "cited_html"],
    "pv_agent.index.job": ["message", "report_json", "kb_path"],
    "pv_agent.bot": ["display_name"],
    "pv_agent.entry.version": ["markdown", "entry_id", "content_hash"],
    "pv_agent.answer.cache": ["question", "answer_json", "key"],
}
GROUP_FIELD = {"pv_agent.entry": "source", "pv_agent.conversation": "user_id", "pv_agent.message": "state",
               "pv_agent.feedback": "state", "pv_agent.index.job": "state", "pv_agent.bot": "id",
               "pv_agent.entry.version": "origin", "pv_agent.answer.cache": "state"}


def _args_for(model_name: str, method, with_ids: list | None, **extra) -> list:
    """Positional arguments a browser would send, filled from the method's signature."""
    fields = TEXT_FIELDS[model_name]
    spec = {f: {} for f in fields}
    group = GROUP_FIELD[model_name]
    values = {
        "domain": [], "fields": fields, "fields_to_export": fields, "specification": spec, "fields_spec": spec,
        "vals": {fields[0]: "überschrieben"}, "vals_list": [{fields[0]: "neu"}], "name": "a",
        "groupby": [group], "aggregates": ["__count"], "grouping_sets": [[group]], "group_by": group,
        "progress_bar": {"field": group, "colors": {}}, "operation": "read", "field_names": fields,
        "views": [[False, "list"], [False, "form"]], "values": {}, "help_message": "x",
        "field_name": fields[0], "translations": {}, "full_name": "x", "data": [["x"]],
        "view_id": False, "view_type": "list", "new": None,
        # the addon's own methods (the explicit tests call them with better arguments too)
        "question": "Wie hoch ist die Geringfügigkeitsgrenze?", "vote": "up", "text": "falsch",
        "entry_record_id": 0, "markdown": "---\nid: x\n---\n",
        # mail.thread's methods on the entries (their history is a chatter)
        "message": "From: x@example.com\nSubject: x\n\nx", "message_dict": {}, "msg_dict": {},
        "model": "pv_agent.entry", "source_ref": "mail.mail_notification_light", "notification_type": "email",
        "new_thread": None,
    }
    if method.__name__.startswith("search_panel_"):
        values["field_name"] = group
    values.update(extra)
    params = list(inspect.signature(method).parameters.values())[1:]
    required = [p.name for p in params
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    args = [values[name] if name in values else _derived_value(name, model_name, with_ids) for name in required]
    if method.__name__ == "load":
        args = [fields[:1], [["x"]]]
    return ([] if with_ids is None else [with_ids]) + args


def _derived_value(name: str, model_name: str, with_ids: list | None):
    """A plausible argument for a parameter the sweep has no explicit value for, from its name:
    other installations (Odoo Enterprise's gantt, grid, cohort and map views, other apps) add
    public methods to every model, and each must be called, not skipped."""
    fields = TEXT_FIELDS[model_name]
    group = GROUP_FIELD[model_name]
    lowered = name.lower()
    if "domain" in lowered:
        return []
    if lowered in ("ids", "res_ids", "record_ids") or lowered.endswith("_ids"):
        return list(with_ids or [])
    if lowered.endswith("_id") or lowered == "id":
        return (with_ids or [0])[0]
    if "groupby" in lowered or "group_by" in lowered:
        return [group]
    if lowered.endswith(("field_name", "field")) or lowered in ("measure", "field"):
        return fields[0]
    if lowered.endswith("fields") or "spec" in lowered:
        return {f: {} for f in fields} if "spec" in lowered else list(fields)
    if "date" in lowered or lowered in ("start", "stop", "end"):
        return "2026-01-01 00:00:00"
    if lowered in ("scale", "interval", "timeline", "mode", "method", "reschedule_method", "drag_action"):
        return {"mode": "retention", "timeline": "forward", "drag_action": "reschedule"}.get(lowered, "month")
    if lowered in ("limit", "offset", "count", "value"):
        return 0
    if "vals" in lowered or "values" in lowered or lowered in ("data", "options", "changes"):
        return {fields[0]: "überschrieben"}
    return None


def addon_public_methods(env) -> dict[tuple[str, str], str]:
    """(model, method) → defining module, for every public method that one of the addon's model
    classes defines (new models and overrides alike, e.g. res.config.settings, ir.http,
    mail.thread and all the models inheriting it)."""
    found = {}
    for model_name in env.registry:
        for klass in type(env[model_name]).__mro__:
            module = getattr(klass, "__module__", "") or ""
            if not module.startswith("odoo.addons.pv_agent."):
                continue
            for attr, value in vars(klass).items():
                if not attr.startswith("_") and inspect.isfunction(value):
                    found[(model_name, attr)] = module
    return found


# Data methods that refuse a stranger before touching a record, with another exception
NOT_APPLICABLE = {
    "export_data": "rights to export data",  # the export right (base.group_allow_export) is checked first
    "action_archive": "No 'active' field",  # models without archiving
    "action_unarchive": "No 'active' field",
    "toggle_active": "No 'active' field",
}


class _RollBack(Exception):
    pass


@tagged("post_install", "-at_install")
class TestAccessEveryMethod(PvAgentCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.portal = new_test_user(cls.env, "pv_portal", groups="base.group_portal", name="Paula Portal")
        cls.public = cls.env.ref("base.public_user")
        cls.strangers = {"internal user without the group": cls.outsider, "portal user": cls.portal,
                         "public user": cls.public}

    def setUp(self):
        super().setUp()
        self.write_kb_file("pv-marker-01.md", MARKER_ENTRY)
        self.import_kb()
        self.reindex()
        Conversation = self.env["pv_agent.conversation"]
        self.entry = self.Entry.search([("entry_id", "=", "pv-marker-01")])
        self.assertIn(KB_MARKER, self.entry.body)
        self.mine = self.ask_as(self.clerk, "Wie hoch ist die Geringfügigkeitsgrenze 2026?", GOOD)
        self.theirs = self.ask_as(self.clerk2, f"Wie hoch ist die Geringfügigkeitsgrenze? {HISTORY_MARKER}", GOOD)
        self.their_answer = self.theirs.answer_id
        self.assertTrue(self.their_answer)
        self.their_conv = self.theirs.conversation_id
        self.their_answer.with_user(self.clerk2).action_vote("down")
        self.their_answer.with_user(self.clerk2).action_suggest_correction(
            self.Entry.search([("entry_id", "=", "pv-sv-01")]).id, f"Bitte prüfen {CORRECTION_MARKER}")
        self.their_feedback = self.env["pv_agent.feedback"].search([("user_id", "=", self.clerk2.id)])
        self.assertEqual(len(self.their_feedback), 2)
        self.their_failed = Conversation.sudo()._queue_question(
            f"Noch eine Frage {HISTORY_MARKER}", self.clerk2, conversation=self.their_conv)
        self.their_failed._fail("Testfehler")
        self.job = self.Job.search([], limit=1)
        self.settings = self.env["res.config.settings"].with_user(self.admin).create({})
        # the marker entry edited in Odoo while its file changed: in conflict, with the manager's wizard open
        self.entry.with_user(self.manager).write({"body": self.entry.body.replace("kein Parameter", "kein Wert")})
        self.write_kb_file("pv-marker-01.md", MARKER_ENTRY.replace("Markerwert ist", "Markerwert war"))
        self.import_kb()
        self.assertTrue(self.entry.file_conflict)
        self.conflict_wizard = self.env["pv_agent.entry.conflict"].with_user(self.manager).create(
            {"entry_id": self.entry.id})
        self.kb_secrets = [KB_MARKER] + self._body_lines()
        self.history_secrets = [HISTORY_MARKER, CORRECTION_MARKER]
        self.env.flush_all()

    def _body_lines(self):
        lines = []
        for body in self.Entry.search([]).mapped("body"):
            lines += [line.strip()[:40] for line in body.splitlines() if len(line.strip()) >= 30]
        return lines

    # -- helpers ---------------------------------------------------------------------------
    def snapshot(self):
        """PV-Agent's tables, the cron triggers and PV-Agent's parameters, to compare before and after."""
        self.env.flush_all()
        cr = self.env.cr
        state = {}
        for table in ("pv_agent_conversation", "pv_agent_message", "pv_agent_feedback", "pv_agent_index_job",
                      "pv_agent_entry", "ir_cron_trigger", "pv_agent_answer_cache"):
            cr.execute(f"SELECT count(*), md5(string_agg(t::text, '|' ORDER BY t.id)) FROM {table} t")  # noqa: S608
            state[table] = cr.fetchone()
        cr.execute("SELECT key, value FROM ir_config_parameter WHERE key LIKE 'pv_agent.%' ORDER BY key")
        state["params"] = cr.fetchall()
        return state

    def call(self, user, model, method, args, kwargs=None):
        """``call_kw`` as ``user``, as /web/dataset/call_kw runs it, rolled back afterwards.

        Returns ('denied', message) for an AccessError, ('error', message) for any other
        exception, ('ok', result) otherwise.
        """
        try:
            with self.env.cr.savepoint():
                try:
                    result = call_kw(self.env[model].with_user(user), method, args, kwargs or {})
                    self.env.flush_all()
                except AccessError as exc:
                    outcome = ("denied", str(exc))
                except Exception as exc:  # noqa: BLE001 - any other refusal is recorded and checked for leaks
                    outcome = ("error", f"{type(exc).__name__}: {exc}")
                else:
                    outcome = ("ok", result)
                raise _RollBack
        except _RollBack:
            pass
        self.env.invalidate_all()
        return outcome

    def assert_clean(self, what, payload, secrets):
        text = json.dumps(payload, ensure_ascii=False, default=str)
        leaked = [s for s in secrets if s in text]
        self.assertFalse(leaked, f"{what} returned protected text: {leaked} in {text[:300]}")

    def assert_no_data(self, model, method, outcome, detail):
        """A data method gave nothing away: AccessError, or one of the refusals that come
        before any record is touched, or an empty answer."""
        if outcome == "denied":
            return
        if outcome == "error" and method in NOT_APPLICABLE and NOT_APPLICABLE[method] in detail:
            return
        if outcome == "ok" and method == "load" and detail.get("ids") is False:
            return  # load reports the AccessError in its answer
        if outcome == "ok" and detail in ([], None, {}, False, ([], {"translation_type": "text",
                                                            "translation_show_source": False})):
            return
        self.fail(f"{model}.{method}: {outcome} {detail!r:.300}")

    # -- the addon's own methods -----------------------------------------------------------
    def addon_calls(self):
        """Every public method the addon defines, with the arguments the UI sends. The test
        fails when the addon gains a public method that is not listed here."""
        entry, conv, answer, failed = self.entry, self.their_conv, self.their_answer, self.their_failed
        feedback = self.their_feedback.filtered(lambda f: f.kind == "correction")
        settings = self.settings.id
        wizard = self.conflict_wizard.id
        other = self.Entry.search([("entry_id", "=", "pv-sv-01")])
        calls = {
            ("pv_agent.conversation", "action_ask"): [(["Was ist das Jahressechstel?"], {}),
                                                      (["Und 2025?"], {"conversation_id": conv.id})],
            ("pv_agent.conversation", "panel_load"): [([], {}), ([], {"conversation_id": conv.id})],
            ("pv_agent.message", "action_retry"): [([[failed.id]], {})],
            ("pv_agent.message", "action_cancel"): [([[failed.id]], {})],
            ("pv_agent.message", "action_vote"): [([[answer.id], "up"], {}), ([[answer.id], False], {})],
            ("pv_agent.message", "action_suggest_correction"): [([[answer.id], entry.id, "geht so nicht"], {})],
            ("pv_agent.message", "action_reanswer"): [([[answer.id]], {})],
            ("pv_agent.message", "action_reanswer_from_form"): [([[answer.id]], {})],
            ("pv_agent.message", "action_answer_fresh"): [([[answer.id]], {})],
            ("pv_agent.entry", "action_open_citing_answers"): [([[entry.id]], {})],
            ("pv_agent.feedback", "action_accept"): [([[feedback.id]], {})],
            ("pv_agent.feedback", "action_reject"): [([[feedback.id]], {})],
            ("pv_agent.entry", "action_import_knowledge_base"): [([], {})],
            ("pv_agent.entry", "action_reindex"): [([[entry.id]], {})],
            ("pv_agent.entry", "create"): [([{"entry_id": "pv-neu-01", "name": "x", "stand": "2026-01",
                                              "topic": "x", "body": "## Zusammenfassung\nx"}], {})],
            ("pv_agent.entry", "write"): [([[entry.id], {"body": "überschrieben"}], {})],
            ("pv_agent.entry", "unlink"): [([[entry.id]], {})],
            # edits in Odoo vs. the files (issue 20)
            ("pv_agent.entry", "action_conflict_take_file"): [([[entry.id]], {})],
            ("pv_agent.entry", "action_conflict_keep_odoo"): [([[entry.id]], {})],
            ("pv_agent.entry", "action_conflict_save_merged"): [([[entry.id], MARKER_ENTRY], {})],
            ("pv_agent.entry", "action_open_conflict"): [([[entry.id]], {})],
            ("pv_agent.entry", "action_export_markdown"): [([[entry.id]], {}), ([[entry.id, other.id]], {})],
            ("pv_agent.entry", "action_export_changed"): [([], {})],
            ("pv_agent.entry", "action_write_to_folder"): [([[entry.id]], {}), ([[]], {})],
            ("pv_agent.entry.conflict", "create"): [([{"entry_id": entry.id}], {})],
            ("pv_agent.entry.conflict", "action_take_file"): [([[wizard]], {})],
            ("pv_agent.entry.conflict", "action_keep_odoo"): [([[wizard]], {})],
            ("pv_agent.entry.conflict", "action_save_merged"): [([[wizard]], {})],
            ("pv_agent.answer.source", "create"): [([{"message_id": answer.id, "entry_ref": entry.entry_id,
                                                      "entry_id": entry.id, "chunk_hash": "x"}], {})],
            ("pv_agent.index.job", "action_queue_reindex"): [([], {}), ([], {"full": True})],
            ("res.config.settings", "action_pv_agent_test_connection"): [([[settings]], {}), ([[]], {})],
            ("res.config.settings", "action_pv_agent_reindex"): [([[settings]], {}), ([[]], {})],
            ("res.config.settings", "action_pv_agent_import"): [([[settings]], {}), ([[]], {})],
            ("res.config.settings", "action_pv_agent_clear_api_key"): [([[settings]], {}), ([[]], {})],
            ("res.config.settings", "action_pv_agent_open_jobs"): [([[settings]], {}), ([[]], {})],
            ("res.config.settings", "set_values"): [([[settings]], {}), ([[]], {})],
            ("res.config.settings", "default_get"): [([["pv_agent_ollama_url", "pv_agent_kb_path"]], {})],
            ("pv_agent.conversation", "action_delete_my_history"): [([], {})],
            ("res.users", "action_pv_agent_delete_my_history"): [([[u.id]], {}) for u in (
                self.clerk2, self.outsider, self.portal, self.public)],
            ("res.users", "unlink"): [([[self.clerk2.id]], {})],
            # the second review (issue 29)
            ("pv_agent.feedback", "write"): [([[feedback.id], {"review_note": "überschrieben"}], {}),
                                             ([[feedback.id], {"text": "überschrieben"}], {})],
            ("res.partner", "write"): [([[self.env.ref("pv_agent.partner_pv_agent").id], {"name": "Geschäftsführung"}],
                                        {})],
            ("ir.cron", "method_direct_trigger"): [([[self.env.ref("pv_agent.ir_cron_pv_agent_answer").id]], {})],
        }
        return calls

    # session_info is the caller's own session; it must not announce PV-Agent (TestAccessOverHttp)
    ANSWERING_FOR_THE_CALLER = {("ir.http", "session_info")}

    def test_every_addon_method_is_listed(self):
        found = set(addon_public_methods(self.env))
        listed = set(self.addon_calls()) | self.ANSWERING_FOR_THE_CALLER
        self.assertEqual(found, listed, "a public method of the addon is not covered by the access tests")
        self.assertFalse(Controller.children_classes.get("pv_agent"), "the addon has no HTTP routes")

    def test_strangers_are_denied_every_addon_method(self):
        """Without the group, as portal and as public user: every call AccessError, nothing changed."""
        before = self.snapshot()
        tried = 0
        for label, user in self.strangers.items():
            for (model, method), variants in self.addon_calls().items():
                for args, kwargs in variants:
                    with self.subTest(user=label, method=f"{model}.{method}", args=args):
                        outcome, detail = self.call(user, model, method, args, kwargs)
                        tried += 1
                        self.assertEqual(outcome, "denied", f"{detail!r:.300}")
                        self.assert_clean(f"{model}.{method}", detail, self.kb_secrets + self.history_secrets)
        self.assertEqual(self.snapshot(), before, "a denied call changed data")
        self.assertEqual(tried, 3 * sum(len(v) for v in self.addon_calls().values()))

    def test_strangers_get_nothing_from_any_orm_method(self):
        """Every public method Odoo exposes on each PV-Agent model, for the three strangers: the
        data methods raise AccessError; the others answer without knowledge-base text or history."""
        before = self.snapshot()
        records = {"pv_agent.entry": self.entry, "pv_agent.conversation": self.their_conv,
                   "pv_agent.message": self.their_answer, "pv_agent.feedback": self.their_feedback[:1],
                   "pv_agent.index.job": self.job, "pv_agent.bot": self.env["pv_agent.bot"],
                   "pv_agent.entry.version": self.entry.version_ids[:1],
                   "pv_agent.answer.cache": self.env["pv_agent.answer.cache"].sudo().search([], limit=1)}
        self.assertTrue(records["pv_agent.answer.cache"], "a verified answer is kept for reuse")
        stats = {"denied": 0, "error": 0, "ok": 0}
        for model in PV_MODELS:
            Model = self.env[model]
            names = sorted(n for n in dir(type(Model)) if not n.startswith("_"))
            methods = []
            for name in names:
                try:
                    methods.append(get_public_method(Model, name))
                except (AccessError, AttributeError):
                    continue
            for label, user in self.strangers.items():
                for method in methods:
                    with self.subTest(user=label, method=f"{model}.{method.__name__}"):
                        ids = None if getattr(method, "_api_model", False) else records[model].ids
                        args = _args_for(model, method, ids, entry_record_id=self.entry.id)
                        outcome, detail = self.call(user, model, method.__name__, args)
                        stats[outcome] += 1
                        self.assert_clean(f"{model}.{method.__name__}", detail, self.kb_secrets + self.history_secrets)
                        if method.__name__ in ORM_DATA_METHODS | ADDON_METHODS and model != "pv_agent.bot":
                            self.assert_no_data(model, method.__name__, outcome, detail)
        self.assertEqual(self.snapshot(), before, "a call changed data")
        self.assertGreater(stats["denied"], 5 * 3 * 25)
        print(f"\naccess sweep (strangers): {sum(stats.values())} calls, {stats}")

    def test_settings_values_are_not_readable_without_the_right(self):
        """res.config.settings hands config parameters to anyone who asks for defaults; PV-Agent's
        (Ollama URL, folder, index state) stay with the administrators."""
        fields = [f for f in self.env["res.config.settings"]._fields if f.startswith("pv_agent_")]
        for label, user in {**self.strangers, "clerk": self.clerk, "PV-Agent manager": self.manager}.items():
            for method, args in (("default_get", [fields]), ("onchange", [[], {}, [], {f: {} for f in fields}]),
                                 ("web_read", [[self.settings.id], {f: {} for f in fields}]),
                                 ("read", [[self.settings.id], fields]),
                                 ("web_save", [[], {"pv_agent_ollama_url": "http://evil:1"}, {}]),
                                 ("create", [{"pv_agent_ollama_url": "http://evil:1"}]),
                                 ("execute", [[self.settings.id]])):
                with self.subTest(user=label, method=method):
                    outcome, detail = self.call(user, "res.config.settings", method, args)
                    self.assertEqual(outcome, "denied", f"{detail!r:.300}")
                    self.assertNotIn(self.ollama.url, json.dumps(detail, default=str))
        self.assertEqual(self.env["ir.config_parameter"].sudo().get_param("pv_agent.ollama_url"), self.ollama.url)
        self.assertIn("pv_agent_ollama_url", self.env["res.config.settings"].with_user(self.admin).default_get(fields))

    # -- clerk against clerk ---------------------------------------------------------------
    def test_clerk_gets_nothing_of_another_clerks_history(self):
        """Clara against Conrad's conversation, messages and feedback, through every public method
        of those models: direct reads and writes AccessError, searches find nothing of his."""
        before = self.snapshot()
        records = {"pv_agent.conversation": self.their_conv, "pv_agent.message": self.their_answer,
                   "pv_agent.feedback": self.their_feedback.filtered(lambda f: f.kind == "correction")}
        direct = {"read", "web_read", "export_data", "copy", "copy_data", "write", "unlink", "web_save",
                  "get_metadata", "action_archive", "action_unarchive", "toggle_active", "onchange",
                  "get_field_translations", "update_field_translations", "action_retry", "action_cancel", "action_vote",
                  "action_suggest_correction", "action_accept", "action_reject", "web_resequence"}
        stats = {"denied": 0, "error": 0, "ok": 0}
        for model, recs in records.items():
            Model = self.env[model]
            for name in sorted(n for n in dir(type(Model)) if not n.startswith("_")):
                try:
                    method = get_public_method(Model, name)
                except (AccessError, AttributeError):
                    continue
                with self.subTest(method=f"{model}.{name}"):
                    ids = None if getattr(method, "_api_model", False) else recs.ids
                    args = _args_for(model, method, ids, entry_record_id=self.entry.id)
                    outcome, detail = self.call(self.clerk, model, name, args)
                    stats[outcome] += 1
                    self.assert_clean(f"{model}.{name}", detail, self.history_secrets)
                    if name in direct:
                        self.assert_no_data(model, name, outcome, detail)
        # and the panel, whatever conversation id the browser sends
        outcome, data = self.call(self.clerk, "pv_agent.conversation", "panel_load", [],
                                  {"conversation_id": self.their_conv.id})
        self.assertEqual(outcome, "ok")
        self.assertFalse(data["conversation"])
        self.assertEqual([c["id"] for c in data["conversations"]], [self.mine.conversation_id.id])
        self.assert_clean("panel_load", data, self.history_secrets)
        outcome, _detail = self.call(self.clerk, "pv_agent.conversation", "action_ask", ["Und?"],
                                     {"conversation_id": self.their_conv.id})
        self.assertEqual(outcome, "denied")
        self.assertEqual(self.snapshot(), before, "a call changed another clerk's data")
        print(f"\naccess sweep (clerk vs clerk): {sum(stats.values())} calls, {stats}")

    def test_clerk_cannot_call_manager_actions(self):
        """Reindex, import, settings, entry write, review accept/reject — each AccessError for a clerk
        (her own feedback included), and each works for the manager."""
        own = self.ask_as(self.clerk, "Was ist das Jahressechstel?", GOOD).answer_id
        own.with_user(self.clerk).action_vote("down")
        own_feedback = self.env["pv_agent.feedback"].search([("user_id", "=", self.clerk.id)])
        before = self.snapshot()
        settings = self.env["res.config.settings"].with_user(self.admin).create({})
        manager_calls = [
            ("pv_agent.index.job", "action_queue_reindex", [], {}),
            ("pv_agent.entry", "action_reindex", [self.entry.ids], {}),
            ("pv_agent.entry", "action_import_knowledge_base", [], {}),
            ("pv_agent.entry", "write", [self.entry.ids, {"body": "neu"}], {}),
            ("pv_agent.entry", "create", [{"entry_id": "pv-neu-01", "name": "x", "stand": "2026-01", "topic": "x",
                                           "body": "x"}], {}),
            ("pv_agent.entry", "unlink", [self.entry.ids], {}),
            ("pv_agent.entry", "action_archive", [self.entry.ids], {}),
            ("pv_agent.feedback", "action_accept", [own_feedback.ids], {}),
            ("pv_agent.feedback", "action_reject", [own_feedback.ids], {}),
            ("pv_agent.feedback", "write", [own_feedback.ids, {"state": "accepted"}], {}),
            ("pv_agent.index.job", "search_read", [[], ["message"]], {}),
            ("res.config.settings", "create", [{"pv_agent_kb_path": "/etc"}], {}),
            ("res.config.settings", "set_values", [[settings.id]], {}),
            ("res.config.settings", "set_values", [[]], {}),
            ("res.config.settings", "execute", [[settings.id]], {}),
            ("res.config.settings", "action_pv_agent_reindex", [[]], {}),
            ("res.config.settings", "action_pv_agent_import", [[]], {}),
            ("res.config.settings", "action_pv_agent_test_connection", [[]], {}),
            ("res.config.settings", "action_pv_agent_open_jobs", [[]], {}),
            # the verified answers kept for reuse hold other clerks' questions (issue 31)
            ("pv_agent.answer.cache", "search_read", [[], ["question", "answer_json"]], {}),
            ("pv_agent.answer.cache", "search_count", [[]], {}),
        ]
        for model, method, args, kwargs in manager_calls:
            with self.subTest(method=f"{model}.{method}", args=args):
                outcome, detail = self.call(self.clerk, model, method, args, kwargs)
                self.assertEqual(outcome, "denied", f"{detail!r:.300}")
        self.assertEqual(self.snapshot(), before, "a clerk's manager action changed data")
        # the manager may (review, reindex, entry write); settings stay with the administrator
        for model, method, args, kwargs in manager_calls[:3] + manager_calls[7:8]:
            outcome, detail = self.call(self.manager, model, method, args, kwargs)
            self.assertEqual(outcome, "ok", f"manager: {model}.{method}: {detail!r:.300}")


@tagged("post_install", "-at_install")
class TestBotAccess(PvAgentCase):
    """PV-Agent in Discuss and in chatters for users without the group, portal users and the
    public user (guests): a chat message to PV-Agent or an @mention gets no answer and no job."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bot = cls.env.ref("pv_agent.partner_pv_agent")
        cls.portal = new_test_user(cls.env, "pv_portal", groups="base.group_portal", name="Paula Portal")
        cls.public = cls.env.ref("base.public_user")
        cls.outsider_contacts = new_test_user(cls.env, "pv_outsider_contacts2", name="Olga Outsider",
                                              groups="base.group_user,base.group_partner_manager")
        cls.record = cls.env["res.partner"].create({"name": "Anna Angestellte", "email": "anna@example.com"})

    def setUp(self):
        super().setUp()
        self.import_kb()
        self.reindex()
        self.ollama.requests.clear()
        self.ollama.default_reply = None
        self.answer_cron = self.env.ref("pv_agent.ir_cron_pv_agent_answer")

    def mention(self, text):
        return Markup('<a href="/odoo/res.partner/%s" class="o_mail_redirect" data-oe-id="%s" data-oe-model="res.partner" '
                      'target="_blank">@PV-Agent</a> %s') % (self.bot.id, self.bot.id, text)

    def triggers(self):
        return self.env["ir.cron.trigger"].search_count([("cron_id", "=", self.answer_cron.id)])

    def bot_posts(self):
        return self.env["mail.message"].search_count([("author_id", "=", self.bot.id)])

    def test_strangers_get_no_answer_and_no_job(self):
        question = "Wie hoch ist die Geringfügigkeitsgrenze 2026?"
        paths = 0
        before = (self.triggers(), self.bot_posts())
        for label, user in (("internal user without the group", self.outsider_contacts), ("portal user", self.portal),
                            ("public user", self.public)):
            # portal users and guests post through controllers that run as sudo with their own user
            as_user = (lambda r, u=user: r.with_user(u)) if user == self.outsider_contacts else \
                (lambda r, u=user: r.with_user(u).sudo())
            with self.subTest(user=label, path="chat with PV-Agent"):
                if user == self.public:  # Odoo gives the public user no chats at all
                    with self.assertRaises(AccessError):
                        self.env["discuss.channel"].with_user(user).sudo()._get_or_create_chat([self.bot.id])
                    chat = self.env["discuss.channel"].with_user(self.portal).sudo()._get_or_create_chat([self.bot.id])
                else:
                    chat = self.env["discuss.channel"].with_user(user).sudo()._get_or_create_chat([self.bot.id])
                as_user(chat).message_post(body=question, message_type="comment", subtype_xmlid="mail.mt_comment",
                                           author_id=user.partner_id.id)
                paths += 1
            with self.subTest(user=label, path="@mention in a chatter"):
                as_user(self.record).message_post(body=self.mention(question), message_type="comment",
                                                  subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id],
                                                  author_id=user.partner_id.id)
                paths += 1
            with self.subTest(user=label, path="@mention in a group channel"):
                # open to everybody: a channel limited to employees drops a mention of PV-Agent (a partner
                # without a user) before any hook sees it
                channel = self.env["discuss.channel"].sudo().create({"name": f"Lohn {label}", "channel_type": "channel",
                                                                     "group_public_id": False})
                channel.add_members(partner_ids=[user.partner_id.id, self.bot.id])
                as_user(channel).message_post(body=self.mention(question), message_type="comment",
                                              subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id],
                                              author_id=user.partner_id.id)
                paths += 1
        self.assertEqual(paths, 9)
        self.assertFalse(self.env["pv_agent.message"].search([]), "no question was queued")
        self.assertEqual((self.triggers(), self.bot_posts()), before, "no job was triggered and PV-Agent said nothing")
        self.run_cron("pv_agent.ir_cron_pv_agent_answer")
        self.assertEqual(self.bot_posts(), before[1])
        self.assertFalse(self.ollama.requests, "nothing reached the model server")
        # the same three paths taken by a clerk do queue questions (the test can see a leak)
        clerk = new_test_user(self.env, "pv_clerk_contacts2", name="Carla Contacts",
                              groups="pv_agent.group_user,base.group_partner_manager")
        chat = self.env["discuss.channel"].with_user(clerk)._get_or_create_chat([self.bot.id])
        chat.with_user(clerk).message_post(body=question, message_type="comment", subtype_xmlid="mail.mt_comment")
        self.record.with_user(clerk).message_post(body=self.mention(question), message_type="comment",
                                                  subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id])
        channel = self.env["discuss.channel"].sudo().create({"name": "Lohn", "channel_type": "channel",
                                                             "group_public_id": False})
        channel.add_members(partner_ids=[clerk.partner_id.id, self.bot.id])
        channel.with_user(clerk).message_post(body=self.mention(question), message_type="comment",
                                              subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id])
        queued = self.env["pv_agent.message"].search([("author_id", "=", clerk.id)])
        self.assertEqual(len(queued), 3)
        self.assertGreater(self.triggers(), before[0])

    def test_impersonated_author_gets_no_answer(self):
        """A clerk's request that posts as somebody else (e.g. the mail gateway posting a stranger's
        e-mail that mentions PV-Agent) is not taken as the clerk's question."""
        chat = self.env["discuss.channel"].with_user(self.clerk)._get_or_create_chat([self.bot.id])
        chat.with_user(self.clerk).sudo().message_post(body="Wie hoch ist die Geringfügigkeitsgrenze?",
                                                       message_type="comment", subtype_xmlid="mail.mt_comment",
                                                       author_id=self.outsider.partner_id.id)
        self.record.sudo().message_post(body=self.mention("Wie hoch?"), message_type="comment",
                                        subtype_xmlid="mail.mt_comment", partner_ids=[self.bot.id],
                                        author_id=self.outsider.partner_id.id)
        self.assertFalse(self.env["pv_agent.message"].search([]))


@tagged("post_install", "-at_install")
class TestAccessOverHttp(PvAgentHttpCase):
    """The same through the real HTTP stack: JSON-RPC as a user without the group, a portal user
    and without a session; Odoo's generic content routes for the addon's records."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.portal = new_test_user(cls.env, "pv_portal", groups="base.group_portal", name="Paula Portal")

    def setUp(self):
        super().setUp()
        self.write_kb_file("pv-marker-01.md", MARKER_ENTRY)
        self.import_kb()
        self.reindex()
        self.entry = self.Entry.search([("entry_id", "=", "pv-marker-01")])
        self.theirs = self.ask_as(self.clerk2, f"Wie hoch ist die Geringfügigkeitsgrenze? {HISTORY_MARKER}", GOOD)
        self.secrets = [KB_MARKER, HISTORY_MARKER, "551,10"]

    def rpc(self, model, method, args, kwargs=None):
        return self.url_open("/web/dataset/call_kw", json={
            "jsonrpc": "2.0", "method": "call", "id": 1,
            "params": {"model": model, "method": method, "args": args, "kwargs": kwargs or {}}})

    def rpc_calls(self):
        conv, answer = self.theirs.conversation_id, self.theirs.answer_id
        return [
            ("pv_agent.conversation", "panel_load", [], {"conversation_id": conv.id}),
            ("pv_agent.conversation", "action_ask", ["Wie hoch ist die Geringfügigkeitsgrenze?"], {}),
            ("pv_agent.conversation", "web_search_read", [[], {"name": {}}], {}),
            ("pv_agent.message", "web_read", [[answer.id], {"body": {}, "answer_json": {}}], {}),
            ("pv_agent.message", "action_vote", [[answer.id], "up"], {}),
            ("pv_agent.entry", "search_read", [[], ["body"]], {}),
            ("pv_agent.entry", "web_read", [[self.entry.id], {"body": {}}], {}),
            ("pv_agent.index.job", "action_queue_reindex", [], {}),
            ("res.config.settings", "default_get", [["pv_agent_ollama_url", "pv_agent_kb_path"]], {}),
        ]

    def assert_clean(self, what, text):
        leaked = [s for s in self.secrets if s in text]
        self.assertFalse(leaked, f"{what}: {leaked} in {text[:300]}")

    def test_json_rpc_denied_for_strangers(self):
        questions = self.env["pv_agent.message"].search_count([])
        for login in ("pv_outsider", "pv_portal", None):
            self.authenticate(login, login)
            for model, method, args, kwargs in self.rpc_calls():
                with self.subTest(user=login or "public", method=f"{model}.{method}"):
                    response = self.rpc(model, method, args, kwargs)
                    self.assertEqual(response.status_code, 200)
                    error = response.json().get("error")
                    self.assertTrue(error, response.text[:300])
                    expected = "AccessError" if login else "SessionExpiredException"
                    self.assertIn(expected, error["data"]["name"])
                    self.assertNotIn("result", response.json())
                    self.assert_clean(f"{model}.{method}", response.text)
            info = self.make_jsonrpc_request("/web/session/get_session_info") if login else {}
            self.assertNotIn("pv_agent", info)
            for url in (f"/web/content/pv_agent.entry/{self.entry.id}/body",
                        f"/web/content/pv_agent.message/{self.theirs.answer_id.id}/answer_json",
                        f"/web/content/pv_agent.message/{self.theirs.id}/body",
                        f"/odoo/pv_agent.entry/{self.entry.id}",
                        f"/web/image/pv_agent.entry/{self.entry.id}/body"):
                with self.subTest(user=login or "public", url=url):
                    response = self.url_open(url)
                    if url.startswith("/web/content/"):
                        self.assertIn(response.status_code, (403, 404), url)
                    elif url.startswith("/web/image/"):  # Odoo's placeholder picture, nothing of the record
                        self.assertTrue(response.headers["Content-Type"].startswith("image/"), url)
                    self.assert_clean(url, response.text)
        self.assertEqual(self.env["pv_agent.message"].search_count([]), questions, "nothing was asked")
        self.assertFalse(self.Job.search([("kind", "=", "reindex"), ("state", "=", "queued")]))

    def test_session_announces_pv_agent_only_to_the_group(self):
        self.authenticate("pv_clerk", "pv_clerk")
        info = self.make_jsonrpc_request("/web/session/get_session_info")
        self.assertEqual(info["pv_agent"]["bot_partner_id"], self.env.ref("pv_agent.partner_pv_agent").id)
        self.assertFalse(info["pv_agent"]["is_manager"])
        # and the clerk's own RPC works, which is what the denials above are measured against
        response = self.rpc("pv_agent.entry", "web_read", [[self.entry.id], {"body": {}}])
        self.assertIn(KB_MARKER, response.text)
