"""smdebug.trials: trainscope's trials (local folders)."""

from trainscope.trials import LocalTrial, Trial, create_trial  # noqa: F401
