"""smdebug.profiler.analysis.utils.profiler_data_to_pandas: PandasFrame."""

from trainscope.profiler.analysis import PandasFrame  # noqa: F401
