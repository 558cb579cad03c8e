"""Tensor names for the Python hook and the automatic mode, made by the core's one implementation
(trainscope/tensor_names.h through _core: parameter_name, gradient_name, input_name,
output_name, scalar_name, user_path) and cached here, so that a training step never calls into
C++ for a name: a parameter's names are made when its module is registered, a module's (or a
recorded value's) i-th input and output name the first time it is seen, then looked up.
"""

from .._native import load as _load_core


class IndexedNames:
    """"<base>_output_<i>" (or "_input_") for i = 0, 1, ...: each made once by the core.
    `loss`: the outputs of a loss module or values given to record_tensor_value (what the
    closure record lists, _closures.py)."""

    __slots__ = ("names", "loss", "_make", "_base")

    def __init__(self, make, base):
        self.names = []
        self.loss = False
        self._make = make
        self._base = base

    def at(self, i):
        names = self.names
        if i < len(names):
            return names[i]
        make, base = self._make, self._base
        while len(names) <= i:
            names.append(make(base, len(names)))
        return names[i]


class TensorNames:
    """The names of one hook's tensors. Thread-safety: as the hook (the training thread)."""

    def __init__(self):
        self._core = _load_core()
        self.default_loss = self._core.DEFAULT_LOSS_NAME  # "loss": loss_output_<i>
        self._inputs = {}  # base name -> IndexedNames
        self._outputs = {}

    def parameter(self, module, path):
        """'Net_fc1.weight' for parameter `path` (FSDP's segments dropped) of module `module`."""
        core = self._core
        return core.parameter_name(module, core.user_path(path))

    def user_path(self, path):
        return self._core.user_path(path)

    def gradient(self, parameter):
        return self._core.gradient_name(parameter)

    def scalar(self, name):
        return self._core.scalar_name(name)

    def inputs(self, base):
        """The IndexedNames of base's inputs ("<base>_input_<i>")."""
        names = self._inputs.get(base)
        if names is None:
            names = self._inputs[base] = IndexedNames(self._core.input_name, base)
        return names

    def outputs(self, base):
        """The IndexedNames of base's outputs ("<base>_output_<i>"): a module's outputs, a
        loss module's, a value recorded under that name."""
        names = self._outputs.get(base)
        if names is None:
            names = self._outputs[base] = IndexedNames(self._core.output_name, base)
        return names
