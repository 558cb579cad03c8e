"""smdebug.core.tensor."""

from trainscope.modes import StepState  # noqa: F401
from trainscope.tensor import Tensor  # noqa: F401
