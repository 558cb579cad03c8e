"""trainscope: a local debugger and profiler for deep-learning training, compatible with smdebug.

Analysis API (a drop-in for smdebug's)::

    from trainscope import create_trial, modes
    trial = create_trial("/path/to/trial")
    trial.tensor("Net_fc1.weight").value(10, mode=modes.TRAIN)
"""

from . import exceptions, modes
from ._version import __version__
from .modes import ModeKeys, StepState
from .trials import create_trial

__all__ = ["__version__", "create_trial", "exceptions", "modes", "ModeKeys", "StepState"]
