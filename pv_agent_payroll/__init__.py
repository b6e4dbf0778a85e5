from . import models


def post_init_hook(env):
    """Start with the knowledge base's own mapping (``<kb>/parameters.yaml``), if it has one."""
    env["pv_agent.parameter.mapping"]._import_file(raise_missing=False)
