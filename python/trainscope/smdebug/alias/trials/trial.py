"""smdebug.trials.trial."""

from trainscope.trials import Trial  # noqa: F401
