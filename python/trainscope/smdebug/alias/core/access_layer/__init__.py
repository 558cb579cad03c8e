"""smdebug.core.access_layer: the end-of-training marker (the S3 access classes raise)."""

from trainscope.smdebug.helpers import (DEFAULT_GRACETIME_FOR_RULE_STOP_SEC,  # noqa: F401
                                        ENV_RULE_STOP_SIGNAL_FILENAME, check_dir_exists)
from trainscope.smdebug.s3 import TSAccessS3  # noqa: F401
from trainscope.trials import has_training_ended, training_has_ended  # noqa: F401
