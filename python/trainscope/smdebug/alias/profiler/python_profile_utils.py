"""smdebug.profiler.python_profile_utils: the modes, step phases and timers of Python profiling."""

from trainscope.profiler.config import cProfileTimer  # noqa: F401
from trainscope.profiler.python_profiler import (CPROFILE_NAME, PYINSTRUMENT_NAME,  # noqa: F401
                                                 PythonProfileModes, PythonProfilerName,
                                                 StepPhase, cpu_time,
                                                 mode_keys_to_python_profile_mode, off_cpu_time,
                                                 python_profile_mode_to_str,
                                                 str_to_python_profile_mode, total_time)
