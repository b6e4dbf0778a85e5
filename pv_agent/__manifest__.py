{
    "name": "PV-Agent",
    "version": "19.0.1.0.0",
    "category": "Human Resources/Payroll",
    "summary": "Fragen zur österreichischen Personalverrechnung – beantwortet nur aus der "
    "Wissensbasis, mit Quellen / Austrian payroll questions answered strictly from a "
    "knowledge base, with citations",
    "description": """
PV-Agent
========
Beantwortet Fragen zur österreichischen Personalverrechnung ausschließlich aus einer
gepflegten Wissensbasis und zitiert jede Aussage mit der Kennung des Eintrags. Die
Sprachmodelle laufen lokal über Ollama; keine Mitarbeiter- oder Lohndaten verlassen Odoo.

Answers Austrian payroll questions strictly from a curated knowledge base and cites every
statement with the entry's id. The language models run locally through Ollama; no employee
or payslip data ever reaches a prompt.
""",
    "author": "PV-Agent contributors",
    "license": "LGPL-3",
    "depends": ["mail"],  # brings base, web and bus
    "external_dependencies": {
        "python": ["requests", "numpy", "python-frontmatter", "markdown-it-py", "sqlite-vec", "PyYAML"],
    },
    "data": [
        "security/pv_agent_security.xml",
        "security/ir.model.access.csv",
        "data/ir_cron_data.xml",
        "data/pv_agent_bot_data.xml",
        "views/pv_agent_entry_views.xml",
        "views/pv_agent_conversation_views.xml",
        "views/pv_agent_index_job_views.xml",
        "views/pv_agent_feedback_views.xml",
        "views/pv_agent_drift_views.xml",
        "views/pv_agent_entry_version_views.xml",
        "views/res_config_settings_views.xml",
        "views/pv_agent_store_views.xml",
        "views/pv_agent_menus.xml",
        "views/pv_agent_answer_cache_views.xml",
        "views/res_users_views.xml",
    ],
    "assets": {
        "web.assets_backend": [
            "pv_agent/static/src/**/*",
        ],
        "web.assets_tests": ["pv_agent/static/tests/tours/*.js"],
    },
    "images": ["static/description/icon.png"],
    "application": True,
    "installable": True,
    "uninstall_hook": "uninstall_hook",
}
