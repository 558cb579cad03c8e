"""trainscope.profiler: framework metrics from the hook, their configuration, and readers.

- Configuration with the SageMaker SDK's names: ``ProfilerConfig``, ``FrameworkProfile``,
  ``DetailedProfilingConfig``, ``DataloaderProfilingConfig``, ``PythonProfilingConfig``,
  ``PythonProfiler``, ``cProfileTimer``; pass one as ``Hook(..., profiler_config=...)`` or let
  the hook read TRAINSCOPE_PROFILER_CONFIG / SMPROFILER_CONFIG_PATH (smdebug's JSON).
- Recording: the hook's spans (steps, forward, backward, optimizer, data-loader waits,
  ``with hook.profile("name"):``), torch.profiler and cProfile windows, and optionally its own
  system sampler (recorder.py; formats in docs/formats/timeline.md and profiling.md).
- Reading: ``MetricsReader(trial_dir).system_metrics(...)`` / ``.framework_metrics(...)`` by time
  or step range (also ``trial.system_metrics`` / ``trial.framework_metrics``),
  ``hook.get_profiler_data()`` for what a running hook has captured.
"""

from .config import (DataloaderProfilingConfig, DetailedProfilingConfig, FrameworkProfile,
                     ProfilerConfig, PythonProfiler, PythonProfilingConfig, cProfileTimer)
from .data import ProfilerData
from .readers import (FrameworkEvent, MetricsReader, SystemMetricEvent, framework_metrics,
                      system_metrics)

__all__ = [
    "DataloaderProfilingConfig", "DetailedProfilingConfig", "FrameworkEvent", "FrameworkProfile",
    "MetricsReader", "ProfilerConfig", "ProfilerData", "PythonProfiler", "PythonProfilingConfig",
    "SystemMetricEvent", "cProfileTimer", "framework_metrics", "system_metrics",
]
