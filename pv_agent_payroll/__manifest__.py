{
    "name": "PV-Agent – Lohnparameter prüfen",
    "version": "19.0.1.0.0",
    "category": "Human Resources/Payroll",
    "summary": "Die Lohnparameter (hr.rule.parameter) gegen die zitierten Werte der Wissensbasis prüfen / "
    "Check payroll rule parameters against the knowledge base's cited figures",
    "description": """
PV-Agent – Lohnparameter prüfen
===============================
Vergleicht die Werte der Lohnparameter (``hr.rule.parameter`` mit ihren datierten Versionen)
mit den Werten der PV-Agent-Wissensbasis, mit Eintrag und Stand als Quelle; legt fehlende
Versionen nach Bestätigung an und erinnert die PV-Agent-Manager im Dezember und Jänner.

Compares payroll rule parameters with the PV-Agent knowledge base's figures (entry and Stand
cited), creates a missing dated version after confirmation, and reminds PV-Agent managers in
December and January.
""",
    "author": "PV-Agent contributors",
    "license": "LGPL-3",
    "depends": ["pv_agent", "hr_payroll"],
    "data": [
        "security/ir.model.access.csv",
        "data/ir_cron_data.xml",
        "views/pv_agent_parameter_views.xml",
        "views/hr_rule_parameter_views.xml",
    ],
    "post_init_hook": "post_init_hook",
    "auto_install": True,
    "installable": True,
}
