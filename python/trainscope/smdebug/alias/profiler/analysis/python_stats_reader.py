"""smdebug.profiler.analysis.python_stats_reader: the readers of Python profiler stats."""

from trainscope.profiler.python_profiler import (CPROFILE_NAME,  # noqa: F401
                                                 CPROFILE_STATS_FILENAME,
                                                 PYINSTRUMENT_HTML_FILENAME,
                                                 PYINSTRUMENT_JSON_FILENAME, PYINSTRUMENT_NAME)
from trainscope.profiler.python_stats import (LocalPythonStatsReader,  # noqa: F401
                                              PythonStatsReader, S3PythonStatsReader,
                                              StepPythonProfileStats)
