"""smdebug.profiler.analysis.notebook_utils.step_timeline_chart: StepTimelineChart."""

from trainscope.profiler.charts import StepTimelineChart  # noqa: F401
