"""Tensor: one tensor name of a trial, across steps, modes and workers (smdebug's Tensor API).

Values are read-only numpy arrays that view the trial's memory-mapped event files without a
copy (``arr.flags.writeable`` is False: copy with ``arr.copy()`` before modifying). bfloat16
values come back as float32 (numpy has no bfloat16; the conversion is exact). String tensors come
back as numpy str arrays. Exceptions follow smdebug's (see trainscope._errors).
"""

import bisect

import numpy as np

from . import _errors
from .exceptions import SMDebugNotImplementedError, TensorUnavailableForStep
from .modes import ModeKeys, to_mode


class Tensor:
    def __init__(self, name, trial, cache=False):
        self.name = name
        self.original_name = None
        self.trial = trial
        self.cache = cache
        self._values = {}

    def __repr__(self):
        return f"<trainscope.Tensor name={self.name!r} trial={self.trial.name!r}>"

    # Calls `fn`, turning _core errors into smdebug's exceptions for (step, mode, worker).
    def _query(self, fn, step, mode, worker=None):
        try:
            return fn()
        except self.trial._core_module.Error as e:
            raise _errors.for_step(self.trial, e, self.name, step, mode, worker) from e

    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps=False):
        """Sorted steps (mode steps unless GLOBAL) at which this tensor was saved; complete ones
        only unless show_incomplete_steps."""
        mode = to_mode(mode)
        core_mod = self.trial._core_module
        try:
            return list(self.trial._core.tensor_steps(self.name, mode.value, show_incomplete_steps))
        except core_mod.NotFoundError:
            return []
        except core_mod.Error as e:
            other = _errors.generic(core_mod, e)
            if other is None:
                raise
            raise other from e

    def value(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        mode = to_mode(mode)
        key = (step_num, mode, worker)
        if key in self._values:
            return self._values[key]
        value = self._query(
            lambda: self.trial._core.value(self.name, step_num, mode.value, worker or ""),
            step_num,
            mode,
            worker,
        )
        if self.cache:
            self._values[key] = value
        return value

    def values(self, mode=ModeKeys.GLOBAL, worker=None):
        """{step: value} for every complete step of `mode`."""
        return {s: self.value(s, mode=mode, worker=worker) for s in self.steps(mode=mode)}

    def reduction_value(self, step_num, reduction_name, mode=ModeKeys.GLOBAL, worker=None,
                        abs=False):
        """A saved reduction if one was saved, else computed from the saved value (same
        definitions as the writer's: trainscope/reductions.h). Returns a numpy float64."""
        mode = to_mode(mode)
        value = self._query(
            lambda: self.trial._core.reduction_value(
                self.name, step_num, reduction_name, abs, mode.value, worker or ""
            ),
            step_num,
            mode,
            worker,
        )
        return np.float64(value)

    def reduction_values(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        """{(reduction_name, abs): value} of the reductions saved at the step."""
        mode = to_mode(mode)
        saved = self._query(
            lambda: self.trial._core.saved_reductions(
                self.name, step_num, mode.value, worker or ""),
            step_num,
            mode,
            worker,
        )
        return {(name, is_abs): np.float64(v) for name, is_abs, v in saved}

    def shape(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        """The saved shape, else the saved value's shape, as a tuple."""
        mode = to_mode(mode)
        return self._query(
            lambda: tuple(self.trial._core.shape(self.name, step_num, mode.value, worker or "")),
            step_num,
            mode,
            worker,
        )

    def workers(self, step_num, mode=ModeKeys.GLOBAL):
        """Sorted workers that saved this tensor at the step."""
        mode = to_mode(mode)
        core_mod = self.trial._core_module
        try:
            return list(self.trial._core.tensor_workers(self.name, step_num, mode.value))
        except core_mod.Error as e:
            # smdebug raises TensorUnavailableForStep here whatever the step's state.
            raise (_errors.generic(core_mod, e)
                   or TensorUnavailableForStep(self.name, step_num, mode)) from e

    def prev_steps(self, step, n=None, mode=ModeKeys.GLOBAL):
        """The (last n) steps up to and including `step`."""
        steps = self.steps(mode=mode)
        prev = steps[: bisect.bisect_right(steps, step)]
        return prev[-n:] if n else prev

    def step(self, step_num, mode=ModeKeys.GLOBAL, worker=None):
        raise SMDebugNotImplementedError(
            "step method has been removed. "
            "Please use tensor.value or tensor.reduction_value methods"
        )
