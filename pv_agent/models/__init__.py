# Models only, one file per model with all its fields and methods (the seam to the engine is
# ../services). Odoo's own models that PV-Agent extends: res_config_settings, res_users,
# res_partner (the bot's contact), mail_thread, discuss_channel (mentions), ir_http,
# ir_cron (where a batch of jobs begins: the answering job's time budget).
from . import pv_agent_entry
from . import pv_agent_entry_version
from . import pv_agent_entry_conflict
from . import pv_agent_index_job
from . import pv_agent_conversation
from . import pv_agent_message
from . import pv_agent_answer_source
from . import pv_agent_answer_cache
from . import pv_agent_feedback
from . import pv_agent_bot
from . import mail_thread
from . import discuss_channel
from . import ir_http
from . import res_users
from . import res_partner
from . import ir_cron
from . import res_config_settings
