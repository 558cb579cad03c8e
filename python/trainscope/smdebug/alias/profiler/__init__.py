"""smdebug.profiler: trainscope's profiler configuration and metric readers."""

from trainscope.profiler import *  # noqa: F401,F403
