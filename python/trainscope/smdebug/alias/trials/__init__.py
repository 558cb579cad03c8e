"""smdebug.trials: trainscope's trials (local folders; S3Trial raises, S3 is not supported)."""

from trainscope.smdebug.s3 import S3Trial  # noqa: F401
from trainscope.trials import LocalTrial, Trial, create_trial  # noqa: F401
