"""smdebug.core.tfevent.timeline_file_writer."""

from trainscope.profiler.trace_events import TimelineFileWriter  # noqa: F401
