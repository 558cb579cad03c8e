"""smdebug.core.config_constants: smdebug's constants with smdebug's values."""

from trainscope.smdebug.constants import *  # noqa: F401,F403
