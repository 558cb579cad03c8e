"""Reads a trial with smdebug's reader or trainscope's and prints it as JSON.

    python read_trial.py <smdebug|trainscope> <trial_dir>

Output: {"steps": {mode: [...]}, "tensors": {name: {"steps": {mode: [...]},
"values": {step: nested list}, "reductions": {step: {reduction: value}}}}}
(values at GLOBAL steps; reductions as saved by the hook).
"""

import json
import sys

which, path = sys.argv[1], sys.argv[2]
if which == "smdebug":
    from smdebug.trials import create_trial
    from smdebug import modes
else:
    from trainscope import create_trial, modes

trial = create_trial(path)
mode_list = [modes.GLOBAL, modes.TRAIN, modes.EVAL]
out = {"steps": {m.name: list(trial.steps(mode=m)) for m in mode_list}, "tensors": {}}
for name in trial.tensor_names():
    t = trial.tensor(name)
    entry = {"steps": {m.name: list(t.steps(mode=m)) for m in mode_list}, "values": {},
             "reductions": {}}
    for step in t.steps():
        try:
            entry["values"][str(step)] = t.value(step).tolist()
        except Exception as e:  # reductions only
            entry["values"][str(step)] = type(e).__name__
        reds = {}
        for red in ("min", "max", "mean", "l1", "l2"):
            for abs_ in (False, True):
                try:
                    reds[("abs_" if abs_ else "") + red] = float(
                        t.reduction_value(step, red, abs=abs_))
                except Exception:
                    pass
        entry["reductions"][str(step)] = reds
    out["tensors"][name] = entry
print(json.dumps(out))
