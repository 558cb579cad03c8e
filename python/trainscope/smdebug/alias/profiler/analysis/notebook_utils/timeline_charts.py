"""smdebug.profiler.analysis.notebook_utils.timeline_charts: TimelineCharts."""

from trainscope.profiler.charts import TimelineCharts  # noqa: F401
