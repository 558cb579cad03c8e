"""smdebug.profiler.algorithm_metrics_reader."""

from trainscope.profiler.analysis import LocalAlgorithmMetricsReader  # noqa: F401
