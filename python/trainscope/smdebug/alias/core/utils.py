"""smdebug.core.utils: the helpers scripts and tests use."""

from trainscope.smdebug.helpers import *  # noqa: F401,F403
from trainscope.trials import has_training_ended, training_has_ended  # noqa: F401
