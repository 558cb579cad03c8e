"""smdebug.profiler.analysis.utils.merge_timelines: MergedTimeline, MergeUnit."""

from trainscope.profiler.merge import MergedTimeline, MergeUnit  # noqa: F401
