"""smdebug.core.reduction_config."""

from trainscope.reduction_config import ALLOWED_NORMS, ALLOWED_REDUCTIONS, ReductionConfig  # noqa: F401
