"""smdebug.core.access_layer: the end-of-training marker."""

from trainscope.smdebug.helpers import (DEFAULT_GRACETIME_FOR_RULE_STOP_SEC,  # noqa: F401
                                        ENV_RULE_STOP_SIGNAL_FILENAME)
from trainscope.trials import has_training_ended, training_has_ended  # noqa: F401
