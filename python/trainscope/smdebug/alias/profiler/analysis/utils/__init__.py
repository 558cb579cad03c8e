"""smdebug.profiler.analysis.utils."""
