"""smdebug.core.save_config."""

from trainscope.save_config import DEFAULT_END_STEP as DEFAULT_SAVE_CONFIG_END_STEP  # noqa: F401
from trainscope.save_config import DEFAULT_SAVE_INTERVAL as DEFAULT_SAVE_CONFIG_INTERVAL  # noqa: F401
from trainscope.save_config import DEFAULT_START_STEP as DEFAULT_SAVE_CONFIG_START_STEP  # noqa: F401
from trainscope.save_config import SaveConfig, SaveConfigMode  # noqa: F401
