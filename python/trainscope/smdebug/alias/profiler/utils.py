"""smdebug.profiler.utils: time units and formats."""

from trainscope.profiler.analysis import TimeUnits, us_since_epoch_to_human_readable_time  # noqa: F401
