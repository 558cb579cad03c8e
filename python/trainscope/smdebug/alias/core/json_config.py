"""smdebug.core.json_config: the names of smdebug's JSON configuration (the hook reads it:
trainscope.pytorch.Hook.create_from_json_file)."""

from trainscope.smdebug.constants import *  # noqa: F401,F403
