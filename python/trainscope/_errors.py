"""Turns trainscope._core errors into smdebug's exceptions (trainscope.exceptions).

The C++ reader reports a failed per-step query with a Status code (NotFound, Unavailable,
OutOfRange...). smdebug's classes need more than the code says, so the class is chosen as
smdebug's ``Tensor._step`` chooses it, by asking the reader (after the failure) what it knows:
the tensor is unknown -> TensorUnavailable; the step is AVAILABLE (complete) -> the tensor is
missing there: InvalidWorker if the worker did not write it, else TensorUnavailableForStep (with
has_reductions); UNAVAILABLE (skipped / past the end) -> StepUnavailable; NOT_YET_AVAILABLE ->
NoMoreData if all steps are loaded, else StepNotYetAvailable. Corruption, I/O and argument errors
keep their own classes.

The C++ reader names the smdebug class at the start of its messages ("StepUnavailable: ...",
"TensorUnavailableForStep: ... (has_reductions=true)", "NoMoreData: ... the last step is 8");
when a message carries such a prefix it decides, and the state-based rule above is the fallback
for messages without one.
"""

import re

from . import exceptions as ex
from .modes import ModeKeys, StepState, to_mode


def generic(core, err):
    """The exception for a _core error that is not about a step, or None."""
    if isinstance(err, core.CorruptionError):
        return ex.TrialCorruptionError(str(err))
    if isinstance(err, core.IOError):
        return ex.TrialIOError(str(err))
    if isinstance(err, core.InvalidArgumentError):
        return ex.SMDebugValueError(str(err))
    if isinstance(err, core.NotSupportedError):
        return ex.SMDebugNotImplementedError(str(err))
    if isinstance(err, (core.InternalError, core.AbortedError)):
        return ex.SMDebugRuntimeError(str(err))
    return None


def for_step(trial, err, tname, step, mode=ModeKeys.GLOBAL, worker=None):
    """The exception smdebug raises when a query of tensor `tname` at `step` fails with `err`."""
    core_mod = trial._core_module
    core = trial._core
    mode = to_mode(mode)
    named = from_prefix(err, tname, step, mode, worker)
    if named is not None:
        return named
    other = generic(core_mod, err)
    if other is not None:
        return other
    if not core.has_tensor(tname):
        return ex.TensorUnavailable(tname)
    state = StepState(core.has_passed_step(step, mode.value))
    if state == StepState.AVAILABLE:
        try:
            workers = core.tensor_workers(tname, step, mode.value)
        except core_mod.Error:
            workers = []
        if worker and workers and worker not in workers:
            return ex.InvalidWorker(worker)
        has_reductions = False
        if workers:
            try:
                has_reductions = bool(core.saved_reductions(tname, step, mode.value, worker or ""))
            except core_mod.Error:
                pass
        return ex.TensorUnavailableForStep(tname, step, mode, has_reductions)
    if state == StepState.UNAVAILABLE:
        return ex.StepUnavailable(step, mode)
    if core.loaded_all_steps:
        steps = core.steps(mode.value, False)
        return ex.NoMoreData(step, mode, steps[-1] if steps else -1)
    return ex.StepNotYetAvailable(step, mode)


_PREFIX = re.compile(r"^(?:[A-Za-z]+: )?([A-Z][A-Za-z]+): ")


def from_prefix(err, tname, step, mode, worker):
    """The smdebug exception a _core error's message names at its start, built with the query's
    context; None when the message names none."""
    message = getattr(err, "message", None) or str(err)
    m = _PREFIX.match(message)
    if m is None:
        return None
    name = m.group(1)
    if name == "TensorUnavailable":
        return ex.TensorUnavailable(tname)
    if name == "TensorUnavailableForStep":
        return ex.TensorUnavailableForStep(tname, step, mode, "has_reductions=true" in message)
    if name == "ShapeUnavailableForStep":
        return ex.ShapeUnavailableForStep(tname, step, mode)
    if name == "StepUnavailable":
        return ex.StepUnavailable(step, mode)
    if name == "StepNotYetAvailable":
        return ex.StepNotYetAvailable(step, mode)
    if name == "NoMoreData":
        last = re.search(r"last step is (-?\d+)", message)
        return ex.NoMoreData(step, mode, int(last.group(1)) if last else -1)
    if name == "InvalidWorker":
        return ex.InvalidWorker(worker)
    if name == "MissingCollectionFiles":
        return ex.MissingCollectionFiles()
    return None
