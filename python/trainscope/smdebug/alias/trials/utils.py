"""smdebug.trials.utils."""

from trainscope.trials import create_trial  # noqa: F401
