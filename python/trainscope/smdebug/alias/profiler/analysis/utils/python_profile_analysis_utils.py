"""smdebug.profiler.analysis.utils.python_profile_analysis_utils: the stats records and tables."""

from trainscope.profiler.python_profiler import (PythonProfileModes, StepPhase,  # noqa: F401
                                                 str_to_python_profile_mode)
from trainscope.profiler.python_stats import (Metrics, PyinstrumentStepStats,  # noqa: F401
                                              StepPythonProfileStats, cProfileFunctionStats,
                                              cProfileStats)
