#!/usr/bin/env python
"""Cost of the hook's framework profiling (trainscope.profiler), on the CPU.

Prints, in microseconds:

  record        one TimelineWriter.record() call from Python (the C++ append, no I/O)
  user_span     one ``with hook.profile("x"): pass`` (two clock reads, the record, the kept copy)
  step_*        one training step of a tiny model (Linear 8-8, batch 4; the work is so small that
                the hook's own cost shows) through a DataLoader, forward, backward, SGD step:
                  step_none      no hook
                  step_off       trainscope hook, profiler off (the default without a config)
                  step_spans     profiler on: step, forward, backward, optimizer and data-loader
                                 spans every step, no window open
  and the differences off-none and spans-none: the hook's cost per step.

On a shared machine the noise only ever adds time, so each number is the minimum over --rounds
rounds (a round: --spans calls, or the median step of --steps steps), and the step
configurations are interleaved round by round.

    python bench/profiler_span_bench.py [--rounds 7] [--steps 2000] [--spans 100000] [--json]
"""

import argparse
import json
import importlib.util
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
from trainscope import _core  # noqa: E402
from trainscope.profiler import ProfilerConfig  # noqa: E402


def per_call_us(fn, n, rounds):
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(n)
        out.append((time.perf_counter() - t0) / n * 1e6)
    return min(out)


def bench_record(tmp, n, rounds):
    w = _core.TimelineWriter(os.path.join(tmp, "record"))
    now = time.time_ns() // 1000

    def loop(k):
        rec = w.record
        for i in range(k):
            rec("UserSpan", "x", now + i, 1, 3)

    r = per_call_us(loop, n, rounds)
    w.close()
    return r


def bench_user_span(tmp, n, rounds):
    hook = ts.Hook(out_dir=os.path.join(tmp, "span"),
                   profiler_config=ProfilerConfig(start_system_monitor=False))

    def loop(k):
        prof = hook.profile
        for _ in range(k):
            with prof("x"):
                pass

    def empty(k):
        for _ in range(k):
            pass

    r = per_call_us(loop, n, rounds) - per_call_us(empty, n, rounds)
    hook.close()
    return r


def bench_steps(tmp, kind, steps, rounds):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(4 * steps, 8))
    hook = None
    if kind == "off":
        hook = ts.Hook(out_dir=os.path.join(tmp, kind))
    elif kind == "spans":
        hook = ts.Hook(out_dir=os.path.join(tmp, kind),
                       profiler_config=ProfilerConfig(start_system_monitor=False))
    if hook is not None:
        hook.register_module(model)
        assert (hook._prof is None) == (kind == "off")
    times = []
    for _ in range(rounds):
        loader = DataLoader(data, batch_size=4)
        per_step = []
        t0 = time.perf_counter()
        for (x,) in loader:
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            t1 = time.perf_counter()
            per_step.append(t1 - t0)
            t0 = t1
        times.append(statistics.median(per_step) * 1e6)
    if hook is not None:
        hook.close()
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--spans", type=int, default=100000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        res = {
            "record_us": bench_record(tmp, a.spans, a.rounds),
            "user_span_us": bench_user_span(tmp, a.spans, a.rounds),
        }
        # interleave the step configurations to spread a shared machine's noise
        acc = {"none": [], "off": [], "spans": []}
        for r in range(a.rounds):
            for kind in acc:
                acc[kind].append(bench_steps(os.path.join(tmp, f"{r}"), kind, a.steps, 1))
        for kind, v in acc.items():
            res[f"step_{kind}_us"] = min(v)
        res["hook_off_cost_us"] = res["step_off_us"] - res["step_none_us"]
        res["hook_spans_cost_us"] = res["step_spans_us"] - res["step_none_us"]
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:22s} {v:9.2f}")


if __name__ == "__main__":
    main()
