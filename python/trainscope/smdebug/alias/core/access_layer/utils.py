"""smdebug.core.access_layer.utils."""

from trainscope.smdebug.helpers import (DEFAULT_GRACETIME_FOR_RULE_STOP_SEC,  # noqa: F401
                                        END_OF_JOB_FILENAME, ENV_RULE_STOP_SIGNAL_FILENAME,
                                        check_dir_exists, is_s3)
from trainscope.smdebug.s3 import delete_s3_prefixes  # noqa: F401
from trainscope.trials import has_training_ended, training_has_ended  # noqa: F401
