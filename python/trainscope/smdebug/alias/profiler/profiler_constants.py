"""smdebug.profiler.profiler_constants."""

from trainscope.smdebug.profiler_constants import *  # noqa: F401,F403
