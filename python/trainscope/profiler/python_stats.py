"""Reading Python profiler stats: one record per stats file, and the tables made from them.

The layout (docs/formats/python_profile.md) is smdebug's, so the names here are smdebug's too
(smdebug.profiler.analysis.python_stats_reader and .utils.python_profile_analysis_utils alias
this module):

- ``StepPythonProfileStats``: what one stats folder's name says (profiler, framework, node, start
  and end mode, step, phase and epoch microseconds) and the path of one file in it.
- ``LocalPythonStatsReader(profile_dir).load_python_profile_stats()``: every record under a
  profiler's folder (``<base>/framework/<framework>/<cprofile|pyinstrument>``), or under every
  such folder of a trial when ``profile_dir`` is the trial (the folder holding ``framework/``).
- ``cProfileStats``: cProfile stats of several intervals added together (``ps``, a
  ``pstats.Stats``) and one ``cProfileFunctionStats`` per function; ``get_function_stats()`` is
  the table (pandas), ``print_top_n_functions(Metrics.CUMULATIVE_TIME, n)`` prints the top.
- ``PyinstrumentStepStats``: one pyinstrument interval (its JSON tree and HTML page).

Reading never changes the files; nothing here is shared between threads.
"""

import enum
import math
import os
import pstats
import sys

from ..exceptions import SMDebugNotImplementedError
from .python_profiler import (CPROFILE_NAME, CPROFILE_STATS_FILENAME, PYINSTRUMENT_HTML_FILENAME,
                              PYINSTRUMENT_JSON_FILENAME, PYINSTRUMENT_NAME, PythonProfileModes,
                              StepPhase, str_to_python_profile_mode)

_FILES = {
    CPROFILE_STATS_FILENAME: CPROFILE_NAME,
    PYINSTRUMENT_JSON_FILENAME: PYINSTRUMENT_NAME,
    PYINSTRUMENT_HTML_FILENAME: PYINSTRUMENT_NAME,
}
# Where each phase lies within its step, to compare (step, phase) positions.
_PHASE_ORDER = {StepPhase.START: 0, StepPhase.STEP_START: 1, StepPhase.FORWARD_PASS_END: 2,
                StepPhase.STEP_END: 3, StepPhase.END: 4}


class Metrics(enum.Enum):
    """The columns of cProfile's stats, as pstats sort keys."""

    TOTAL_TIME = "tottime"  # seconds in the function itself
    CUMULATIVE_TIME = "cumtime"  # seconds in the function and in what it called
    PRIMITIVE_CALLS = "pcalls"  # calls that were not recursive
    TOTAL_CALLS = "ncalls"  # all calls


def _parse_end(text):
    mode, step, phase, us = text.split("-")
    return str_to_python_profile_mode(mode), step, StepPhase(phase), float(us)


class StepPythonProfileStats:
    """One stats file and what its folder's name says about it.

    Attributes (smdebug's): profiler_name, framework, node_id, start_mode / end_mode
    (PythonProfileModes), start_step (-1 before step 0) / end_step (inf after the hook's close),
    start_phase / end_phase (StepPhase), start_time_since_epoch_in_micros /
    end_time_since_epoch_in_micros (floats), stats_path. REQUIRES: stats_dir is a folder name of
    the layout; ValueError otherwise.
    """

    def __init__(self, framework, profiler_name, node_id, stats_dir, stats_path):
        start, sep, end = stats_dir.partition("_")
        if not sep:
            raise ValueError(f"not a python stats folder name: {stats_dir!r}")
        start_mode, start_step, start_phase, start_us = _parse_end(start)
        end_mode, end_step, end_phase, end_us = _parse_end(end)
        self.profiler_name = profiler_name
        self.framework = framework
        self.node_id = node_id
        self.start_mode = start_mode
        self.start_step = -1 if start_step == "*" else int(start_step)
        self.start_phase = start_phase
        self.start_time_since_epoch_in_micros = start_us
        self.end_mode = end_mode
        self.end_step = math.inf if end_step == "*" else int(end_step)
        self.end_phase = end_phase
        self.end_time_since_epoch_in_micros = end_us
        self.stats_path = stats_path

    def has_start_and_end_mode(self, start_mode, end_mode):
        return self.start_mode == start_mode and self.end_mode == end_mode

    def in_time_interval(self, start_time_since_epoch_in_micros, end_time_since_epoch_in_micros):
        """Whether the interval profiled overlaps [start, end] (epoch microseconds)."""
        return (self.start_time_since_epoch_in_micros <= end_time_since_epoch_in_micros and
                self.end_time_since_epoch_in_micros >= start_time_since_epoch_in_micros)

    def in_step_interval(self, start_step, end_step, start_phase, end_phase):
        """Whether the interval profiled lies within the one from ``start_step`` at
        ``start_phase`` to ``end_step`` at ``end_phase``: positions compare by step, then by
        phase within the step (start < stepstart < forwardpassend < stepend < end)."""
        begin = (start_step, _PHASE_ORDER[StepPhase(start_phase)])
        finish = (end_step, _PHASE_ORDER[StepPhase(end_phase)])
        return (begin <= (self.start_step, _PHASE_ORDER[self.start_phase]) and
                (self.end_step, _PHASE_ORDER[self.end_phase]) <= finish)

    def has_pre_step_zero_profile_stats(self):
        return self.start_phase == StepPhase.START

    def has_post_hook_close_profile_stats(self):
        return self.end_phase == StepPhase.END

    def has_node_id(self, node_id):
        return self.node_id == node_id

    def __repr__(self):
        return repr(self.__dict__)


class PythonStatsReader:
    """Finds the stats files under ``profile_dir``."""

    def __init__(self, profile_dir):
        self.profile_dir = str(profile_dir)

    def load_python_profile_stats(self):
        raise NotImplementedError


class LocalPythonStatsReader(PythonStatsReader):
    """Stats on the local file system. ``profile_dir`` is a profiler's folder
    (``.../framework/pytorch/cprofile``, as smdebug takes it) or a trial folder (every profiler's
    folder under its ``framework/``). REQUIRES: the folder exists (AssertionError, as smdebug)."""

    def __init__(self, profile_dir):
        assert os.path.isdir(profile_dir), f"the stats folder {profile_dir} does not exist"
        super().__init__(profile_dir)

    def _profiler_dirs(self):
        """(framework, profiler folder) pairs to scan."""
        base = os.path.join(self.profile_dir, "framework")
        if not os.path.isdir(base):
            framework = os.path.basename(os.path.dirname(os.path.abspath(self.profile_dir)))
            return [(framework, self.profile_dir)]
        out = []
        for framework in sorted(os.listdir(base)):
            for name in (CPROFILE_NAME, PYINSTRUMENT_NAME):
                d = os.path.join(base, framework, name)
                if os.path.isdir(d):
                    out.append((framework, d))
        return out

    def load_python_profile_stats(self):
        """Every stats file, oldest interval first (then by node). Folders whose name is not of
        the layout, and files other than the stats files (a writer's hidden temporary file), are
        skipped."""
        records = []
        for framework, root in self._profiler_dirs():
            for node_id in sorted(os.listdir(root)):
                node_dir = os.path.join(root, node_id)
                if not os.path.isdir(node_dir):
                    continue
                for stats_dir in sorted(os.listdir(node_dir)):
                    folder = os.path.join(node_dir, stats_dir)
                    if not os.path.isdir(folder):
                        continue
                    for filename in sorted(os.listdir(folder)):
                        profiler_name = _FILES.get(filename)
                        if profiler_name is None:
                            continue
                        try:
                            records.append(StepPythonProfileStats(
                                framework, profiler_name, node_id, stats_dir,
                                os.path.join(folder, filename)))
                        except ValueError:
                            break  # not a stats folder
        records.sort(key=lambda r: (r.start_time_since_epoch_in_micros, r.node_id))
        return records


class S3PythonStatsReader(PythonStatsReader):
    """S3 is not supported (docs/compat.md): SMDebugNotImplementedError."""

    def __init__(self, profile_dir, s3_path):
        raise SMDebugNotImplementedError(
            f"python stats on S3 ({s3_path}) are not supported: copy them to a local folder")


class cProfileFunctionStats:  # noqa: N801 (smdebug's name)
    """One function's line of cProfile stats: function_name (``file:line(name)``), prim_calls,
    total_calls, total_time and cumulative_time (seconds), callers (function names)."""

    def __init__(self, key, value):
        self.function_name = pstats.func_std_string(key)
        self.prim_calls, self.total_calls, self.total_time, self.cumulative_time, callers = value
        self.callers = [pstats.func_std_string(k) for k in callers]

    def as_dict(self):
        return {
            "function name": self.function_name,
            "# of primitive calls": self.prim_calls,
            "# of total calls": self.total_calls,
            "total time": self.total_time,
            "cumulative time": self.cumulative_time,
        }

    def __repr__(self):
        return repr(self.as_dict())


class cProfileStats:  # noqa: N801 (smdebug's name)
    """cProfile stats of one or more intervals: ``ps`` (pstats.Stats) and
    ``function_stats_list`` (one cProfileFunctionStats per function)."""

    def __init__(self, ps):
        self.ps = ps
        self.function_stats_list = [cProfileFunctionStats(k, v) for k, v in ps.stats.items()]

    def print_top_n_functions(self, by, n=10):
        """Prints the n functions first by ``by`` (a Metrics), as pstats prints them."""
        assert isinstance(by, Metrics), "by must be one of Metrics"
        assert isinstance(n, int), "n must be an integer"
        self.ps.stream = sys.stdout  # where print() goes now (a notebook replaces sys.stdout)
        self.ps.sort_stats(by.value).print_stats(n)

    def get_function_stats(self):
        """The table: one row per function, columns "function name", "# of primitive calls",
        "# of total calls", "total time", "cumulative time" (seconds), slowest (cumulative)
        first. Needs pandas."""
        import pandas as pd

        columns = ["function name", "# of primitive calls", "# of total calls", "total time",
                   "cumulative time"]
        rows = sorted((f.as_dict() for f in self.function_stats_list),
                      key=lambda r: -r["cumulative time"])
        return pd.DataFrame(rows, columns=columns)


class PyinstrumentStepStats:
    """One pyinstrument interval: ``json_stats`` (its JSON renderer's tree, ``root_frame``) and
    ``html_file_path`` (None when the folder has no page)."""

    def __init__(self, html_file_path, json_stats):
        self.html_file_path = html_file_path
        self.json_stats = json_stats


__all__ = [
    "LocalPythonStatsReader", "Metrics", "PyinstrumentStepStats", "PythonProfileModes",
    "PythonStatsReader", "S3PythonStatsReader", "StepPhase", "StepPythonProfileStats",
    "cProfileFunctionStats", "cProfileStats",
]
