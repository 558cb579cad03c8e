"""smdebug.core.modes."""

from trainscope.modes import ALLOWED_MODE_NAMES, ALLOWED_MODES, ModeKeys, str_to_mode_keys  # noqa: F401
from trainscope.smdebug.helpers import MODE_PLUGIN_NAME, MODE_STEP_PLUGIN_NAME  # noqa: F401
