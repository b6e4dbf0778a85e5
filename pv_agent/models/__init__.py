from . import engine_bridge
from . import pv_agent_entry
from . import pv_agent_index_job
from . import pv_agent_conversation
from . import res_config_settings
from . import pv_agent_store
