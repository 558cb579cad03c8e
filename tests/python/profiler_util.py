"""Helpers of the profiler tests: run the profiled training script and read its files."""

import glob
import json
import os
import pathlib
import shutil
import sys

from hook_util import run_script

REPO = pathlib.Path(__file__).resolve().parents[2]


def trainscope_cli():
    """The `trainscope` command: $TRAINSCOPE_BUILD_DIR/bin (else <repo>/build/bin), else the one
    installed beside this Python; None when there is none."""
    build = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
    exe = build / "bin" / "trainscope"
    if exe.exists():
        return str(exe)
    return shutil.which("trainscope", path=os.path.dirname(sys.executable))


def train(out_dir, **opts):
    """Runs hook_scripts/train_profiled.py; returns its JSON summary (spans, paths, counts)."""
    p = run_script("train_profiled.py", out_dir, json.dumps(opts), timeout=300)
    return json.loads(p.stdout.strip().splitlines()[-1])


def timeline_files(trial):
    return sorted(glob.glob(os.path.join(str(trial), "framework", "pevents", "*", "*.json")))


def raw_events(trial):
    """Every event of the trial's framework timeline files, with its file's phase names and
    absolute times: dicts with name, phase (the process_name of its pid), ph, start_us,
    dur_us, args."""
    out = []
    for path in timeline_files(trial):
        with open(path) as f:
            doc = json.load(f)  # every finished file is a complete JSON array
        t0 = None
        phases = {}
        for e in doc:
            if e.get("ph") == "M" and e["name"] == "process_name":
                if "start_time_since_epoch_in_micros" in e["args"]:
                    t0 = e["args"]["start_time_since_epoch_in_micros"]
                else:
                    phases[e["pid"]] = e["args"]["name"]
        assert t0 is not None, path
        for e in doc:
            if e.get("ph") in ("X", "i"):
                out.append({"name": e["name"], "phase": phases[e["pid"]], "ph": e["ph"],
                            "start_us": t0 + e["ts"], "dur_us": e.get("dur", 0),
                            "args": e.get("args", {}), "tid": e["tid"]})
    out.sort(key=lambda e: e["start_us"])
    return out


def step_of(e):
    s = e["args"].get("step_num")
    return None if s is None else int(s)


def inside(inner, outer, slack_us=1):
    return (inner["start_us"] >= outer["start_us"] - slack_us
            and inner["start_us"] + inner["dur_us"] <= outer["start_us"] + outer["dur_us"]
            + slack_us)
