"""trainscope: a local debugger and profiler for deep-learning training, compatible with smdebug.

Analysis API (a drop-in for smdebug's)::

    from trainscope import create_trial, modes
    trial = create_trial("/path/to/trial")
    trial.tensor("Net_fc1.weight").value(10, mode=modes.TRAIN)
"""

from . import exceptions, modes
from ._version import __version__
from .modes import ModeKeys, StepState

__all__ = ["__version__", "create_trial", "exceptions", "modes", "ModeKeys", "StepState"]


def __getattr__(name):
    # The analysis API (and numpy with it) is imported on first use: the `trainscope` command's
    # entry point and the automatic mode's boot import this package and never read a trial.
    if name == "create_trial":
        from .trials import create_trial

        return create_trial
    raise AttributeError(f"module 'trainscope' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "create_trial"])
