#!/usr/bin/env python
"""What a short step costs under `trainscope run --rules default`, in instructions (callgrind).

    OMP_NUM_THREADS=1 python bench/step_instructions.py [--steps 1000,3000] [--variants ...]

bench/step_anatomy.py times the MLP's step; on a shared machine its medians move by 10 us
between runs of the same code. Instruction counts do not: this runs step_anatomy's child (the
same model, data, configurations and variants) under `valgrind --tool=callgrind` for two step
counts and prints, per variant, the instructions of one step (the difference between the two
runs over the difference in steps: start-up and the end cancel out) and what it adds to plain's.
All threads count (the writer and timeline threads too): the work a step makes, wherever it
runs. Each run takes minutes (valgrind runs the training about 50 times slower); the runs go
two at a time.

What depends on time is not what it is natively: a step 50 times longer records its phases
(PhaseMinIntervalInMilliseconds) and saves the rules' collections (min_save_period_ms) on far more
of its steps than natively. The table gives, per variant, how many of the measured steps were
phase steps and saving steps (per 1000; natively about 16 and 10, bench/step_anatomy.py), so a
figure is read with its mix.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from step_anatomy import VARIANTS, child_env, run_configs  # bench/ is first on sys.path

ANATOMY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "step_anatomy.py")


def instructions(variant, steps, files, env, tmp):
    """(total instructions (Ir) of one run of `steps` steps, its steps' kinds: step_anatomy's
    "q", "p", "s" letters)."""
    trial = os.path.join(tmp, f"trial-{variant}-{steps}")
    out = os.path.join(tmp, f"callgrind-{variant}-{steps}.out")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
           sys.executable, ANATOMY, "--child", variant, "--steps", str(steps)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                       env=child_env(variant, files, env, trial))
    if p.returncode != 0:
        sys.exit(f"step_instructions: {variant} ({steps} steps) failed ({p.returncode}): "
                 f"{p.stderr[-3000:]}")
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    kinds = json.loads(lines[-1])["kinds"] if lines else ""
    with open(out) as f:
        for line in f:
            m = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if m:
                return int(m.group(1)), kinds
    sys.exit(f"step_instructions: no totals in {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", default="1000,3000", help="the two step counts")
    ap.add_argument("--variants", default="plain,hook,unprofiled,auto")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("step_instructions: valgrind is not installed (apt-get install valgrind)")
    lo, hi = (int(s) for s in args.steps.split(","))
    if not 0 < lo < hi:
        sys.exit("step_instructions: --steps takes two counts, the smaller first")
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"step_instructions: unknown variant {v!r}; choose from "
                     f"{', '.join(VARIANTS)}")
    tmp = tempfile.mkdtemp(prefix="ts_instructions_")
    try:
        files, env = run_configs(tmp)
        runs = [(v, n) for v in variants for n in (lo, hi)]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {r: pool.submit(instructions, r[0], r[1], files, env, tmp) for r in runs}
            for r, f in futures.items():
                print(f"  {r[0]:10s} {r[1]:6d} steps: {f.result()[0]:,} instructions",
                      file=sys.stderr, flush=True)
            totals = {r: f.result() for r, f in futures.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_step = {v: (totals[(v, hi)][0] - totals[(v, lo)][0]) / (hi - lo) for v in variants}
    # The kinds of the steps the difference measures: the longer run's steps lo..hi-1.
    mix = {}
    for v in variants:
        measured = totals[(v, hi)][1][lo:hi]
        mix[v] = {k: 1000 * measured.count(k) / max(1, len(measured)) for k in "ps"}
    if args.json:
        print(json.dumps({"steps": [lo, hi], "per_step": per_step, "per_1000_steps": mix},
                         indent=1))
        return
    plain = per_step.get("plain")
    print(f"\nInstructions per MLP step (callgrind, all threads; runs of {lo} and {hi} steps)")
    print(f"{'variant':10s} {'per step':>12s} {'+plain':>10s} {'ratio':>7s} "
          f"{'phase steps':>12s} {'saving steps':>13s}")
    for v, n in per_step.items():
        extra = f"{n - plain:+10,.0f} {n / plain:7.3f}" if plain else f"{'':18s}"
        print(f"{v:10s} {n:12,.0f} {extra} {mix[v]['p']:12.1f} {mix[v]['s']:13.1f}")
    print("(phase and saving steps per 1000 measured steps; natively about 16 and 10)")


if __name__ == "__main__":
    main()
