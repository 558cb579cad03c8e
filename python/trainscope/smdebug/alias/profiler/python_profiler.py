"""smdebug.profiler.python_profiler: cProfile and pyinstrument profilers of step intervals."""

from trainscope.profiler.config import cProfileTimer  # noqa: F401
from trainscope.profiler.python_profiler import (CPROFILE_NAME,  # noqa: F401
                                                 CPROFILE_STATS_FILENAME,
                                                 PYINSTRUMENT_HTML_FILENAME,
                                                 PYINSTRUMENT_JSON_FILENAME, PYINSTRUMENT_NAME,
                                                 PYTHON_PROFILING_START_STEP_DEFAULT,
                                                 PyinstrumentPythonProfiler, PythonProfileModes,
                                                 PythonProfiler, cpu_time,
                                                 cProfileDefaultPythonProfiler,
                                                 cProfilePythonProfiler, off_cpu_time,
                                                 python_profile_mode_to_str, total_time)
