"""smdebug.profiler.analysis.notebook_utils.metrics_histogram: MetricsHistogram."""

from trainscope.profiler.charts import MetricsHistogram  # noqa: F401
