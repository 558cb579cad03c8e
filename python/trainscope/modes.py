"""Training modes and step states, numbered and named as smdebug does.

``ModeKeys`` is an Enum like ``smdebug.core.modes.ModeKeys``. The module also exposes the members
directly (``trainscope.modes.TRAIN``), so ``from trainscope import modes; modes.TRAIN`` works as
``from smdebug import modes; modes.TRAIN`` does.
"""

from enum import Enum


class ModeKeys(Enum):
    TRAIN = 1  # training/fitting
    EVAL = 2  # testing/evaluation
    PREDICT = 3  # inference
    GLOBAL = 4  # not a mode of its own: steps counted across all modes


class StepState(Enum):
    """Answer of ``Trial.has_passed_step`` (smdebug's ``StepState``)."""

    UNAVAILABLE = 0  # the step was skipped, or training ended before it
    AVAILABLE = 1  # the step is complete
    NOT_YET_AVAILABLE = 2  # the step may still come


TRAIN = ModeKeys.TRAIN
EVAL = ModeKeys.EVAL
PREDICT = ModeKeys.PREDICT
GLOBAL = ModeKeys.GLOBAL

ALLOWED_MODES = [TRAIN, EVAL, PREDICT, GLOBAL]
ALLOWED_MODE_NAMES = [m.name for m in ALLOWED_MODES]


def to_mode(mode):
    """Returns the ModeKeys for a ModeKeys, an smdebug ModeKeys, 1..4, or a name ('train',
    'TRAIN')."""
    if isinstance(mode, ModeKeys):
        return mode
    if isinstance(mode, Enum):  # smdebug's own ModeKeys, or another enum with the same values
        return ModeKeys[mode.name] if mode.name in ModeKeys.__members__ else ModeKeys(mode.value)
    if isinstance(mode, int) and not isinstance(mode, bool):
        return ModeKeys(mode)
    if isinstance(mode, str):
        name = mode.split(".")[-1].upper()
        if name in ModeKeys.__members__:
            return ModeKeys[name]
    raise ValueError(f"invalid mode {mode!r}: use ModeKeys.TRAIN/EVAL/PREDICT/GLOBAL")


def str_to_mode_keys(mode_str):
    """smdebug's helper: 'train' -> ModeKeys.TRAIN, ..."""
    return to_mode(mode_str)
