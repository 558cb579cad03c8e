"""smdebug.trials.local_trial."""

from trainscope.trials import LocalTrial  # noqa: F401
