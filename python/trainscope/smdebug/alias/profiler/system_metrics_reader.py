"""smdebug.profiler.system_metrics_reader."""

from trainscope.profiler.analysis import LocalSystemMetricsReader  # noqa: F401
