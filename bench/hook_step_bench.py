#!/usr/bin/env python
"""The Python hook's cost per training step on a small model, where naming tensors matters most.

Trains a small MLP (32-64-64-64-10, ReLUs, batch 16, SGD, CPU, one thread) for --steps steps
with trainscope.pytorch's hook, --repeats times in this process (a new hook and trial each
time), and prints the median seconds per step, wall-clock and CPU time of this process (all its
threads: the CPU time is the steadier figure on a busy machine). Every step is a saving step, so
each step names every parameter, gradient, module input and output and hands it to the C++ hook:

  losses      the default collections (losses): most tensors are offered and not saved
  save_all    save_all, one reduction (mean) per tensor, no raw values

Compare two builds by running it under each (e.g. PYTHONPATH=<overlay>):

    python bench/hook_step_bench.py [--steps 2000] [--repeats 5] [--config losses|save_all]
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time

import torch


def run_once(config, steps, tmp):
    import trainscope.pytorch as ts

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    crit = torch.nn.CrossEntropyLoss()
    kw = {"save_config": ts.SaveConfig(save_interval=1), "quiet": True}
    if config == "save_all":
        kw.update(save_all=True, reduction_config=ts.ReductionConfig(reductions=["mean"]))
    hook = ts.Hook(out_dir=tmp, **kw)
    hook.register_module(model)
    hook.register_loss(crit)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(16, 32, generator=g), torch.randint(0, 10, (16,), generator=g))
               for _ in range(16)]
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(steps):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
    hook.close()
    return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--config", choices=["losses", "save_all"], default="losses")
    args = ap.parse_args()
    torch.set_num_threads(1)
    runs = []
    for _ in range(args.repeats):
        tmp = tempfile.mkdtemp(prefix="ts_step_bench_")
        try:
            runs.append(run_once(args.config, args.steps, tmp + "/trial"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"config": args.config, "steps": args.steps,
                      "median_s_per_step": statistics.median(r[0] for r in runs),
                      "median_cpu_s_per_step": statistics.median(r[1] for r in runs),
                      "runs": runs}))


if __name__ == "__main__":
    main()
