"""smdebug.profiler.analysis.python_profile_analysis: cProfileAnalysis, PyinstrumentAnalysis."""

from trainscope.profiler.python_profile_analysis import (CONVERT_TO_MICROSECS,  # noqa: F401
                                                         PyinstrumentAnalysis,
                                                         PythonProfileAnalysis,
                                                         cProfileAnalysis)
from trainscope.profiler.python_profiler import (CPROFILE_NAME, PYINSTRUMENT_NAME,  # noqa: F401
                                                 PythonProfileModes, StepPhase,
                                                 python_profile_mode_to_str)
from trainscope.profiler.python_stats import (LocalPythonStatsReader,  # noqa: F401
                                              PyinstrumentStepStats, S3PythonStatsReader,
                                              StepPythonProfileStats, cProfileStats)
