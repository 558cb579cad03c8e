"""SaveConfig / SaveConfigMode: which steps a collection is saved at, per mode (smdebug's API).

Serialized inside collections files as ``{"TRAIN": {"save_interval": .., "save_steps": [..],
"start_step": .., "end_step": ..}, "EVAL": ..., "PREDICT": ..., "GLOBAL": ...}``.
"""

import json
import numbers
import re

from ._native import load as _load_core
from .exceptions import SMDebugTypeError, SMDebugValueError
from .modes import ModeKeys, to_mode

DEFAULT_SAVE_INTERVAL = 500
DEFAULT_START_STEP = 0
DEFAULT_END_STEP = None
MAX_STEP = 2**63 - 1  # steps are 64-bit signed integers in the core
_WHOLE = re.compile(r"\s*[+-]?\d+\s*")


def _step_number(owner, name, value, minimum, what):
    """`value` as an int in [minimum, MAX_STEP], or SMDebugValueError naming the argument, the
    value and what is allowed. Accepts ints (numpy's too), whole floats and strings of digits
    (smdebug's JSON gives strings)."""
    allowed = f"give a whole number >= {minimum} ({what})"
    if isinstance(value, bool):
        raise SMDebugValueError(f"{owner}: {name}={value!r} is a boolean, not a number: {allowed}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        v = int(value)
    elif isinstance(value, str) and _WHOLE.fullmatch(value):
        v = int(value)
    else:
        raise SMDebugValueError(f"{owner}: {name}={value!r} is not a whole number: {allowed}")
    if v < minimum:
        raise SMDebugValueError(f"{owner}: {name}={value!r} is too small: {allowed}")
    if v > MAX_STEP:
        raise SMDebugValueError(
            f"{owner}: {name}={value!r} is too large: steps are at most {MAX_STEP} (2**63-1)")
    return v


class SaveConfigMode:
    """Save rule of one mode: every ``save_interval`` steps in [start_step, end_step), plus
    every step listed in ``save_steps``."""

    def __init__(self, save_interval=None, start_step=None, end_step=None, save_steps=None,
                 *, _owner="SaveConfigMode"):
        o = _owner
        self.save_interval = DEFAULT_SAVE_INTERVAL if save_interval is None else _step_number(
            o, "save_interval", save_interval, 1, "save every N steps; the default is 500")
        self.start_step = DEFAULT_START_STEP if start_step is None else _step_number(
            o, "start_step", start_step, 0, "the first step saved; steps count from 0")
        self.end_step = DEFAULT_END_STEP if end_step is None else _step_number(
            o, "end_step", end_step, 0, "the first step not saved; None for no end")
        if save_steps is None:
            self.save_steps = []
        elif isinstance(save_steps, (str, bytes)) or not hasattr(save_steps, "__iter__"):
            raise SMDebugValueError(
                f"{o}: save_steps={save_steps!r} is not a list: give a list of steps, e.g. [0, 10]")
        else:
            self.save_steps = [_step_number(o, f"save_steps[{i}]", s, 0, "steps count from 0")
                               for i, s in enumerate(save_steps)]

    def should_save_step(self, step_num):
        """True if step `step_num` of this mode is saved. The C++ core decides
        (SaveConfigMode::ShouldSave, the hook's own schedule), compiled once per set of values."""
        key = (self.save_interval, self.start_step, self.end_step, tuple(self.save_steps))
        if self.__dict__.get("_schedule_key") != key:
            try:
                self._schedule = _load_core().SaveSchedule(self.to_json_dict())
            except ValueError as e:
                raise SMDebugValueError(getattr(e, "message", None) or str(e)) from None
            self._schedule_key = key
        return self._schedule(int(step_num))

    def __getstate__(self):
        """The values only (pickle, copy): the compiled schedule is rebuilt on first use."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_schedule", "_schedule_key")}

    def to_json_dict(self):
        return {
            "save_interval": self.save_interval,
            "save_steps": list(self.save_steps),
            "start_step": self.start_step,
            "end_step": self.end_step,
        }

    @classmethod
    def from_dict(cls, params, default_values=None):
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError(f"params={params!r} is not a dict")
        defaults = default_values or {}
        get = lambda key: params.get(key, defaults.get(key))  # noqa: E731
        return cls(get("save_interval"), get("start_step"), get("end_step"), get("save_steps"))

    def __eq__(self, other):
        if not isinstance(other, SaveConfigMode):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return (
            f"<class SaveConfig: save_interval={self.save_interval}, save_steps={self.save_steps}, "
            f"start_step={self.start_step}, end_step={self.end_step}>"
        )


class SaveConfig:
    """Maps each ModeKeys to a SaveConfigMode (or None: the hook's default applies)."""

    def __init__(
        self, mode_save_configs=None, save_interval=None, start_step=None, end_step=None,
        save_steps=None
    ):
        if mode_save_configs is None:
            self.mode_save_configs = {
                mode: SaveConfigMode(save_interval, start_step, end_step, save_steps,
                                     _owner="SaveConfig")
                for mode in ModeKeys
            }
        else:
            configs = {}
            for mode, value in mode_save_configs.items():
                if value is not None and not isinstance(value, SaveConfigMode):
                    raise SMDebugValueError(
                        f"mode_save_configs[{mode}] must be a SaveConfigMode or None, got {value!r}"
                    )
                configs[to_mode(mode)] = value
            self.mode_save_configs = {mode: configs.get(mode) for mode in ModeKeys}

    def get_save_config(self, mode):
        return self.mode_save_configs[to_mode(mode)]

    def set_save_config(self, mode, save_config_mode):
        self.mode_save_configs[to_mode(mode)] = save_config_mode

    def should_save_step(self, mode, step_num):
        cfg = self.get_save_config(mode)
        return cfg is not None and cfg.should_save_step(step_num)

    def to_json_dict(self):
        return {
            mode.name: (cfg.to_json_dict() if cfg is not None else None)
            for mode, cfg in self.mode_save_configs.items()
        }

    def to_json(self):
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params, default_values=None):
        """Parses ``{"TRAIN": {...}, ...}`` (mode names, any case) or one mode-less dict."""
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError(f"params={params!r} is not a dict")
        if any(k.split(".")[-1].upper() in ModeKeys.__members__ for k in params):
            return cls(
                mode_save_configs={
                    to_mode(k): SaveConfigMode.from_dict(v, default_values)
                    for k, v in params.items()
                }
            )
        mode_cfg = SaveConfigMode.from_dict(params, default_values)
        return cls(mode_save_configs={mode: mode_cfg for mode in ModeKeys})

    @classmethod
    def from_json(cls, json_str):
        return cls.from_dict(json.loads(json_str))

    @classmethod
    def from_save_config_mode(cls, save_config_mode):
        return cls(mode_save_configs={mode: save_config_mode for mode in ModeKeys})

    def __eq__(self, other):
        if not isinstance(other, SaveConfig):
            return NotImplemented
        return self.mode_save_configs == other.mode_save_configs

    def __repr__(self):
        return f"<class SaveConfig: {self.mode_save_configs}>"
