"""Profiler configuration with the SageMaker SDK's names, written as smdebug's JSON.

``ProfilerConfig(framework_profile_params=FrameworkProfile(start_step=5, num_steps=2))`` is what a
SageMaker user writes; here it becomes smdebug's ``{"ProfilingParameters": {...}}`` document
(reference: smdebug's profiler_config_parser.py), which the C++ parser
(trainscope/profiler_config.h) reads, the same parser that reads TRAINSCOPE_PROFILER_CONFIG and
SMPROFILER_CONFIG_PATH. So a configuration means the same thing whichever way it arrives.

Our additions, accepted in the JSON too (keys match case-insensitively, ignoring ``_``):
``StartSystemMonitor`` (true, false or "auto": the hook starts its own system sampler when no
``trainscope run`` supervisor samples the machine; default "auto").
"""

import enum
import json
import os

from .._native import load as _load_core

PROFILER_CONFIG_ENV = "TRAINSCOPE_PROFILER_CONFIG"
SM_PROFILER_CONFIG_ENV = "SMPROFILER_CONFIG_PATH"


class PythonProfiler(enum.Enum):
    """Which Python profiler runs in the Python profiling window."""

    CPROFILE = "cprofile"
    PYINSTRUMENT = "pyinstrument"


class cProfileTimer(enum.Enum):  # noqa: N801 (smdebug's name)
    """The clock cProfile measures with: wall time, CPU time, or their difference."""

    TOTAL_TIME = "total_time"
    CPU_TIME = "cpu_time"
    OFF_CPU_TIME = "off_cpu_time"
    DEFAULT = "default"


def _range_dict(start_step, num_steps, start_unix_time, duration):
    d = {}
    if start_step is not None:
        d["StartStep"] = int(start_step)
    if num_steps is not None:
        d["NumSteps"] = int(num_steps)
    if start_unix_time is not None:
        d["StartTimeInSecSinceEpoch"] = float(start_unix_time)
    if duration is not None:
        d["DurationInSeconds"] = float(duration)
    return d


class _MetricsConfig:
    """A window of steps (start_step, num_steps) or of time (start_unix_time, duration)."""

    def __init__(self, start_step=None, num_steps=None, start_unix_time=None, duration=None):
        self.start_step = start_step
        self.num_steps = num_steps
        self.start_unix_time = start_unix_time
        self.duration = duration

    def to_json_dict(self):
        return _range_dict(self.start_step, self.num_steps, self.start_unix_time, self.duration)

    def _empty(self):
        return not self.to_json_dict()

    def __repr__(self):
        return f"{type(self).__name__}({self.to_json_dict()})"


class DetailedProfilingConfig(_MetricsConfig):
    """Operator-level profiling (torch.profiler) for a window of steps."""


class DataloaderProfilingConfig(_MetricsConfig):
    """Data-loader wait spans only for a window of steps (default: every step)."""

    def __init__(self, start_step=None, num_steps=None, start_unix_time=None, duration=None,
                 metrics_regex=".*"):
        super().__init__(start_step, num_steps, start_unix_time, duration)
        self.metrics_regex = metrics_regex

    def to_json_dict(self):
        d = super().to_json_dict()
        if d and self.metrics_regex not in (None, ".*"):
            d["MetricsRegex"] = self.metrics_regex
        return d


class PythonProfilingConfig(_MetricsConfig):
    """cProfile (or pyinstrument) for a window of steps, one stats folder per step."""

    def __init__(self, start_step=None, num_steps=None, start_unix_time=None, duration=None,
                 python_profiler=PythonProfiler.CPROFILE, cprofile_timer=cProfileTimer.TOTAL_TIME):
        super().__init__(start_step, num_steps, start_unix_time, duration)
        self.python_profiler = PythonProfiler(python_profiler)
        self.cprofile_timer = cProfileTimer(cprofile_timer)

    def to_json_dict(self):
        d = super().to_json_dict()
        if d:
            d["ProfilerName"] = self.python_profiler.value
            if self.python_profiler == PythonProfiler.CPROFILE:
                d["cProfileTimer"] = self.cprofile_timer.value
        return d


class FrameworkProfile:
    """smdebug's FrameworkProfile: which detailed profiling runs, and when.

    A range given here (start_step/num_steps, or start_unix_time/duration) applies to the
    detailed (torch.profiler) and Python (cProfile) windows that are not configured explicitly;
    the step, forward, backward, optimizer and data-loader spans are recorded at every step
    whenever the profiler is on (the data-loader ones only in DataloaderProfilingConfig's window
    when that is given)."""

    def __init__(self, local_path=None, start_step=None, num_steps=None, start_unix_time=None,
                 duration=None, detailed_profiling_config=None, dataloader_profiling_config=None,
                 python_profiling_config=None):
        self.local_path = local_path
        shared = dict(start_step=start_step, num_steps=num_steps, start_unix_time=start_unix_time,
                      duration=duration)
        has_range = any(v is not None for v in shared.values())
        if detailed_profiling_config is None and has_range:
            detailed_profiling_config = DetailedProfilingConfig(**shared)
        if python_profiling_config is None and has_range:
            python_profiling_config = PythonProfilingConfig(**shared)
        self.detailed_profiling_config = detailed_profiling_config
        self.dataloader_profiling_config = dataloader_profiling_config
        self.python_profiling_config = python_profiling_config

    def to_json_dict(self):
        d = {}
        if self.local_path is not None:
            d["LocalPath"] = os.path.expanduser(str(self.local_path))
        for key, cfg in (("DetailedProfilingConfig", self.detailed_profiling_config),
                         ("DataloaderProfilingConfig", self.dataloader_profiling_config),
                         ("PythonProfilingConfig", self.python_profiling_config)):
            if cfg is not None and cfg.to_json_dict():
                d[key] = json.dumps(cfg.to_json_dict())  # smdebug: sub-configs are JSON strings
        return d


class ProfilerConfig:
    """The profiler's configuration (the SageMaker SDK's ProfilerConfig, local).

    system_monitor_interval_millis: sampling interval of system metrics (100..60000).
    framework_profile_params: a FrameworkProfile (None: spans only, no detailed windows).
    start_system_monitor: True, False or "auto" (start the hook's own system sampler when no
    ``trainscope run`` supervisor does it; only the first worker samples).
    disable_profiler: True turns everything off.
    rotate_max_file_size_bytes, rotate_file_close_interval_seconds: timeline file rotation.
    phase_min_interval_ms: record the Forward, Backward and Optimizer spans only of steps that
    begin at least this long after the last step that recorded them (None or 0: every step);
    step spans are always recorded, those without phases marked ``"phases": false``
    (trainscope's PhaseMinIntervalInMilliseconds; ``trainscope run`` sets 50)."""

    def __init__(self, s3_output_path=None, system_monitor_interval_millis=None,
                 framework_profile_params=None, disable_profiler=False,
                 start_system_monitor="auto", rotate_max_file_size_bytes=None,
                 rotate_file_close_interval_seconds=None, local_path=None,
                 phase_min_interval_ms=None):
        if s3_output_path is not None and str(s3_output_path).startswith("s3://"):
            raise ValueError(f"{s3_output_path}: s3:// output is not supported; give a local "
                             "folder as local_path (or leave it out to use the hook's out_dir)")
        self.local_path = local_path if local_path is not None else s3_output_path
        self.system_monitor_interval_millis = system_monitor_interval_millis
        self.framework_profile_params = framework_profile_params
        self.disable_profiler = bool(disable_profiler)
        self.start_system_monitor = start_system_monitor
        self.rotate_max_file_size_bytes = rotate_max_file_size_bytes
        self.rotate_file_close_interval_seconds = rotate_file_close_interval_seconds
        self.phase_min_interval_ms = phase_min_interval_ms

    def to_json_dict(self):
        """smdebug's profiler JSON document."""
        p = {"ProfilerEnabled": not self.disable_profiler}
        if self.local_path is not None:
            p["LocalPath"] = os.path.expanduser(str(self.local_path))
        if self.system_monitor_interval_millis is not None:
            p["SystemMonitorIntervalMillis"] = int(self.system_monitor_interval_millis)
        if self.rotate_max_file_size_bytes is not None:
            p["RotateMaxFileSizeInBytes"] = int(self.rotate_max_file_size_bytes)
        if self.rotate_file_close_interval_seconds is not None:
            p["RotateFileCloseIntervalInSeconds"] = float(self.rotate_file_close_interval_seconds)
        if self.phase_min_interval_ms is not None:
            p["PhaseMinIntervalInMilliseconds"] = int(self.phase_min_interval_ms)
        p["StartSystemMonitor"] = self.start_system_monitor
        if self.framework_profile_params is not None:
            p.update(self.framework_profile_params.to_json_dict())
        return {"ProfilingParameters": p}

    def to_json(self):
        return json.dumps(self.to_json_dict(), indent=2)


def _norm(key):
    return str(key).replace("_", "").lower()


def _find(obj, key):
    if not isinstance(obj, dict):
        return None
    want = _norm(key)
    for k, v in obj.items():
        if _norm(k) == want:
            return v
    return None


class ResolvedConfig:
    """What the hook runs with: the C++ parser's dict plus our extra keys and where it came
    from. ``enabled`` False means the profiler is off (nothing is installed in the hook)."""

    def __init__(self, parsed, raw, explicit_local_path):
        self.parsed = parsed
        self.enabled = bool(parsed.get("enabled"))
        self.explicit_local_path = explicit_local_path
        self.warnings = list(parsed.get("warnings") or [])
        params = _find(raw, "ProfilingParameters") or {}
        ssm = _find(params, "StartSystemMonitor")
        if ssm is None:
            ssm = "auto"
        if isinstance(ssm, str) and ssm.lower() != "auto":
            ssm = ssm.lower() in ("true", "1", "yes")
        self.start_system_monitor = ssm
        self.source_path = parsed.get("source_path", "")

    @property
    def local_path(self):
        return self.parsed.get("local_path")

    def range(self, name):
        """The sub-config dict (detailed_profiling, dataloader_profiling, python_profiling)."""
        return self.parsed.get(name) or {}


def _resolve_text(text, source):
    core = _load_core()
    raw = json.loads(text) if text.strip() else {}
    parsed = core.parse_profiler_config(text, source)
    params = _find(raw, "ProfilingParameters") or {}
    return ResolvedConfig(parsed, raw, _find(params, "LocalPath") is not None)


def resolve(config=None, hook_json_path=None):
    """The profiler configuration of a hook, first found wins:

    1. ``config`` (a ProfilerConfig, smdebug's JSON document as a dict or str, or a path);
    2. a ``ProfilingParameters`` (or ``ProfilerConfig``) object inside the hook's JSON file;
    3. the file named by TRAINSCOPE_PROFILER_CONFIG, else SMPROFILER_CONFIG_PATH.

    None when nothing configures the profiler (it stays off). Raises ValueError (naming the
    source) when a configuration is given but invalid."""
    if config is not None:
        if isinstance(config, ProfilerConfig):
            return _resolve_text(config.to_json(), "ProfilerConfig")
        if isinstance(config, dict):
            return _resolve_text(json.dumps(config), "profiler_config dict")
        text = str(config)
        if text.lstrip().startswith("{"):
            return _resolve_text(text, "profiler_config")
        with open(os.path.expanduser(text)) as f:
            return _resolve_text(f.read(), text)
    if hook_json_path:
        try:
            with open(hook_json_path) as f:
                hook_doc = json.load(f)
        except (OSError, ValueError):
            hook_doc = None
        inner = _find(hook_doc, "ProfilingParameters")
        if inner is not None:
            return _resolve_text(json.dumps({"ProfilingParameters": inner}), hook_json_path)
        inner = _find(hook_doc, "ProfilerConfig")
        if isinstance(inner, dict):
            return _resolve_text(json.dumps(inner), hook_json_path)
    path = os.environ.get(PROFILER_CONFIG_ENV) or os.environ.get(SM_PROFILER_CONFIG_ENV)
    if not path or not os.path.isfile(path):
        return None
    with open(path) as f:
        return _resolve_text(f.read(), path)


class MetricsCategory(enum.Enum):
    """smdebug's names of the profiler's windows."""

    DETAILED_PROFILING = 1
    DATALOADER_PROFILING = 2
    PYTHON_PROFILING = 3
    SMDATAPARALLEL_PROFILING = 4


_CATEGORY_RANGES = {MetricsCategory.DETAILED_PROFILING: "detailed_profiling",
                    MetricsCategory.DATALOADER_PROFILING: "dataloader_profiling",
                    MetricsCategory.PYTHON_PROFILING: "python_profiling"}


class ProfilerConfigParser:
    """smdebug's view of this process's profiler configuration, read as the hook reads it
    (TRAINSCOPE_PROFILER_CONFIG, else SMPROFILER_CONFIG_PATH; see resolve()).

    profiling_enabled: a valid configuration turns the profiler on. An invalid one leaves it
    off and is named in `error` (smdebug logs it and goes on, and so does this)."""

    def __init__(self, framework=None):
        self.framework = framework
        self.load_config()

    def load_config(self):
        self.error = None
        try:
            self.resolved = resolve()
        except ValueError as e:
            self.resolved, self.error = None, str(e)
        self.profiling_enabled = bool(self.resolved is not None and self.resolved.enabled)

    @property
    def local_path(self):
        return self.resolved.local_path if self.resolved is not None else None

    def is_python_profiling_enabled(self):
        python_profiling = self.resolved.range("python_profiling")
        return self.profiling_enabled and bool(python_profiling.get("enabled"))

    def metrics_config(self, category):
        """The window's settings as the core parsed them ({} when the window is off)."""
        name = _CATEGORY_RANGES.get(category)
        if not self.profiling_enabled or name is None:
            return {}
        settings = self.resolved.range(name)
        return dict(settings) if settings.get("enabled") else {}
