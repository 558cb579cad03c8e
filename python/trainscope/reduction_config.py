"""ReductionConfig: which reductions of a tensor are saved instead of (or with) its value.

Serialized as smdebug does: ``{"save_raw_tensor": bool, "reductions": "mean,l2_norm,abs_max",
"save_shape": bool}`` with the order plain reductions, norms (``<n>_norm``), abs reductions
(``abs_<r>``), abs norms (``abs_<n>_norm``). Reduction definitions: trainscope/reductions.h.
"""

import json

from .exceptions import SMDebugValueError

ALLOWED_REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
ALLOWED_NORMS = ["l1", "l2"]
# trainscope's additions (counted over all elements; see trainscope/reductions.h).
EXTRA_REDUCTIONS = ["nan_count", "inf_count", "zero_fraction"]


def _as_list(name, value, example):
    """`value` as a list, or SMDebugValueError naming the argument (a bare string would
    otherwise become a list of its letters)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        shown = f"[{value!r}]" if isinstance(value, str) else example
        raise SMDebugValueError(
            f"ReductionConfig: {name}={value!r} is not a list: give a list, e.g. {name}={shown}")
    return list(value)


class ReductionConfig:
    def __init__(
        self,
        reductions=None,
        abs_reductions=None,
        norms=None,
        abs_norms=None,
        save_raw_tensor=False,
        save_shape=False,
    ):
        self.reductions = _as_list("reductions", reductions, "['mean', 'max']")
        self.abs_reductions = _as_list("abs_reductions", abs_reductions, "['max']")
        self.norms = _as_list("norms", norms, "['l1', 'l2']")
        self.abs_norms = _as_list("abs_norms", abs_norms, "['l1', 'l2']")
        self.save_raw_tensor = save_raw_tensor
        self.save_shape = save_shape
        self._check()

    def _check(self):
        allowed = ALLOWED_REDUCTIONS + EXTRA_REDUCTIONS
        for field, valid in (
            ("reductions", allowed),
            ("abs_reductions", allowed),
            ("norms", ALLOWED_NORMS),
            ("abs_norms", ALLOWED_NORMS),
        ):
            bad = [x for x in getattr(self, field) if x not in valid]
            if bad:
                raise SMDebugValueError(
                    f"{field} {bad} invalid: each must be one of {', '.join(valid)}")
        for field in ("save_raw_tensor", "save_shape"):
            if not isinstance(getattr(self, field), bool):
                raise SMDebugValueError(f"{field}={getattr(self, field)!r} must be a boolean")

    def reduction_tokens(self):
        """The tokens of the ``reductions`` string, in smdebug's order."""
        return (
            list(self.reductions)
            + [f"{n}_norm" for n in self.norms]
            + [f"abs_{r}" for r in self.abs_reductions]
            + [f"abs_{n}_norm" for n in self.abs_norms]
        )

    def to_json_dict(self):
        return {
            "save_raw_tensor": self.save_raw_tensor,
            "reductions": ",".join(self.reduction_tokens()),
            "save_shape": self.save_shape,
        }

    def to_json(self):
        return json.dumps(self.to_json_dict())

    @classmethod
    def from_dict(cls, params):
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugValueError(f"params={params!r} must be a dict")
        reductions, norms, abs_reductions, abs_norms = [], [], [], []
        raw = params.get("reductions", "")
        tokens = raw if isinstance(raw, list) else str(raw).split(",")
        for token in (t.strip() for t in tokens):
            if not token:
                continue
            is_abs = token.startswith("abs_")
            base = token[4:] if is_abs else token
            is_norm = base.endswith("_norm") or base in ALLOWED_NORMS
            if base.endswith("_norm"):
                base = base[: -len("_norm")]
            if is_norm:
                (abs_norms if is_abs else norms).append(base)
            else:
                (abs_reductions if is_abs else reductions).append(base)
        return cls(
            reductions=reductions,
            abs_reductions=abs_reductions,
            norms=norms,
            abs_norms=abs_norms,
            save_raw_tensor=bool(params.get("save_raw_tensor", False)),
            save_shape=bool(params.get("save_shape", False)),
        )

    @classmethod
    def from_json(cls, json_str):
        return cls.from_dict(json.loads(json_str))

    def __eq__(self, other):
        if not isinstance(other, ReductionConfig):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __repr__(self):
        return (
            f"<class ReductionConfig: reductions={self.reductions}, "
            f"abs_reductions={self.abs_reductions}, "
            f"norms={self.norms}, abs_norms={self.abs_norms}, "
            f"save_raw_tensor={self.save_raw_tensor}, "
            f"save_shape={self.save_shape}>"
        )
