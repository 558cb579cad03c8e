"""Events a script times itself, written into a framework timeline: smdebug's
``write_trace_events`` semantics, for ``hook.record_trace_events`` and for
``TimelineFileWriter`` (smdebug.core.tfevent.timeline_file_writer), over trainscope's C++
TimelineWriter (trainscope/timeline.h; format in docs/formats/timeline.md).

Not thread-safe: one thread writes (the writer underneath is thread-safe).
"""

import sys

from .._native import load as _load_core


class TraceEvents:
    """write(training_phase, op_name, ph, ts_s, dur_s, args): epoch seconds.

    "X": a complete event [ts_s, ts_s + dur_s]. "B" opens a span on the training_phase row and
    the next "E" on that row closes it (Chrome's pairing: by row, whatever the names): the pair
    is written as one complete event named after the "B", with the args of both. An "E" with no
    open "B" covers [ts_s - dur_s, ts_s]. Any other phase is an instant event. close_open()
    writes each "B" still open as an instant event. Errors go to `report(where, exception)`."""

    def __init__(self, writer, report):
        self._writer = writer
        self._report = report
        self._open = {}  # training phase -> [(name, start us, args)]

    def write(self, training_phase, op_name, ph, ts_s, dur_s, args):
        try:
            phase = str(training_phase)
            name = str(op_name)
            ts_us = int(float(ts_s) * 1e6)
            dur_us = max(0, int(float(dur_s or 0) * 1e6))
            if ph == "B":
                self._open.setdefault(phase, []).append((name, ts_us, args))
            elif ph == "E":
                stack = self._open.get(phase)
                if stack:
                    name, start_us, first_args = stack.pop()
                    args = {**(first_args or {}), **(args or {})}
                    self._writer.record(phase, name, start_us, max(0, ts_us - start_us), -1,
                                        args)
                else:
                    self._writer.record(phase, name, ts_us - dur_us, dur_us, -1, args)
            elif ph == "X":
                self._writer.record(phase, name, ts_us, dur_us, -1, args)
            else:
                self._writer.record_instant(phase, name, ts_us, -1, args)
        except Exception as e:  # fail open: the training goes on
            self._report("record_trace_events", e)

    def close_open(self):
        for phase, stack in self._open.items():
            for name, start_us, args in stack:
                try:
                    self._writer.record_instant(phase, name, start_us, -1, args)
                except Exception as e:
                    self._report("record_trace_events", e)
        self._open.clear()


class TimelineFileWriter:
    """smdebug's TimelineFileWriter: a framework timeline of this process under the profiler
    configuration's LocalPath (framework/pevents/..., rotated as the configuration says), for
    events the caller times: write_trace_events(timestamp, training_phase, op_name, phase="X",
    duration=0, **args) (seconds; see TraceEvents), flush(), close(). Nothing is written while
    the configuration has profiling off. A file that cannot be written is reported once on
    stderr and the events are dropped (never an exception)."""

    def __init__(self, profiler_config_parser, max_queue=100, suffix=None):
        self._enabled = bool(getattr(profiler_config_parser, "profiling_enabled", False))
        self._reported = set()
        self._writer = None
        self._events = None
        if not self._enabled:
            return
        core = _load_core()
        p = profiler_config_parser.resolved.parsed
        opts = {} if suffix is None else {"suffix": str(suffix)}
        self._writer = core.TimelineWriter(
            profiler_config_parser.local_path, node_id=core.default_timeline_node_id(),
            max_file_size_bytes=int(p["rotate_max_file_size_bytes"]),
            close_interval_seconds=float(p["rotate_file_close_interval_seconds"]),
            file_open_fail_threshold=int(p["file_open_fail_threshold"]), **opts)
        self._events = TraceEvents(self._writer, self._report)

    def _report(self, where, e):
        key = (where, type(e).__name__)
        if key not in self._reported:
            self._reported.add(key)
            print(f"trainscope: timeline ({where}): {e}; events are dropped", file=sys.stderr,
                  flush=True)

    def write_trace_events(self, timestamp, training_phase="", op_name="", phase="X",
                           duration=0, **kwargs):
        if self._events is not None:
            self._events.write(training_phase, op_name, phase, timestamp, duration,
                               kwargs or None)

    def flush(self):
        if self._writer is not None:
            try:
                self._writer.flush()
            except Exception as e:
                self._report("flush", e)

    def close(self):
        if self._writer is None:
            return
        self._events.close_open()
        try:
            self._writer.close()
        except Exception as e:
            self._report("close", e)
