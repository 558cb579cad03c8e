"""smdebug.profiler.profiler_config_parser."""

from trainscope.profiler.config import MetricsCategory, ProfilerConfigParser  # noqa: F401
