"""smdebug.profiler.profiler_constants."""

from trainscope.smdebug.constants import *  # noqa: F401,F403
