"""smdebug.pytorch.hook: trainscope's PyTorch Hook."""

from trainscope.pytorch.hook import Hook

__all__ = ["Hook"]
