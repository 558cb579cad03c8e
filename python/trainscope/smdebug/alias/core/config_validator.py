"""smdebug.core.config_validator."""

from trainscope.smdebug.helpers import (is_framework_version_supported,  # noqa: F401
                                        reset_config_validator)
