"""smdebug.profiler: trainscope's profiler configuration and metric readers."""

from trainscope.profiler import *  # noqa: F401,F403
from trainscope.profiler.analysis import LocalAlgorithmMetricsReader, LocalSystemMetricsReader  # noqa: F401
