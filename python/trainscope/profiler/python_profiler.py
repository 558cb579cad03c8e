"""Python profiling (cProfile, pyinstrument) of step windows, in smdebug's stats layout.

One profiling interval writes one folder (docs/formats/python_profile.md)::

    <base>/framework/<framework>/<cprofile|pyinstrument>/<node>/<start>_<end>/
        <start>, <end>: <mode>-<step>-<phase>-<epoch us>    (train-5-stepstart-1763776000123456)
            python_stats                                  cProfile (pstats.Stats loads it)
            python_stats.json, python_stats.html          pyinstrument

The hook's FrameworkProfiler drives a PythonProfiler (one interval per step of the configured
window); smdebug's names (PythonProfileModes, StepPhase, cProfilePythonProfiler,
PyinstrumentPythonProfiler, start_profiling/stop_profiling) are the API, so smdebug code and tests
that drive a profiler by hand work too.

Not thread-safe: one thread (the training loop's) starts and stops a profiler. Files appear
complete or not at all (written to a hidden temporary name, then renamed).
"""

import enum
import os
import time

from .config import cProfileTimer

CPROFILE_NAME = "cprofile"
PYINSTRUMENT_NAME = "pyinstrument"
CPROFILE_STATS_FILENAME = "python_stats"
PYINSTRUMENT_JSON_FILENAME = "python_stats.json"
PYINSTRUMENT_HTML_FILENAME = "python_stats.html"
# smdebug's default window when no PythonProfilingConfig step is given: three steps from 9, one
# per timer (total, CPU, off-CPU), which cProfileDefaultPythonProfiler cycles through.
PYTHON_PROFILING_START_STEP_DEFAULT = 9


class PythonProfileModes(enum.IntEnum):
    """The training phase an interval starts or ends in (values of ModeKeys, plus two)."""

    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4
    PRE_STEP_ZERO = 5  # from the hook's start to the first step
    POST_HOOK_CLOSE = 6  # from the hook's close to the end of the process


class StepPhase(enum.Enum):
    """Where in a step an interval starts or ends."""

    START = "start"  # the start of the script (before step 0)
    STEP_START = "stepstart"
    FORWARD_PASS_END = "forwardpassend"
    STEP_END = "stepend"
    END = "end"  # the end of the script (after the hook's close)


class PythonProfilerName(enum.Enum):
    CPROFILE = CPROFILE_NAME
    PYINSTRUMENT = PYINSTRUMENT_NAME


_MODE_NAMES = {
    PythonProfileModes.TRAIN: "train",
    PythonProfileModes.EVAL: "eval",
    PythonProfileModes.PREDICT: "predict",
    PythonProfileModes.GLOBAL: "global",
    PythonProfileModes.PRE_STEP_ZERO: "prestepzero",
    PythonProfileModes.POST_HOOK_CLOSE: "posthookclose",
}
_MODES_BY_NAME = {v: k for k, v in _MODE_NAMES.items()}


def python_profile_mode_to_str(mode):
    """The mode's name in a stats folder name ("train", ..., "posthookclose")."""
    try:
        return _MODE_NAMES[PythonProfileModes(mode)]
    except (ValueError, KeyError):
        raise ValueError(f"invalid python profile mode: {mode!r}") from None


def str_to_python_profile_mode(name):
    """The inverse of python_profile_mode_to_str."""
    try:
        return _MODES_BY_NAME[name]
    except KeyError:
        raise ValueError(f"invalid python profile mode name: {name!r}") from None


def mode_keys_to_python_profile_mode(mode):
    """ModeKeys (or its int value) -> PythonProfileModes."""
    return PythonProfileModes(getattr(mode, "value", mode))


# Timers, in seconds. perf_counter and process_time have sub-microsecond resolution (smdebug's
# os.times() counts clock ticks, 10 ms here, too coarse for most functions of a step).
def total_time():
    """Wall-clock time."""
    return time.perf_counter()


def cpu_time():
    """CPU time of the process (user + system, every thread)."""
    return time.process_time()


def off_cpu_time():
    """Wall-clock time during which the process was not on a CPU (waiting: I/O, locks, the GPU)."""
    return time.perf_counter() - time.process_time()


_TIMERS = {
    cProfileTimer.TOTAL_TIME: total_time,
    cProfileTimer.CPU_TIME: cpu_time,
    cProfileTimer.OFF_CPU_TIME: off_cpu_time,
}


def stats_dir_name(start_mode, start_step, start_phase, start_us, end_mode, end_step, end_phase,
                   end_us):
    """The folder name of one interval: modes are PythonProfileModes or names, steps ints or "*",
    phases StepPhase or their values, times epoch microseconds (written as integers)."""

    def mode(m):
        return m if isinstance(m, str) else python_profile_mode_to_str(m)

    def phase(p):
        return StepPhase(p).value

    return (f"{mode(start_mode)}-{start_step}-{phase(start_phase)}-{int(start_us)}_"
            f"{mode(end_mode)}-{end_step}-{phase(end_phase)}-{int(end_us)}")


def _write_atomic(path, data):
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.replace(tmp, path)


class PythonProfiler:
    """Profiles one interval at a time and writes its stats folder when it stops.

    base_folder: the profiler's base folder (the trial, or the configuration's LocalPath);
    framework: a FRAMEWORK enum, or its value ("pytorch"); node_id: the folder of this process
    (default smdebug's node id, ``<pid>-<hostname>``).
    """

    name = ""  # the profiler's folder: "cprofile" or "pyinstrument"

    def __init__(self, base_folder, framework="pytorch", node_id=None):
        self._base_folder = str(base_folder)
        self._framework = getattr(framework, "value", framework)
        self._node_id = node_id
        self._profiler = None
        self.stats_dirs = []  # the folders written, oldest first
        self._reset_profiler()

    @property
    def _name(self):  # smdebug's attribute name
        return self.name

    def _reset_profiler(self):
        self._start_mode = None
        self._start_step = None
        self._start_phase = None
        self._start_time_since_epoch_in_micros = None
        self._is_profiling = False

    @property
    def is_profiling(self):
        return bool(self._is_profiling)

    def start_profiling(self, start_phase, start_mode=PythonProfileModes.PRE_STEP_ZERO,
                        start_step="*"):
        """Starts an interval (a running one is stopped first, as if at this phase, mode and
        step). start_step "*" means before step 0."""
        if self._is_profiling:
            self.stop_profiling(start_phase, start_mode, start_step)
        self._start_mode = start_mode
        self._start_step = start_step
        self._start_phase = StepPhase(start_phase)
        self._start_time_since_epoch_in_micros = time.time_ns() // 1000
        self._is_profiling = True
        self._enable_profiler()

    def stop_profiling(self, end_phase, end_mode=PythonProfileModes.POST_HOOK_CLOSE,
                       end_step="*"):
        """Stops the interval and writes its folder; returns the folder, or None when no interval
        was running. end_step "*" means the end of the script."""
        if not self._is_profiling:
            return None
        self._disable_profiler()
        end_us = time.time_ns() // 1000
        folder = os.path.join(
            self._base_folder, "framework", self._framework, self.name, self._node(),
            stats_dir_name(self._start_mode, self._start_step, self._start_phase,
                           self._start_time_since_epoch_in_micros, end_mode, end_step, end_phase,
                           end_us))
        try:
            os.makedirs(folder, exist_ok=True)
            self._dump_stats(folder)
        finally:
            self._profiler = None
            self._reset_profiler()
        self.stats_dirs.append(folder)
        return folder

    def _node(self):
        if self._node_id is None:
            from .._native import load

            self._node_id = load().default_timeline_node_id()
        return self._node_id

    def _enable_profiler(self):
        raise NotImplementedError

    def _disable_profiler(self):
        raise NotImplementedError

    def _dump_stats(self, stats_dir):
        raise NotImplementedError

    @staticmethod
    def get_python_profiler(profiler_config, framework="pytorch"):
        """The profiler a configuration asks for: ``profiler_config`` has ``local_path`` and
        ``python_profiling_config`` (``profiler_name``, ``cprofile_timer``), as smdebug's parsed
        configuration does, or is a dict {"local_path", "profiler_name", "cprofile_timer"}."""
        if isinstance(profiler_config, dict):
            base = profiler_config.get("local_path")
            name = profiler_config.get("profiler_name") or CPROFILE_NAME
            timer = profiler_config.get("cprofile_timer") or cProfileTimer.TOTAL_TIME
        else:
            base = profiler_config.local_path
            py = profiler_config.python_profiling_config
            name = getattr(py, "profiler_name", CPROFILE_NAME)
            timer = getattr(py, "cprofile_timer", cProfileTimer.TOTAL_TIME)
        name = getattr(name, "value", name)
        if name == PYINSTRUMENT_NAME:
            return PyinstrumentPythonProfiler(base, framework)
        if cProfileTimer(getattr(timer, "value", timer)) == cProfileTimer.DEFAULT:
            return cProfileDefaultPythonProfiler(base, framework)
        return cProfilePythonProfiler(base, framework, timer)


class cProfilePythonProfiler(PythonProfiler):  # noqa: N801 (smdebug's name)
    """cProfile with a timer (cProfileTimer or its value); writes ``python_stats``."""

    name = CPROFILE_NAME

    def __init__(self, base_folder, framework="pytorch", cprofile_timer=cProfileTimer.TOTAL_TIME,
                 node_id=None):
        super().__init__(base_folder, framework, node_id)
        timer = cProfileTimer(getattr(cprofile_timer, "value", cprofile_timer))
        self.cprofile_timer = _TIMERS.get(timer)  # None for DEFAULT: chosen per step

    def _enable_profiler(self):
        import cProfile

        timer = self.cprofile_timer or total_time
        self._profiler = cProfile.Profile(timer)
        self._profiler.enable()

    def _disable_profiler(self):
        self._profiler.disable()

    def _dump_stats(self, stats_dir):
        path = os.path.join(stats_dir, CPROFILE_STATS_FILENAME)
        tmp = os.path.join(stats_dir, "." + CPROFILE_STATS_FILENAME + ".tmp")
        self._profiler.dump_stats(tmp)
        os.replace(tmp, path)


class cProfileDefaultPythonProfiler(cProfilePythonProfiler):  # noqa: N801 (smdebug's name)
    """cProfileTimer.DEFAULT, as smdebug: steps 9, 10 and 11 are timed with total, CPU and off-CPU
    time; any other interval with total time."""

    def __init__(self, base_folder, framework="pytorch", node_id=None):
        super().__init__(base_folder, framework, cProfileTimer.DEFAULT, node_id)

    def _enable_profiler(self):
        cycle = [total_time, cpu_time, off_cpu_time]
        i = (self._start_step - PYTHON_PROFILING_START_STEP_DEFAULT
             if isinstance(self._start_step, int) else -1)
        self.cprofile_timer = cycle[i] if 0 <= i < len(cycle) else total_time
        super()._enable_profiler()


class PyinstrumentPythonProfiler(PythonProfiler):
    """pyinstrument (pip install pyinstrument); writes ``python_stats.json`` (its JSON renderer)
    and ``python_stats.html``."""

    name = PYINSTRUMENT_NAME

    def _enable_profiler(self):
        from pyinstrument import Profiler

        self._profiler = Profiler()
        self._profiler.start()

    def _disable_profiler(self):
        self._profiler.stop()

    def _dump_stats(self, stats_dir):
        from pyinstrument.renderers import JSONRenderer

        _write_atomic(os.path.join(stats_dir, PYINSTRUMENT_JSON_FILENAME),
                      self._profiler.output(JSONRenderer()))
        _write_atomic(os.path.join(stats_dir, PYINSTRUMENT_HTML_FILENAME),
                      self._profiler.output_html())
