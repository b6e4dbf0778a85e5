from . import hr_rule_parameter
from . import pv_agent_parameter_mapping
from . import pv_agent_parameter_check
