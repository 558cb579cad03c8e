"""smdebug.profiler.analysis.notebook_utils.heatmap: Heatmap."""

from trainscope.profiler.charts import Heatmap  # noqa: F401
