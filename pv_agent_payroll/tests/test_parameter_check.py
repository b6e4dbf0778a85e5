"""„Lohnparameter prüfen“ on a real hr_payroll (Enterprise): the report reads the rule
parameters with the user's rights, lists differences with their source, creates a missing
version after confirmation and posts it in the parameter's chatter; the December/January run
tells managers in Discuss; the mapping goes back to the folder as parameters.yaml.

Run: tools/test-odoo -k pv_agent_payroll (needs an addons path with hr_payroll)."""
from __future__ import annotations

import datetime as dt
import inspect
import os
import shutil
import tempfile
from lxml import etree

from odoo.exceptions import AccessError, UserError
from odoo.tests import TransactionCase, new_test_user, tagged

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENTRIES = ("pv-bg-02", "pv-dg-14", "pv-ues-08")
MAPPING = """\
parameters:
  - code: AT_HBGL_MONTH
    name: Höchstbeitragsgrundlage monatlich
    entry: pv-bg-02
    fact: monatlich
    unit: EUR
  - code: AT_DZ_W
    entry: pv-dg-14
    fact: Wien
    unit: "%"
  - code: AT_OT_MAX
    entry: pv-ues-08
    fact: max. steuerfrei/Monat
    unit: EUR
  - code: AT_GONE
    entry: pv-xx-01
    fact: monatlich
    unit: EUR
"""
CHECK_DATE = dt.date(2026, 3, 1)


@tagged("post_install", "-at_install", "pv_agent_payroll")
class TestParameterCheck(TransactionCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.kb = tempfile.mkdtemp(prefix="pv_agent_payroll_")
        cls.addClassCleanup(shutil.rmtree, cls.kb, True)
        os.makedirs(os.path.join(cls.kb, "dokumente"))
        for entry_id in ENTRIES:
            shutil.copy(os.path.join(REPO, "wissensbasis", "dokumente", f"{entry_id}.md"),
                        os.path.join(cls.kb, "dokumente"))
        with open(os.path.join(cls.kb, "parameters.yaml"), "w", encoding="utf-8") as fh:
            fh.write(MAPPING)
        cls.env["ir.config_parameter"].sudo().set_param("pv_agent.kb_path", cls.kb)
        cls.env["pv_agent.entry"].sudo()._import_folder(cls.kb)
        cls.env["pv_agent.parameter.mapping"].sudo()._import_file()

        cls.env.company.country_id = cls.env.ref("base.at")
        cls.env["res.lang"]._activate_lang("de_DE")
        cls.env.ref("base.module_pv_agent_payroll")._update_translations("de_DE")
        cls.manager = new_test_user(cls.env, "pp_manager", name="Paula Payroll", lang="de_DE",
                                    groups="pv_agent.group_manager,hr_payroll.group_hr_payroll_manager")
        cls.reader = new_test_user(cls.env, "pp_reader", name="Rita Reader",
                                   groups="pv_agent.group_manager,hr.group_hr_user")
        cls.no_payroll = new_test_user(cls.env, "pp_nopayroll", name="Nora Nopayroll", groups="pv_agent.group_manager")
        cls.payroll_only = new_test_user(cls.env, "pp_payroll", name="Pia Payroll",
                                         groups="hr_payroll.group_hr_payroll_manager")
        cls.outsider = new_test_user(cls.env, "pp_outsider", name="Otto Outsider", groups="base.group_user")
        Param = cls.env["hr.rule.parameter"]
        cls.params = {}
        for code, versions in {
            "AT_HBGL_MONTH": [("2025-01-01", "6450.0")],  # no 2026 version: missing
            "AT_DZ_W": [("2025-01-01", "0.36"), ("2026-01-01", "0.36")],  # matches
            "AT_OT_MAX": [("2025-01-01", "200"), ("2026-01-01", "180")],  # 2026 version, wrong: differs
            "XX_OWN_PARAM": [("2026-01-01", "42")],  # not mapped
        }.items():
            cls.params[code] = Param.create({"name": code, "code": code, "parameter_version_ids": [
                (0, 0, {"date_from": date, "parameter_value": value}) for date, value in versions]})

    def run_check(self, user, date=CHECK_DATE):
        check = self.env["pv_agent.parameter.check"].with_user(user).create({"date": date, "next_year": False})
        check.action_run()
        return check, {line.code: line for line in check.line_ids}

    def test_the_report_lists_each_difference_with_its_source(self):
        check, lines = self.run_check(self.manager)
        self.assertEqual(lines["AT_HBGL_MONTH"].status, "missing")
        self.assertEqual(lines["AT_OT_MAX"].status, "differs")
        self.assertEqual(lines["AT_DZ_W"].status, "match")
        self.assertEqual(lines["XX_OWN_PARAM"].status, "unmapped")
        self.assertEqual(lines["AT_GONE"].status, "no_fact")
        hbgl = lines["AT_HBGL_MONTH"]
        self.assertEqual((hbgl.parameter_value, hbgl.kb_value, hbgl.kb_text), ("6450.0", 6930.0, "6.930 €"))
        self.assertEqual((hbgl.entry_id.entry_id, hbgl.entry_stand), ("pv-bg-02", "2026-01"))
        self.assertEqual(hbgl.parameter_id, self.params["AT_HBGL_MONTH"])
        self.assertTrue(hbgl.can_create)
        self.assertFalse(lines["AT_OT_MAX"].can_create)  # a wrong 2026 version is corrected by hand
        self.assertEqual((lines["AT_OT_MAX"].kb_value, lines["AT_OT_MAX"].entry_id.entry_id), (170.0, "pv-ues-08"))
        self.assertEqual(check.problem_count, 3)
        self.assertEqual(hbgl.action_open_entry()["res_id"], hbgl.entry_id.id)

    def test_creating_the_missing_version_posts_it_with_its_citation(self):
        _, lines = self.run_check(self.manager)
        lines["AT_HBGL_MONTH"].action_create_version()
        param = self.params["AT_HBGL_MONTH"]
        new = param.parameter_version_ids.filtered(lambda v: v.date_from == dt.date(2026, 1, 1))
        self.assertEqual(new.parameter_value, "6930.0")
        self.assertEqual(new.create_uid, self.manager)
        self.assertEqual(self.env["hr.rule.parameter"]._get_parameter_from_code("AT_HBGL_MONTH", CHECK_DATE), 6930.0)
        message = param.message_ids.filtered(lambda m: "[pv-bg-02]" in (m.body or ""))
        self.assertEqual(len(message), 1)
        self.assertIn("Stand 2026-01", message.body)
        self.assertIn("6930.0", message.body)
        self.assertEqual(message.author_id, self.manager.partner_id)
        _, again = self.run_check(self.manager)
        self.assertEqual(again["AT_HBGL_MONTH"].status, "match")
        with self.assertRaises(UserError):  # not twice, and never for a line that is not missing
            lines["AT_HBGL_MONTH"].action_create_version()
        with self.assertRaises(UserError):
            lines["AT_OT_MAX"].action_create_version()

    def test_the_button_asks_for_confirmation(self):
        arch = etree.fromstring(self.env.ref("pv_agent_payroll.pv_agent_parameter_check_view_form").arch)
        button = arch.xpath("//button[@name='action_create_version']")[0]
        self.assertTrue(button.get("confirm"))

    def test_the_users_rights_decide(self):
        with self.assertRaises(UserError):  # a PV-Agent manager without payroll rights reads nothing
            self.run_check(self.no_payroll)
        with self.assertRaises(AccessError):  # a payroll manager who is no PV-Agent manager has no report
            self.env["pv_agent.parameter.check"].with_user(self.payroll_only).create({"date": CHECK_DATE})
        _, lines = self.run_check(self.reader)  # HR officers read parameters, but may not create versions
        self.assertEqual(lines["AT_HBGL_MONTH"].status, "missing")
        with self.assertRaises(UserError):
            lines["AT_HBGL_MONTH"].action_create_version()
        self.assertFalse(self.params["AT_HBGL_MONTH"].parameter_version_ids.filtered(
            lambda v: v.date_from == dt.date(2026, 1, 1)))

    def test_december_and_january_runs_tell_the_managers_in_discuss(self):
        Check = self.env["pv_agent.parameter.check"]
        bot = self.env["pv_agent.bot"]._bot_partner()

        def notices(user):
            channel = self.env["discuss.channel"].with_user(user).sudo()._get_or_create_chat([bot.id], pin=True)
            return channel.message_ids.filtered(lambda m: m.author_id == bot and "AT_HBGL_MONTH" in (m.body or ""))

        self.assertFalse(Check._cron_check_parameters(today=dt.date(2026, 6, 1)))
        self.assertFalse(notices(self.manager))
        self.assertTrue(Check._cron_check_parameters(today=dt.date(2026, 12, 10)))
        self.assertEqual(len(notices(self.manager)), 1)
        self.assertIn("[pv-bg-02 · 2026-01]", notices(self.manager).body)
        self.assertIn("Lohnparameter:", notices(self.manager).body)  # in the manager's language (i18n/de.po)
        self.assertEqual(len(notices(self.reader)), 1)
        self.assertIn("Payroll parameters:", notices(self.reader).body)
        self.assertFalse(notices(self.no_payroll))  # may not read the parameters: not told their values
        self.assertFalse(Check._cron_check_parameters(today=dt.date(2026, 12, 11)))  # nothing new
        self.assertEqual(len(notices(self.manager)), 1)

    def test_the_mapping_is_edited_in_odoo_and_written_back(self):
        Mapping = self.env["pv_agent.parameter.mapping"].with_user(self.manager)
        records = Mapping.search([])
        self.assertEqual(records.mapped("code"), ["AT_HBGL_MONTH", "AT_DZ_W", "AT_OT_MAX", "AT_GONE"])
        gone = records.filtered(lambda r: r.code == "AT_GONE")
        self.assertIn("pv-xx-01", gone.problem)
        self.assertFalse(records.filtered(lambda r: r.code == "AT_DZ_W").problem)
        gone.write({"entry_ref": "pv-bg-02", "fact": "täglich"})
        self.assertFalse(gone.problem)
        with self.assertRaises(UserError):  # writing into the folder is the administrator's choice
            Mapping.action_write_file()
        self.env["ir.config_parameter"].sudo().set_param("pv_agent.export_to_folder", "1")
        Mapping.action_write_file()
        with open(os.path.join(self.kb, "parameters.yaml"), encoding="utf-8") as fh:
            text = fh.read()
        self.assertIn("code: AT_GONE\n  entry: pv-bg-02\n  fact: täglich", text)
        # the file reads back as the same records (what `pv-agent validate` checks in the folder)
        Mapping._import_file()
        self.assertEqual(Mapping.search([("code", "=", "AT_GONE")]).fact, "täglich")
        self.assertTrue(Mapping.action_export_file()["url"].startswith("/web/content/"))
        with self.assertRaises(AccessError):
            self.env["pv_agent.parameter.mapping"].with_user(self.payroll_only).search([])

    def test_strangers_are_denied_every_public_method_of_the_bridge(self):
        check, lines = self.run_check(self.manager)
        records = {"pv_agent.parameter.check": check, "pv_agent.parameter.check.line": lines["AT_HBGL_MONTH"],
                   "pv_agent.parameter.mapping": self.env["pv_agent.parameter.mapping"].search([], limit=1)}
        methods = set()
        for model_name in self.env.registry:
            for klass in type(self.env[model_name]).__mro__:
                if (getattr(klass, "__module__", "") or "").startswith("odoo.addons.pv_agent_payroll."):
                    methods |= {(model_name, attr) for attr, value in vars(klass).items()
                                if not attr.startswith("_") and inspect.isfunction(value)}
        self.assertIn(("pv_agent.parameter.check.line", "action_create_version"), methods)
        self.assertEqual({m for m, _ in methods}, set(records))  # hr.rule.parameter gets no public method
        for user in (self.outsider, self.payroll_only):
            for model_name, method in sorted(methods):
                with self.subTest(user=user.login, method=f"{model_name}.{method}"), self.assertRaises(AccessError):
                    getattr(records[model_name].with_user(user), method)()
        self.assertFalse(self.params["AT_HBGL_MONTH"].parameter_version_ids.filtered(
            lambda v: v.date_from == dt.date(2026, 1, 1)))
