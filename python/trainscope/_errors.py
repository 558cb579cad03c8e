"""Turns trainscope._core errors into smdebug's exceptions (trainscope.exceptions).

Where smdebug raises an exception class of its own, the C++ reader says which on the Status
(ErrorDetail, status.h), and the bindings pass it on: the _core error's ``detail`` is the class's
name and its fields (``tensor``, ``step``, ``mode``, ``worker``, ``has_reductions``,
``last_step``) are the exception's (see python/src/status_py.h). The class is chosen from that,
never from the message. Corruption, I/O and argument errors keep their own classes.

A per-step query failure without a detail (none is expected from the reader; kept for errors of
other origins) falls back to asking the reader what it knows, as smdebug's ``Tensor._step``
does: the tensor is unknown -> TensorUnavailable; the step is AVAILABLE (complete) -> the tensor
is missing there: InvalidWorker if the worker did not write it, else TensorUnavailableForStep
(with has_reductions); UNAVAILABLE (skipped / past the end) -> StepUnavailable;
NOT_YET_AVAILABLE -> NoMoreData if all steps are loaded, else StepNotYetAvailable.
"""

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
    named = from_detail(err)
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


def from_detail(err):
    """The smdebug exception a _core error's ``detail`` names, built from its fields; None when
    it names none."""
    name = getattr(err, "detail", None)
    if name is None:
        return None
    mode = ModeKeys(err.mode)
    if name == "TensorUnavailable":
        return ex.TensorUnavailable(err.tensor)
    if name == "TensorUnavailableForStep":
        return ex.TensorUnavailableForStep(err.tensor, err.step, mode, err.has_reductions)
    if name == "ShapeUnavailableForStep":
        return ex.ShapeUnavailableForStep(err.tensor, err.step, mode)
    if name == "StepUnavailable":
        return ex.StepUnavailable(err.step, mode)
    if name == "StepNotYetAvailable":
        return ex.StepNotYetAvailable(err.step, mode)
    if name == "NoMoreData":
        return ex.NoMoreData(err.step, mode, err.last_step)
    if name == "InvalidWorker":
        return ex.InvalidWorker(err.worker)
    if name == "MissingCollectionFiles":
        return ex.MissingCollectionFiles()
    return None
