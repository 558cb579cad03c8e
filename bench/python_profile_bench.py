#!/usr/bin/env python
"""Cost of Python profiling (PythonProfilingConfig) on the steps it profiles, on the CPU.

A small training (an MLP 64-H-10 with H = --hidden, default 128, batch --batch, default 32,
SGD, through a DataLoader; one intra-op thread) runs --steps steps with the trainscope hook
and its profiler on, three ways:

  spans         the profiler's spans only, no Python profiling (the baseline)
  cprofile      cProfile on steps [--start, --start + --num), one stats folder per step
  pyinstrument  the same window with pyinstrument (skipped when it is not installed)

For each, the median time of the window's steps (which includes stopping the profiler and
writing the step's stats at the next boundary) as steps per second, and the stats written per
step; and the fixed cost of one interval (start, stop and write an interval that profiles
nothing). On a shared machine the noise only adds time, so each number is the best of --rounds
rounds, the configurations interleaved round by round.

    python bench/python_profile_bench.py [--rounds 5] [--steps 60] [--start 10] [--num 40]
        [--hidden 128] [--batch 32] [--json]
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("trainscope") is None:  # not installed: the tree's development build
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import trainscope.pytorch as ts  # noqa: E402
from trainscope.profiler import (FrameworkProfile, ProfilerConfig,  # noqa: E402
                                 PythonProfilingConfig)


def run(tmp, kind, steps, start, num, hidden=128, batch=32):
    """Median seconds of the window's steps, and bytes of stats written per profiled step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = batch * (steps + 1)
    data = TensorDataset(torch.randn(n, 64), torch.randint(0, 10, (n,)))
    python = None
    if kind != "spans":
        python = PythonProfilingConfig(start_step=start, num_steps=num, python_profiler=kind)
    config = ProfilerConfig(start_system_monitor=False, framework_profile_params=FrameworkProfile(
        python_profiling_config=python))
    out = os.path.join(tmp, kind)
    hook = ts.Hook(out_dir=out, profiler_config=config)
    hook.register_module(model)
    ends = []
    for i, (x, y) in enumerate(DataLoader(data, batch_size=batch)):
        if i == steps:
            break
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ends.append(time.perf_counter())
    hook.close()
    # step k runs from its boundary (its forward) to the next: ends[k] - ends[k - 1] holds the
    # boundary of step k, where step k-1's stats are written, so the window is steps
    # start+1 .. start+num.
    window = [ends[k] - ends[k - 1] for k in range(start + 1, min(start + num + 1, len(ends)))]
    size = 0
    folders = 0
    for root, _, files in os.walk(os.path.join(out, "framework", "pytorch")):
        if files:
            folders += 1
            size += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return statistics.median(window), (size / folders if folders else 0), folders


def empty_interval(tmp, kind, n=50):
    """Seconds to start and stop an interval that profiles nothing and write its folder: the
    fixed cost the hook adds to each profiled step."""
    from trainscope.profiler.python_profiler import (PyinstrumentPythonProfiler, StepPhase,
                                                     cProfilePythonProfiler)

    if kind == "cprofile":
        prof = cProfilePythonProfiler(os.path.join(tmp, "empty"), "pytorch", node_id="n")
    else:
        prof = PyinstrumentPythonProfiler(os.path.join(tmp, "empty"), "pytorch", node_id="n")
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        prof.start_profiling(StepPhase.STEP_START, 1, i)
        prof.stop_profiling(StepPhase.STEP_END, 1, i)
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--start", type=int, default=10)
    ap.add_argument("--num", type=int, default=40)
    ap.add_argument("--hidden", type=int, default=128, help="the MLP's hidden width")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    kinds = ["spans", "cprofile"]
    if importlib.util.find_spec("pyinstrument") is not None:
        kinds.append("pyinstrument")
    best = {k: None for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for kind in kinds:
                med, size, folders = run(os.path.join(tmp, str(r)), kind, a.steps, a.start, a.num,
                                         a.hidden, a.batch)
                if best[kind] is None or med < best[kind][0]:
                    best[kind] = (med, size, folders)
    res = {}
    for kind, (med, size, folders) in best.items():
        res[f"{kind}_step_ms"] = med * 1e3
        res[f"{kind}_steps_per_s"] = 1 / med
        if kind != "spans":
            res[f"{kind}_stats_bytes_per_step"] = size
            res[f"{kind}_stats_folders"] = folders
            res[f"{kind}_slowdown"] = med / best["spans"][0]
            with tempfile.TemporaryDirectory() as tmp:
                res[f"{kind}_empty_interval_ms"] = empty_interval(tmp, kind) * 1e3
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:32s} {v:12.3f}")


if __name__ == "__main__":
    main()
