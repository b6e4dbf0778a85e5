from . import engine_bridge
from . import pv_agent_entry
from . import pv_agent_index_job
from . import pv_agent_conversation
from . import pv_agent_bot
from . import pv_agent_panel
from . import pv_agent_feedback
from . import res_config_settings
