"""smdebug.pytorch.hook: trainscope's PyTorch Hook."""

from trainscope.pytorch.hook import Hook
from trainscope.pytorch.singleton import get_hook

__all__ = ["Hook", "get_hook"]
