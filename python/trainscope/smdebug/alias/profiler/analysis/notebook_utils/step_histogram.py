"""smdebug.profiler.analysis.notebook_utils.step_histogram: StepHistogram."""

from trainscope.profiler.charts import StepHistogram  # noqa: F401
