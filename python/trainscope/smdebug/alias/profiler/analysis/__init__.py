"""smdebug.profiler.analysis."""
