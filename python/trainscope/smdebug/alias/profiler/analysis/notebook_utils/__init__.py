"""smdebug.profiler.analysis.notebook_utils: the notebook charts (Bokeh)."""

from trainscope.profiler.charts import MetricsHistogram, StepHistogram  # noqa: F401
