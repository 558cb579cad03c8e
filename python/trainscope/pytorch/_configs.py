"""Conversion of save and reduction configs to the plain values trainscope._core takes.

The hook accepts trainscope's SaveConfig / SaveConfigMode / ReductionConfig, smdebug's own
classes, and plain dicts (``{ModeKeys.TRAIN: SaveConfigMode(...)}``), so a script written for
smdebug keeps working. Step numbers are checked here as SaveConfigMode checks them (so a dict or
an smdebug object gets the same messages, never a failed cast in the bindings); every other
check and every decision is made by the C++ core.
"""

from .. import modes as _modes
from ..exceptions import SMDebugTypeError, SMDebugValueError
from ..reduction_config import ReductionConfig
from ..save_config import SaveConfig, SaveConfigMode

_MODE_NAMES = ("TRAIN", "EVAL", "PREDICT", "GLOBAL")
_MODE_KEYS = ("save_interval", "start_step", "end_step", "save_steps")


def _mode_name(mode):
    return _modes.to_mode(mode).name


def save_config_mode_dict(cfg):
    """{save_interval, start_step, end_step, save_steps} of a SaveConfigMode-like object or dict,
    each value checked as SaveConfigMode checks it (SMDebugValueError naming the argument);
    unset values stay None (the core's defaults)."""
    if isinstance(cfg, dict):
        values = {k: cfg.get(k) for k in _MODE_KEYS}
    else:
        try:
            values = {k: getattr(cfg, k) for k in _MODE_KEYS}
        except AttributeError:
            raise SMDebugTypeError(
                f"{cfg!r} is not a SaveConfigMode: pass SaveConfigMode(save_interval=..., "
                "start_step=..., end_step=..., save_steps=[...])"
            ) from None
    checked = SaveConfigMode(**values)
    return {
        "save_interval": None if values["save_interval"] is None else checked.save_interval,
        "start_step": None if values["start_step"] is None else checked.start_step,
        "end_step": checked.end_step,
        "save_steps": list(checked.save_steps),
    }


def save_config_dict(obj):
    """{"TRAIN": dict | None, ...} for a SaveConfig, a SaveConfigMode, a {mode: SaveConfigMode}
    dict, or None (None -> None: the core's default, every 500 steps)."""
    if obj is None:
        return None
    if hasattr(obj, "mode_save_configs"):  # trainscope's or smdebug's SaveConfig
        items = obj.mode_save_configs.items()
    elif isinstance(obj, dict):
        items = obj.items()
    elif hasattr(obj, "save_interval"):  # a SaveConfigMode: the same for every mode
        return {m: save_config_mode_dict(obj) for m in _MODE_NAMES}
    else:
        raise SMDebugTypeError(
            f"save_config={obj!r} cannot be used: pass a SaveConfig, a SaveConfigMode, or a dict "
            "{ModeKeys: SaveConfigMode}"
        )
    out = {}
    for mode, cfg in items:
        try:
            name = _mode_name(mode)
        except ValueError as e:
            raise SMDebugValueError(f"save_config: {e}") from None
        out[name] = None if cfg is None else save_config_mode_dict(cfg)
    return out


def reduction_config_dict(obj):
    """The core's reduction dict for a ReductionConfig-like object (or None)."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        obj = ReductionConfig.from_dict(obj) if "reductions" in obj and isinstance(
            obj.get("reductions"), str) else obj
    if isinstance(obj, dict):
        return {k: obj.get(k) for k in ("reductions", "abs_reductions", "norms", "abs_norms",
                                        "save_raw_tensor", "save_shape")}
    try:
        return {
            "reductions": list(obj.reductions or []),
            "abs_reductions": list(obj.abs_reductions or []),
            "norms": list(obj.norms or []),
            "abs_norms": list(obj.abs_norms or []),
            "save_raw_tensor": obj.save_raw_tensor,
            "save_shape": obj.save_shape,
        }
    except AttributeError:
        raise SMDebugTypeError(
            f"reduction_config={obj!r} is not a ReductionConfig: pass ReductionConfig("
            "reductions=[...], norms=[...], save_raw_tensor=...)"
        ) from None


def save_config_from_dict(d):
    """A trainscope SaveConfig from the core's dict form (None stays None)."""
    if d is None:
        return None
    return SaveConfig(
        mode_save_configs={
            _modes.ModeKeys[name]: (None if v is None else SaveConfigMode(
                v["save_interval"], v["start_step"], v["end_step"], v["save_steps"]))
            for name, v in d.items()
        }
    )


def reduction_config_from_dict(d):
    """A trainscope ReductionConfig from the core's dict form (None stays None)."""
    if d is None:
        return None
    return ReductionConfig(
        reductions=d["reductions"],
        abs_reductions=d["abs_reductions"],
        norms=d["norms"],
        abs_norms=d["abs_norms"],
        save_raw_tensor=d["save_raw_tensor"],
        save_shape=d["save_shape"],
    )
