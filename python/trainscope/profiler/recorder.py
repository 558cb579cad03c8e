"""FrameworkProfiler: the hook's framework metrics, written through the C++ TimelineWriter.

What it records (Chrome trace events in smdebug's framework/pevents layout,
docs/formats/timeline.md; phase names are smdebug's where smdebug has one):

=============================  ============================================  =====================
phase                          span                                          name
=============================  ============================================  =====================
``Step:ModeKeys.<MODE>``       one step boundary to the next (or set_mode /  ``Step:ModeKeys.TRAIN``
                               close): forward, backward, optimizer and the
                               wait for the next batch all nest inside
``Forward``                    a forward call of a registered module         the module's class
``Backward(post-forward)``     the gradient reaching the module's output to  the module's class
                               the end of the autograd pass
``Optimizer``                  ``optimizer.step()``                          ``<Optimizer>.step``
``DataLoaderIter``             the training loop waiting in ``next()`` on a  ``<Iter>::GetNext``
                               torch DataLoader iterator
``DataLoaderIterInitialize``   ``iter(loader)`` (worker start-up)            ``<Iter>.__init__``
``UserSpan``                   ``with hook.profile(name):``                  ``name``
=============================  ============================================  =====================

Every event carries ``args.step_num`` (the mode step, a string, as smdebug writes it) and
``args.pid``; step events also ``global_step``.

Windows: DetailedProfilingConfig runs torch.profiler over its steps and saves the Chrome trace
under ``framework/pytorch/detailed_profiling/<YYYYMMDDHH>/<start step>/``; PythonProfilingConfig
runs cProfile (or pyinstrument) per step and saves the stats where smdebug does
(``framework/pytorch/<cprofile|pyinstrument>/<node>/<start>_<end>/python_stats``).

Cost: a step's span is recorded by the C++ StepTimeline (trainscope/step_timeline.h) inside the
hook's one call per step boundary; the forward callbacks are attached only to the steps that
record phases (PhaseMinIntervalInMilliseconds), so a step that does not record them runs no
profiler code in Python but two optimizer callbacks that return at once. Other spans are timed
with time.time_ns() and handed to C++ in one call that appends to a buffer (no I/O, no JSON, no
device sync). With the profiler off, no callback is installed. Errors in any callback are
reported once and never reach training.
"""

import collections
import os
import sys
import time

import torch

from .. import _pre_call
from .._native import load as _load_core
from .data import USER_PHASE
from .python_profiler import (PYINSTRUMENT_NAME, PyinstrumentPythonProfiler, StepPhase,
                              cProfileDefaultPythonProfiler, cProfilePythonProfiler,
                              mode_keys_to_python_profile_mode)
from .trace_events import TraceEvents

FORWARD = "Forward"
BACKWARD = "Backward(post-forward)"
OPTIMIZER = "Optimizer"
DATALOADER = "DataLoaderIter"
DATALOADER_INIT = "DataLoaderIterInitialize"
USER = USER_PHASE  # "UserSpan", defined with ProfilerData.summary(), which reads it
DETAILED_DIR = os.path.join("framework", "pytorch", "detailed_profiling")
MAX_KEPT_EVENTS = 200_000  # what get_profiler_data() can return (oldest dropped first)

_now_ns = time.time_ns


class _Window:
    """A step or time window, with the semantics of smdebug's can_start_profiling (and of the
    C++ ProfileRange::ShouldProfile): a missing StartStep is the first step asked about, a
    missing NumSteps 1; a time window without a duration covers one step."""

    def __init__(self, rng):
        self.enabled = bool(rng.get("enabled"))
        self.start_step = rng.get("start_step")
        self.num_steps = rng.get("num_steps")
        self.start_time = rng.get("start_time_s")
        self.duration = rng.get("duration_s")
        self.profiler_name = rng.get("profiler_name") or "cprofile"
        self.cprofile_timer = rng.get("cprofile_timer") or "total_time"
        self._end_step = None
        self._end_time = None
        self._time_based = self.start_time is not None or self.duration is not None

    def contains(self, step, now_s):
        if not self.enabled:
            return False
        if self._time_based:
            if self.start_time is None:
                self.start_time = now_s
            if self.duration is None:  # one step from the first one at or after the start
                if self._end_step is None and now_s >= self.start_time:
                    self._end_step = step + 1
                return self._end_step is not None and step < self._end_step
            return self.start_time <= now_s < self.start_time + self.duration
        if self.start_step is None:
            self.start_step = step
        if self._end_step is None:
            self._end_step = self.start_step + (1 if self.num_steps is None else self.num_steps)
        return self.start_step <= step < self._end_step


def _first_grad_tensor(value):
    if isinstance(value, torch.Tensor):
        return value if value.requires_grad else None
    if isinstance(value, (list, tuple)):
        for v in value:
            t = _first_grad_tensor(v)
            if t is not None:
                return t
    elif isinstance(value, dict):
        for v in value.values():
            t = _first_grad_tensor(v)
            if t is not None:
                return t
    return None


# ---- the data-loader patch (one per process, pointing at the active profiler) -------------------

_active = None  # the FrameworkProfiler that records data-loader waits, or None
_patched = None  # (iterator class, original __next__, DataLoader, original _get_iterator)


def _install_dataloader_patch():
    global _patched
    if _patched is not None:
        return
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    orig_next = _BaseDataLoaderIter.__next__
    orig_get_iter = DataLoader._get_iterator

    def __next__(self):  # noqa: N807
        prof = _active
        if prof is None:
            return orig_next(self)
        t0 = _now_ns()
        try:
            return orig_next(self)
        finally:
            prof._dataloader_wait(type(self).__name__, t0, _now_ns())

    def _get_iterator(self):
        prof = _active
        if prof is None:
            return orig_get_iter(self)
        t0 = _now_ns()
        it = orig_get_iter(self)
        prof._dataloader_init(type(it).__name__, t0, _now_ns())
        return it

    _BaseDataLoaderIter.__next__ = __next__
    DataLoader._get_iterator = _get_iterator
    _patched = (_BaseDataLoaderIter, orig_next, DataLoader, orig_get_iter)


def _remove_dataloader_patch():
    global _patched
    if _patched is None:
        return
    it_cls, orig_next, dl_cls, orig_get_iter = _patched
    it_cls.__next__ = orig_next
    dl_cls._get_iterator = orig_get_iter
    _patched = None


class _UserSpan:
    """``with hook.profile("name"):`` -- one UserSpan event for the block."""

    __slots__ = ("_prof", "_name", "_args", "_t0")

    def __init__(self, prof, name, args):
        self._prof = prof
        self._name = name
        self._args = args
        self._t0 = 0

    def __enter__(self):
        self._t0 = _now_ns()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._prof._user_span(self._name, self._t0, _now_ns(), self._args)
        return False


class FrameworkProfiler:
    """Records a hook's framework metrics; made by the hook when the profiler is on.

    Not thread-safe in general (callbacks come from the training thread), except that backward
    ends may be recorded on autograd's thread and the writer is thread-safe."""

    def __init__(self, cfg, out_dir, is_chief=True, report=None):
        core = _load_core()
        p = cfg.parsed
        self.base_dir = cfg.local_path if cfg.explicit_local_path else out_dir
        self.node_id = core.default_timeline_node_id()
        self._report_fn = report
        self._reported = set()
        self.writer = core.TimelineWriter(
            self.base_dir, node_id=self.node_id,
            max_file_size_bytes=int(p["rotate_max_file_size_bytes"]),
            close_interval_seconds=float(p["rotate_file_close_interval_seconds"]),
            file_open_fail_threshold=int(p["file_open_fail_threshold"]))
        self._record = self.writer.record
        self._trace = TraceEvents(self.writer, self._report)
        self.events = collections.deque(maxlen=MAX_KEPT_EVENTS)
        self._keep = self.events.append
        # Step spans: one per boundary, recorded by the C++ StepTimeline that the hook's
        # boundary() begins (one call per step); the newest MAX_KEPT_EVENTS are kept there too.
        # PhaseMinIntervalInMilliseconds: Forward/Backward/Optimizer spans only on steps that
        # begin at least this long after the last step that recorded them (0: every step).
        period_ms = int(p.get("phase_min_interval_millis") or 0)
        self.steps = core.StepTimeline(self.writer, phase_period_us=period_ms * 1000,
                                       keep=MAX_KEPT_EVENTS)
        self._global_step = -1
        self._mode = 4
        # forward / backward / optimizer state. Their callbacks are attached only while a step
        # records its phases (set_phases): a step that does not runs none of them.
        self._phases_on = False
        self._phase_handles = []
        self._modules = []  # (module, name) of attach_module
        self._fwd_stack = []
        self._bwd_armed = False
        self._bwd_t0 = None
        self._bwd_name = ""
        self._opt_t0 = {}
        self._handles = []  # the optimizer callbacks (installed for good)
        # windows
        self._detailed = _Window(cfg.range("detailed_profiling"))
        self._python = _Window(cfg.range("python_profiling"))
        dl = cfg.range("dataloader_profiling")
        self._dataloader_window = _Window(dl) if dl.get("specified") else None
        # The hook tells this profiler each step's mode and global step (on_step) only when a
        # window or PhaseMinIntervalInMilliseconds 0 needs it; otherwise only phase changes.
        self.per_step = (period_ms == 0 or self._detailed.enabled or self._python.enabled
                         or self._dataloader_window is not None)
        self._torch_prof = None
        self._torch_prof_start = None  # (global step, epoch us)
        self._window_steps = []  # (start_us, end_us, mode step) of steps inside the window
        self._window_last = None  # the step span last added to _window_steps
        self._py_profiler = None  # python_profiler.PythonProfiler, made at the window's start
        self._py_prof = None  # that profiler while it profiles a step
        self.detailed_traces = []
        self.python_stats = []
        self.closed = False
        # system sampler
        self.sampler = None
        ssm = cfg.start_system_monitor
        if ssm is True or (ssm == "auto" and is_chief and os.environ.get("TRAINSCOPE_RUN") != "1"):
            self._start_sampler(core, p.get("system_monitor_interval_millis"))
        try:
            from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                               register_optimizer_step_pre_hook)

            # Installed for good (they return at once on a step without phases): the automatic
            # mode may make a step boundary, where phases turn on or off, from inside a global
            # optimizer pre-hook, and PyTorch forbids adding or removing one while it calls
            # them ("OrderedDict mutated during iteration").
            # Behind C gates: most steps record no phases, and pay no Python frame for them.
            self._handles.append(register_optimizer_step_pre_hook(
                _pre_call.gate(self, "_phases_on", self._opt_pre)))
            self._handles.append(register_optimizer_step_post_hook(
                _pre_call.gate(self, "_opt_t0", self._opt_post)))
        except ImportError:  # torch < 2.0: no global optimizer hooks
            self._report("optimizer",
                         "this torch has no global optimizer hooks; no Optimizer spans")
        global _active
        _install_dataloader_patch()
        _active = self

    # ---- helpers ---------------------------------------------------------------------------------

    def _report(self, where, e):
        key = (where, type(e).__name__ if isinstance(e, BaseException) else str(e))
        if key in self._reported:
            return
        self._reported.add(key)
        msg = f"trainscope: profiler ({where}): {e}; profiling goes on without it"
        if self._report_fn is not None:
            try:
                self._report_fn(where, e)
                return
            except Exception:
                pass
        print(msg, file=sys.stderr, flush=True)

    def _span(self, phase, name, t0_ns, t1_ns, step):
        s = t0_ns // 1000
        d = t1_ns // 1000 - s
        self._record(phase, name, s, d, step)
        self._keep((phase, name, s, d, step))

    def _start_sampler(self, core, interval):
        try:
            self.sampler = core.SystemSampler(
                self.base_dir, interval_millis=int(interval or 500), node_index=1,
                root_pid=os.getpid())
            self.sampler.start()
        except Exception as e:
            self.sampler = None
            self._report("system sampler", e)

    # ---- steps -----------------------------------------------------------------------------------

    @property
    def _step_num(self):
        """The mode step of the step in progress (-1 between steps)."""
        return self.steps.mode_step

    def on_step(self, mode, global_step):
        """Called by the hook after a boundary when `per_step`: the step begun (its span is
        the StepTimeline's) and the windows it opens or closes."""
        try:
            self._note_window_step()
            self._mode = mode
            self._global_step = global_step
            if self._detailed.enabled or self._python.enabled:
                self._windows(global_step, _now_ns() / 1e9)
        except Exception as e:
            self._report("step", e)

    def set_phases(self, on, module=None):
        """The step begun records its Forward, Backward and Optimizer spans (on) or not: the
        forward callbacks are attached only while it does (the optimizer's stay, returning at
        once when off). `module`: the registered module whose
        forward pre-hook made the boundary, when it did (its forward began before a pre-hook
        attached now could run: its start is now)."""
        self._phases_on = on
        self._bwd_armed = False
        try:
            if on and not self._phase_handles:
                self._fwd_stack.clear()
                self._attach_phases()
                if module is not None and "_ts_prof_name" in module.__dict__:
                    self._fwd_stack.append(_now_ns())
            elif not on and self._phase_handles:
                self._detach_phases()
        except Exception as e:
            self._report("phases", e)

    def _attach_phases(self):
        handles = self._phase_handles
        for module, _ in self._modules:
            handles.append(module.register_forward_pre_hook(self._fwd_pre))
            handles.append(module.register_forward_hook(self._fwd_post))

    def _detach_phases(self):
        handles, self._phase_handles = self._phase_handles, []
        for h in handles:
            h.remove()

    def _end_step(self, t_ns):
        self.steps.end(t_ns // 1000)
        self._note_window_step()

    def _note_window_step(self):
        """The step that ended last, if new, among the steps inside the torch.profiler window."""
        if self._torch_prof is None:
            return
        last = self.steps.last()
        if last is not None and last != self._window_last:
            self._window_last = last
            self._window_steps.append((last[2], last[2] + last[3], last[4]))

    def on_mode_change(self):
        """set_mode: the step in progress ends now (the next one starts at the next boundary)."""
        try:
            self._end_step(_now_ns())
        except Exception as e:
            self._report("step", e)
        self._stop_python()  # a Python profiling interval is one step: it ends with the step

    def spans(self):
        """Every kept span, steps included, oldest first (by start)."""
        kept = list(self.events) + self.steps.kept()
        kept.sort(key=lambda s: s[2])
        return kept[-MAX_KEPT_EVENTS:]

    def _windows(self, step, now_s):
        if self._detailed.enabled:
            inside = self._detailed.contains(step, now_s)
            if self._torch_prof is not None and not inside:
                self._stop_detailed()
            elif self._torch_prof is None and inside:
                self._start_detailed(step)
        if self._python.enabled:
            if self._py_prof is not None:
                self._stop_python()
            if self._python.contains(step, now_s):
                self._start_python(step)

    # ---- forward / backward / optimizer ----------------------------------------------------------

    def attach_module(self, module, name):
        """Times forward (and the backward that follows) of a registered top module."""
        module._ts_prof_name = name
        self._modules.append((module, name))
        if self._phase_handles:  # attached now too, while the step in progress records phases
            self._phase_handles.append(module.register_forward_pre_hook(self._fwd_pre))
            self._phase_handles.append(module.register_forward_hook(self._fwd_post))

    def _fwd_pre(self, module, inputs):
        if self._phases_on:
            self._fwd_stack.append(_now_ns())

    def _fwd_post(self, module, inputs, outputs):
        if not self._fwd_stack:
            return
        t0 = self._fwd_stack.pop()
        name = module.__dict__.get("_ts_prof_name", "Module")
        try:
            self._span(FORWARD, name, t0, _now_ns(), self._step_num)
            if not self._bwd_armed and torch.is_grad_enabled():
                t = _first_grad_tensor(outputs)
                if t is not None:
                    self._bwd_name = name
                    t.register_hook(self._bwd_start)
                    self._bwd_armed = True
        except Exception as e:
            self._report("forward", e)

    def _bwd_start(self, grad):
        if self._bwd_t0 is None:
            self._bwd_t0 = _now_ns()
            try:
                torch.autograd.Variable._execution_engine.queue_callback(self._bwd_end)
            except Exception as e:
                self._bwd_t0 = None
                self._report("backward", e)
        return None

    def _bwd_end(self):
        t0, self._bwd_t0 = self._bwd_t0, None
        self._bwd_armed = False
        if t0 is not None:
            try:
                self._span(BACKWARD, self._bwd_name, t0, _now_ns(), self._step_num)
            except Exception as e:
                self._report("backward", e)

    def _opt_pre(self, optimizer, args, kwargs):
        if self._phases_on:
            self._opt_t0[id(optimizer)] = _now_ns()

    def _opt_post(self, optimizer, args, kwargs):
        if not self._opt_t0:
            return
        t0 = self._opt_t0.pop(id(optimizer), None)
        if t0 is not None:
            try:
                self._span(OPTIMIZER, type(optimizer).__name__ + ".step", t0, _now_ns(),
                           self._step_num)
            except Exception as e:
                self._report("optimizer", e)

    # ---- data loader and user spans --------------------------------------------------------------

    def _dataloader_wait(self, iter_name, t0, t1):
        try:
            w = self._dataloader_window
            if w is not None and not w.contains(self._global_step, t0 / 1e9):
                return
            self._span(DATALOADER, iter_name + "::GetNext", t0, t1, self._step_num)
        except Exception as e:
            self._report("data loader", e)

    def _dataloader_init(self, iter_name, t0, t1):
        try:
            self._span(DATALOADER_INIT, iter_name + ".__init__", t0, t1, self._step_num)
        except Exception as e:
            self._report("data loader", e)

    def user_span(self, name, args=None):
        return _UserSpan(self, str(name), args or None)

    def _user_span(self, name, t0, t1, args):
        try:
            s = t0 // 1000
            d = t1 // 1000 - s
            self._record(USER, name, s, d, self._step_num, args)
            self._keep((USER, name, s, d, self._step_num))
        except Exception as e:
            self._report("user span", e)

    def trace_event(self, training_phase, op_name, ph, ts_s, dur_s, args):
        """hook.record_trace_events: see trace_events.TraceEvents.write."""
        self._trace.write(training_phase, op_name, ph, ts_s, dur_s, args)

    # ---- detailed profiling (torch.profiler) -----------------------------------------------------

    def _start_detailed(self, step):
        try:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU]
            if torch.cuda.is_available():
                acts.append(ProfilerActivity.CUDA)
            prof = profile(activities=acts, record_shapes=False, with_stack=False)
            prof.start()
            self._torch_prof = prof
            self._torch_prof_start = (step, _now_ns() // 1000)
        except Exception as e:
            self._torch_prof = None
            self._report("torch.profiler", e)

    def _stop_detailed(self):
        prof, self._torch_prof = self._torch_prof, None
        if prof is None:
            return
        try:
            prof.stop()
            step, start_us = self._torch_prof_start
            end_us = _now_ns() // 1000
            hour = time.strftime("%Y%m%d%H", time.gmtime(start_us / 1e6))
            folder = os.path.join(self.base_dir, DETAILED_DIR, hour, f"{step:09d}")
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, f"{self.node_id}_{start_us}_{end_us}.pt.trace.json")
            tmp = os.path.join(folder, f".{self.node_id}_{start_us}.tmp")
            prof.export_chrome_trace(tmp)
            os.replace(tmp, path)
            self.detailed_traces.append(path)
            self._record_operators(path)
        except Exception as e:
            self._report("torch.profiler", e)
        self._window_steps = []

    def _record_operators(self, path):
        """The trace's operators also go into the timeline as smdebug's PyTorch hook writes
        them: phase ``cpu_functions`` (CPU operators) and ``gpu_functions-dev:<n>`` (kernels),
        with the step each began in, so readers of framework/pevents (smdebug's, the profiler
        rules) see them."""
        import bisect
        import json

        with open(path) as f:
            trace = json.load(f)
        base_us = trace.get("baseTimeNanoseconds", 0) / 1000.0
        steps = sorted(self._window_steps)
        starts = [a for a, _, _ in steps]
        for e in trace.get("traceEvents", []):
            if e.get("ph") != "X":
                continue
            cat = e.get("cat")
            if cat == "cpu_op":
                phase = "cpu_functions"
            elif cat == "kernel":
                phase = "gpu_functions-dev:" + str((e.get("args") or {}).get("device", 0))
            else:
                continue
            start = int(base_us + float(e.get("ts", 0)))
            i = bisect.bisect_right(starts, start) - 1
            step = steps[i][2] if i >= 0 and start < steps[i][1] else -1
            self._record(phase, str(e.get("name", "")), start, int(float(e.get("dur", 0))), step)

    # ---- Python profiling (cProfile / pyinstrument) ----------------------------------------------

    def _start_python(self, step):
        try:
            if self._py_profiler is None:
                self._py_profiler = self._make_python_profiler()
            self._py_profiler.start_profiling(
                StepPhase.STEP_START, mode_keys_to_python_profile_mode(self._mode), step)
            self._py_prof = self._py_profiler
        except Exception as e:
            self._py_prof = None
            self._report("python profiling", e)

    def _make_python_profiler(self):
        name, timer = self._python.profiler_name, self._python.cprofile_timer
        if name == PYINSTRUMENT_NAME:
            try:
                import pyinstrument  # noqa: F401

                return PyinstrumentPythonProfiler(self.base_dir, "pytorch", node_id=self.node_id)
            except ImportError:
                self._report("python profiling",
                             "pyinstrument is not installed (pip install pyinstrument); "
                             "using cProfile")
        if timer == "default":
            return cProfileDefaultPythonProfiler(self.base_dir, "pytorch", node_id=self.node_id)
        return cProfilePythonProfiler(self.base_dir, "pytorch", timer, node_id=self.node_id)

    def _stop_python(self):
        """The step that the interval profiles ends: its folder is written, named
        <mode>-<step>-stepstart-<us>_<mode>-<step>-stepend-<us> (one step per interval)."""
        prof, self._py_prof = self._py_prof, None
        if prof is None:
            return
        try:
            folder = prof.stop_profiling(StepPhase.STEP_END, prof._start_mode, prof._start_step)
            if folder is not None:
                self.python_stats.append(folder)
        except Exception as e:
            self._report("python profiling", e)

    # ---- end -------------------------------------------------------------------------------------

    def flush(self):
        try:
            self.steps.flush()
            self.writer.flush()
        except Exception as e:
            self._report("timeline", e)

    def close(self):
        """Ends the step in progress and the windows, finishes the timeline file, stops the
        sampler and removes every callback. Idempotent."""
        global _active
        if self.closed:
            return
        self.closed = True
        if _active is self:
            _active = None
            _remove_dataloader_patch()
        for h in self._handles + self._phase_handles:
            try:
                h.remove()
            except Exception:
                pass
        self._handles.clear()
        self._phase_handles.clear()
        self._phases_on = False
        try:
            self._end_step(_now_ns())
        except Exception as e:
            self._report("step", e)
        self._stop_detailed()
        self._stop_python()
        self._trace.close_open()
        try:
            self.writer.close()
        except Exception as e:
            self._report("timeline", e)
        if self.sampler is not None:
            try:
                self.sampler.sample_now()  # the last minute's numbers, up to the end
                self.sampler.stop()
            except Exception as e:
                self._report("system sampler", e)

