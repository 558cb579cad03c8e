"""Reading a trial's profiler data back: system metrics (system/) and framework events
(framework/pevents/), by time range or by step range, for ours and smdebug's files.

Thin wrappers over the C++ SystemMetricsReader and TimelineReader
(trainscope/metrics_reader.h). The names follow smdebug's readers
(``get_events(start_time, end_time, unit)``, ``get_events_by_step(start_step, end_step)``) and
its event attributes (system: ``timestamp``, ``type``, ``name``, ``dimension``, ``value``,
``node_id``; framework: ``start_time``, ``end_time``, ``duration``, ``event_name``,
``event_phase``, ``pid``, ``tid``, ``node_id``, ``event_args``, all times in epoch
microseconds).
"""

import json
import os
from typing import NamedTuple, Optional

from .._native import load as _load_core

_UNIT_TO_US = {"us": 1, "microseconds": 1, "ms": 1000, "milliseconds": 1000,
               "s": 1_000_000, "seconds": 1_000_000}
_MIN = -(2 ** 63)
_MAX = 2 ** 63 - 1


class SystemMetricEvent(NamedTuple):
    """One system-metrics value (smdebug's ProfilerSystemEvents)."""

    timestamp_us: int
    type: str
    name: str
    dimension: str
    value: float
    node_id: str

    @property
    def timestamp(self):
        """Epoch seconds, as smdebug's ``.timestamp``."""
        return self.timestamp_us / 1e6


class FrameworkEvent:
    """One framework event (smdebug's TraceEvent); times in epoch microseconds."""

    __slots__ = ("event_name", "event_phase", "phase", "start_time", "end_time", "duration", "pid",
                 "tid", "node_id", "file_type", "step", "_args_json", "_args")

    def __init__(self, d):
        self.event_name = d["name"]
        self.event_phase = d["phase"]
        self.phase = d["ph"]
        self.start_time = d["start_us"]
        self.end_time = d["end_us"]
        self.duration = d["dur_us"]
        self.pid = d["pid"]
        self.tid = d["tid"]
        self.node_id = d["node_id"]
        self.file_type = d["file_suffix"]
        self.step = d["step"]
        self._args_json = d["args_json"]
        self._args = None

    @property
    def event_args(self):
        """The event's args as a dict (parsed on first use)."""
        if self._args is None:
            self._args = json.loads(self._args_json) if self._args_json else {}
        return self._args

    def __repr__(self):
        return (f"FrameworkEvent({self.event_phase!r}, {self.event_name!r}, "
                f"start={self.start_time}, dur={self.duration}, step={self.step})")


def _to_us(value, unit, default):
    if value is None:
        return default
    try:
        scale = _UNIT_TO_US[str(unit).lower()]
    except KeyError:
        raise ValueError(f"unit {unit!r} is not one of {sorted(_UNIT_TO_US)}") from None
    return int(value * scale)


def _check_ranges(start_time, end_time, start_step, end_step):
    if (start_step is not None or end_step is not None) and (
            start_time is not None or end_time is not None):
        raise ValueError("give a time range (start_time/end_time) or a step range "
                         "(start_step/end_step), not both")


class MetricsReader:
    """Profiler data of one trial folder; keeps the C++ readers (and their caches) between
    queries. Each query re-lists the folders first, so a growing trial is followed."""

    def __init__(self, trial_dir):
        core = _load_core()
        self.trial_dir = os.path.expanduser(str(trial_dir))
        self._system = core.SystemMetricsReader(self.trial_dir)
        self._timeline = core.TimelineReader(self.trial_dir)

    def system_metrics(self, start_time=None, end_time=None, unit="us", *, start_step=None,
                       end_step=None, type=None, dimension=None, node_id=None):  # noqa: A002
        """System-metric events with start_time <= timestamp < end_time (epoch, in `unit`:
        "us", "ms" or "s"), or during steps [start_step, end_step) (mode steps as the
        framework events record them; the step range's times come from those events).
        Filters: type ("cpu", "gpu", ...), dimension ("CPUUtilization", ...), node_id."""
        _check_ranges(start_time, end_time, start_step, end_step)
        if start_step is not None or end_step is not None:
            start_us, end_us = self.step_time_range(start_step or 0, end_step)
        else:
            start_us = _to_us(start_time, unit, _MIN)
            end_us = _to_us(end_time, unit, _MAX)
        self._system.refresh()
        rows = self._system.get_events(start_us, end_us, type or "", dimension or "",
                                       node_id or "")
        return [SystemMetricEvent(*r) for r in rows]

    def framework_metrics(self, start_time=None, end_time=None, unit="us", *, start_step=None,
                          end_step=None, phase=None, node_id=None, file_suffix=None):
        """Framework events overlapping [start_time, end_time) (epoch, in `unit`), or of steps
        [start_step, end_step). Filters: phase (a prefix of the event's phase, e.g. "Step:" or
        "Forward"), node_id, file_suffix ("pythontimeline.json", ...)."""
        _check_ranges(start_time, end_time, start_step, end_step)
        suffixes = [file_suffix] if isinstance(file_suffix, str) else list(file_suffix or [])
        self._timeline.refresh()
        if start_step is not None or end_step is not None:
            start_us, end_us = self.step_time_range(start_step or 0, end_step)
            rows = self._timeline.get_events(start_us, end_us, suffixes, node_id or "",
                                             phase or "")
        else:
            rows = self._timeline.get_events(_to_us(start_time, unit, _MIN),
                                             _to_us(end_time, unit, _MAX), suffixes,
                                             node_id or "", phase or "")
        return [FrameworkEvent(d) for d in rows]

    def step_time_range(self, start_step, end_step=None):
        """(start_us, end_us) of steps [start_step, end_step) from the framework events;
        end_step None: to the end of the data. NoMoreProfilerData-like LookupError when
        start_step has no event."""
        self._timeline.refresh()
        if end_step is None:
            end_step = 2 ** 62
        try:
            return tuple(self._timeline.get_step_time_range(int(start_step), int(end_step)))
        except RuntimeError as e:
            raise LookupError(getattr(e, "message", None) or str(e)) from None

    def first_timestamp_us(self) -> Optional[int]:
        """Earliest file time of either kind (smdebug's first_timestamp), None when no data."""
        self._system.refresh()
        self._timeline.refresh()
        ts = [t for t in (self._system.first_timestamp_us(), self._timeline.first_timestamp_us())
              if t]
        return min(ts) if ts else None


def system_metrics(trial_dir, *args, **kwargs):
    """MetricsReader(trial_dir).system_metrics(...)."""
    return MetricsReader(trial_dir).system_metrics(*args, **kwargs)


def framework_metrics(trial_dir, *args, **kwargs):
    """MetricsReader(trial_dir).framework_metrics(...)."""
    return MetricsReader(trial_dir).framework_metrics(*args, **kwargs)
