"""Collection for the PyTorch hook: smdebug's API over a collection shared with the C++ hook.

``hook.get_collection("weights")`` returns the collection the hook saves from: changing it
(``include``, ``save_config``, ``reduction_config``...) changes what the hook saves from the next
step on. A Collection made directly (``Collection("relus", include_regex=["relu"])``) belongs to no
hook until ``hook.add_collection(c)``. Regexes and configs are checked when they are set, with
the C++ core's messages (ValueError).
"""

import re

from .. import collection as _api
from .._native import load as _load_core
from ..exceptions import SMDebugTypeError, SMDebugValueError
from . import _configs


class CollectionKeys(_api.CollectionKeys):
    """smdebug's CollectionKeys (every name smdebug gives a meaning to)."""

    LAYERS = "layers"
    OPTIMIZER_VARIABLES = "optimizer_variables"
    TENSORFLOW_SUMMARIES = "tensorflow_summaries"
    HYPERPARAMETERS = "hyperparameters"
    PREDICTIONS = "predictions"
    LABELS = "labels"
    FEATURE_IMPORTANCE = "feature_importance"
    AVERAGE_SHAP = "average_shap"
    FULL_SHAP = "full_shap"
    TREES = "trees"


def _value_error(e):
    return SMDebugValueError(getattr(e, "message", None) or str(e))


class Collection(_api.Collection):
    """trainscope.collection.Collection bound to a C++ collection (the hook's, once added):
    every attribute reads and writes the C++ object; serialization, equality and hashing are
    the base class's."""

    def __init__(
        self,
        name,
        include_regex=None,
        tensor_names=None,
        reduction_config=None,
        save_config=None,
        save_histogram=True,
        *,
        _core_collection=None,
    ):
        core = _load_core()
        self._c = _core_collection if _core_collection is not None else core.Collection(name)
        self._modules = {}
        if _core_collection is not None:
            return
        if include_regex is not None:
            self.include(include_regex)
        if tensor_names is not None:
            self.tensor_names = tensor_names
        if reduction_config is not None:
            self.reduction_config = reduction_config
        if save_config is not None:
            self.save_config = save_config
        self.save_histogram = save_histogram

    @property
    def name(self):
        return self._c.name

    @property
    def include_regex(self):
        """A copy: change the regexes with include() or by assigning a list."""
        return list(self._c.include_regex)

    @include_regex.setter
    def include_regex(self, regexes):
        try:
            self._c.include_regex = [str(r) for r in (regexes or [])]
        except ValueError as e:
            raise _value_error(e) from None

    def include(self, t):
        """Adds a regex (or a list of regexes); matched with re.search semantics."""
        if isinstance(t, (list, tuple)):
            for item in t:
                self.include(item)
            return
        if not isinstance(t, str):
            raise SMDebugTypeError("Can only include str or list")
        try:
            self._c.include(t)
        except ValueError as e:
            raise _value_error(e) from None

    @property
    def tensor_names(self):
        return set(self._c.tensor_names)

    @tensor_names.setter
    def tensor_names(self, names):
        if names is None:
            names = set()
        elif not isinstance(names, (list, tuple, set, frozenset)):
            raise SMDebugTypeError("tensor_names can only be list or set")
        self._c.tensor_names = set(names)

    def has_tensor_name(self, tname):
        return self._c.has_tensor_name(tname)

    def add_tensor_name(self, tname):
        self._c.add_tensor_name(tname)

    def remove_tensor_name(self, tname):
        self._c.remove_tensor_name(tname)

    @property
    def reduction_config(self):
        return _configs.reduction_config_from_dict(self._c.reduction_config)

    @reduction_config.setter
    def reduction_config(self, cfg):
        try:
            self._c.reduction_config = _configs.reduction_config_dict(cfg)
        except ValueError as e:
            raise _value_error(e) from None

    @property
    def save_config(self):
        return _configs.save_config_from_dict(self._c.save_config)

    @save_config.setter
    def save_config(self, cfg):
        try:
            self._c.save_config = _configs.save_config_dict(cfg)
        except ValueError as e:
            raise _value_error(e) from None

    @property
    def save_histogram(self):
        return self._c.save_histogram

    @save_histogram.setter
    def save_histogram(self, value):
        self._c.save_histogram = bool(value)

    def add_module_tensors(self, module, inputs=False, outputs=True):
        """Saves the inputs and/or outputs of `module` (a submodule of a registered module)."""
        self._modules[module] = (inputs, outputs)

    @property
    def modules(self):
        return self._modules

    def matches(self, tname):
        """True if the hook would put a tensor of this name in this collection."""
        return self._c.matches(tname)

    def _apply_modules(self):
        """Turns add_module_tensors into regexes once the modules have names."""
        for module, (inputs, outputs) in list(self._modules.items()):
            name = getattr(module, "_ts_name", None) or getattr(module, "_module_name", None)
            if name is None:
                continue
            core = _load_core()
            for wanted, prefix in ((inputs, core.input_prefix), (outputs, core.output_prefix)):
                regex = "^" + re.escape(prefix(name))
                if wanted and regex not in self._c.include_regex:
                    self._c.include(regex)
            del self._modules[module]

    def to_json_dict(self):
        rc = self._c.reduction_config
        return {
            "name": self.name,
            "include_regex": self.include_regex,
            "tensor_names": sorted(self.tensor_names),
            "reduction_config": None if rc is None else {
                "save_raw_tensor": rc["save_raw_tensor"],
                "reductions": _load_core().reductions_string(rc),
                "save_shape": rc["save_shape"],
            },
            "save_config": self._c.save_config,
            "save_histogram": self.save_histogram,
        }
