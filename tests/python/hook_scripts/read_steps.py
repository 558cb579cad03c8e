"""Prints, as one JSON line, the steps at which a trial holds a tensor and a fingerprint of each
value (the kill tests compare trainscope's reader with smdebug's on them).

    python read_steps.py <smdebug|trainscope> <trial_dir> <tensor>
    python read_steps.py <smdebug|trainscope> - <tensor>     one trial folder a line on stdin

Output: {"steps": [...], "values": {step: [first, last, sum, size]}} or {"error": "..."}.
"""

import json
import sys

which, path, name = sys.argv[1], sys.argv[2], sys.argv[3]
if which == "smdebug":
    from smdebug.trials import create_trial
else:
    from trainscope import create_trial


def read(trial_dir):
    try:
        trial = create_trial(trial_dir)
        steps = [int(s) for s in trial.steps()]
        out = {"steps": steps, "values": {}}
        if not steps:
            return out
        t = trial.tensor(name)
        for s in t.steps():
            v = t.value(s).ravel()
            out["values"][str(s)] = [float(v[0]), float(v[-1]), float(v.sum(dtype="float64")),
                                     int(v.size)]
        return out
    except Exception as e:  # reported to the caller, which fails on it
        return {"error": f"{type(e).__name__}: {e}"}


if path == "-":
    for line in sys.stdin:
        print(json.dumps(read(line.strip())), flush=True)
else:
    print(json.dumps(read(path)))
