"""The bridge's one seam to PV-Agent's engine (``pv_agent.engine.params``) and settings: the
models import the engine only from here, as in the pv_agent addon."""
from odoo.addons.pv_agent.engine.params.check import (  # noqa: F401
    ABSENT, DIFFERS, KB_MISSING, MATCH, MISSING, NO_FACT, PROBLEMS, STATUSES, UNMAPPED,
    ParameterList, ParameterVersion, check_dates, check_parameters,
)
from odoo.addons.pv_agent.engine.params.facts import UNITS, format_figure  # noqa: F401
from odoo.addons.pv_agent.engine.params.mapping import (  # noqa: F401
    MAPPING_FILE, ParameterMapping, dump_mapping, parse_mapping, resolve,
)
from odoo.addons.pv_agent.services.odoo_settings import kb_path  # noqa: F401
