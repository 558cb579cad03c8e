"""Shared by the examples: command line, the hook, and a summary of what was captured."""

import argparse
import importlib.util
import os
import sys

# trainscope as installed (`pip install .`); when it is not installed, the source tree's python/
# package, where a development build puts the extension.
if importlib.util.find_spec("trainscope") is None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))

import trainscope.pytorch as ts  # noqa: E402


def parse_args(description, epochs=5):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", required=True, help="trial folder to write (must be new)")
    ap.add_argument("--epochs", type=int, default=epochs)
    ap.add_argument("--save-interval", type=int, default=10, help="steps between saved steps")
    ap.add_argument("--quiet", action="store_true", help="no summary at the end")
    return ap.parse_args()


def make_hook(args, extra_collections=()):
    """A hook saving weights, biases, gradients (with reductions) and losses every
    --save-interval steps, plus `extra_collections` [(name, regex)]."""
    hook = ts.Hook(
        out_dir=args.out,
        save_config=ts.SaveConfig(save_interval=args.save_interval),
        reduction_config=ts.ReductionConfig(reductions=["mean", "min", "max"], norms=["l2"],
                                            save_raw_tensor=True),
        include_collections=["weights", "biases", "gradients", "losses"]
        + [name for name, _ in extra_collections],
    )
    for name, regex in extra_collections:
        hook.get_collection(name).include(regex)
    return hook


def summarize(out_dir):
    """Prints what the trial holds: steps per mode, tensors, the loss curve."""
    trial = ts.create_trial(out_dir)
    train = trial.steps(mode=ts.modes.TRAIN)
    evals = trial.steps(mode=ts.modes.EVAL)
    print(f"\ntrial {out_dir}: {len(trial.steps())} saved steps "
          f"(TRAIN {train[:3]}...{train[-1:]}, EVAL {evals[:3]}...)")
    names = trial.tensor_names()
    print(f"{len(names)} tensors, e.g. " + ", ".join(names[:6]) + ", ...")
    for coll in ("weights", "gradients", "losses"):
        print(f"  collection {coll}: {len(trial.tensor_names(collection=coll))} tensors")
    loss_names = trial.tensor_names(collection="losses")
    if loss_names:
        t = trial.tensor(loss_names[0])
        curve = [(s, float(t.value(s, mode=ts.modes.TRAIN))) for s in t.steps(mode=ts.modes.TRAIN)]
        print(f"  {loss_names[0]} (TRAIN): " + ", ".join(f"{s}: {v:.3f}" for s, v in curve[:8]))
    grads = [n for n in names if n.startswith("gradient/")]
    if grads:
        t = trial.tensor(grads[0])
        s = t.steps()[-1]
        print(f"  {grads[0]} at step {s}: mean {t.reduction_value(s, 'mean'):.3g}, "
              f"l2 {t.reduction_value(s, 'l2'):.3g}")
