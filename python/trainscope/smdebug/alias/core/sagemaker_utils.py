"""smdebug.core.sagemaker_utils."""

from trainscope.smdebug.helpers import is_sagemaker_job  # noqa: F401
