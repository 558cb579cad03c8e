"""Automatic mode ("zero code change"): capture a PyTorch training that creates no hook.

    trainscope run --rules default -- python train.py     # on by default under `trainscope run`
    python -m trainscope.auto train.py [args...]          # the same without the supervisor
    TRAINSCOPE_AUTO=1 (with the boot folder on PYTHONPATH) # for launchers that start Python
                                                           # themselves (torchrun): see --env

What it does, with no line of the script changed (trainscope.auto._capture has the details):

- the model is found at the first ``optimizer.step()``: the top-level modules that own the
  parameters an optimizer steps (one per model: a GAN's generator and discriminator are two),
  registered to a trainscope hook made from the JSON configuration `trainscope run` writes
  (``TRAINSCOPE_CONFIG``), so names and collections are smdebug's;
- a training step ends when every optimizer has stepped once (gradient accumulation and several
  optimizers give one step); gradients are the ones the optimizer applies (read at its step,
  after GradScaler's unscaling; a step the scaler skips is not seen);
- losses: the tensor ``backward()`` is called on (``loss_output_<i>``) and the outputs of the
  ``torch.nn`` loss modules alive when the model is found;
- the mode: forward passes of a model in ``eval()`` mode or under ``inference_mode()`` (and
  ``no_grad()`` when there is one model) between training steps are EVAL steps;
- a script that makes its own hook before its first optimizer step is left alone.

Nothing here imports torch: :func:`install` waits for the script's own ``import torch``.
"""

import os
import sys

ENV_VAR = "TRAINSCOPE_AUTO"
BOOT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "boot")

__all__ = ["BOOT_DIR", "ENV_VAR", "enabled_by_env", "install", "installed", "session"]

_installed = False


def enabled_by_env(environ=None):
    """True when TRAINSCOPE_AUTO asks for the automatic mode (1, true, on, yes)."""
    value = (environ if environ is not None else os.environ).get(ENV_VAR, "")
    return value.strip().lower() in ("1", "true", "on", "yes")


def installed():
    """True once :func:`install` ran in this process."""
    return _installed


def session():
    """The automatic-mode session of this process (trainscope.auto._capture.AutoSession), or
    None before torch is imported or when the mode is not installed."""
    if not _installed or "torch" not in sys.modules:
        return None
    from . import _capture

    return _capture.current()


def install():
    """Turns the automatic mode on in this process: now if torch is imported already, else
    right after the script imports it. Idempotent; never raises (the training must run even
    if trainscope cannot watch it: the reason is printed once)."""
    global _installed
    if _installed:
        return
    _installed = True
    try:
        if "torch" in sys.modules and hasattr(sys.modules["torch"], "nn"):
            _start()
        else:
            from ._watch import call_after_import

            call_after_import("torch", _start)
    except Exception as e:  # fail open
        _say(f"automatic mode off: {type(e).__name__}: {e}")


def _start():
    try:
        from . import _capture

        _capture.start()
    except Exception as e:  # fail open
        _say(f"automatic mode off: {type(e).__name__}: {e}")


def _say(text):
    print(f"trainscope: {text}", file=sys.stderr, flush=True)
