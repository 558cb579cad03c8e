#!/usr/bin/env python
"""Where a short step's cost goes under `trainscope run --rules default`, inside the training.

    OMP_NUM_THREADS=1 python bench/step_anatomy.py [--steps 15000] [--rounds 3] [--json]

bench/run_cost.py times whole runs; on a training of short steps (its MLP, 0.3 ms a step) their
spread on this machine is a few percent. This one times every step of the MLP's loop
(bench/run_cost_train.py's model, data and optimizer) in a fresh process per variant, the
variants interleaved, with the hook and profiler configurations that `trainscope run --rules
default` writes (made once, by `trainscope run` on a command that does nothing, and pointed at a
new trial folder per run). No rule worker or sampler runs beside it: this is the training
process's own cost. Variants:

  plain     no trainscope
  pre-hook  plain with a forward pre-hook on the model that returns at once: what PyTorch's
            dispatch of any module hook costs a step, the floor of a step boundary made by
            a forward pre-hook (smdebug's, and the hook's without hook.step())
  floor     pre-hook plus global optimizer pre- and post-hooks that return at once (the
            profiler's Optimizer span and the automatic mode need them)
  hook      smdebug's two lines (the hook from the configuration, the model and loss registered)
  unprofiled  hook without the profiler's configuration (no framework timeline): hook less this
            is what the framework profile (a Step span a step, the phases' spans now and then)
            costs the training
  auto      the unmodified script under the automatic mode

For hook and auto each step is classified after it ran: a phase step (the profiler records its
Forward, Backward and Optimizer spans: one per PhaseMinIntervalInMilliseconds), the step after
one (its callbacks are removed at that boundary), a saving step (the rules' collections, at
least min_save_period_ms apart), or a quiet step (none of these). The table gives each kind's
median and count, and what it adds per step on average: (median - quiet median) x count / steps;
the quiet step's own extra is its median less plain's. Medians over rounds of the per-round
medians.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from run_cost import trainscope_cmd  # bench/ is this script's folder: first on sys.path

VARIANTS = ("plain", "pre-hook", "floor", "hook", "unprofiled", "auto")
HOOKED = ("hook", "unprofiled", "auto")
WARMUP = 1000  # steps left out of the figures (the first saving steps, the schedule's stretch)


def run_configs(tmp):
    """The configuration files and environment `trainscope run --rules default` gives a
    training: {file name: text} and the environment, with the run's folder as "{OUT}"."""
    out = os.path.join(tmp, "configs")
    probe = ("import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
             "if k.startswith(('TRAINSCOPE', 'SMDEBUG'))}))")
    p = subprocess.run([trainscope_cmd(), "run", "--out", out, "--rules", "default", "--",
                        sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    # The rules find no step in that run and end in Error (exit status 1): only the files count.
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if not lines or not os.path.exists(os.path.join(out, ".trainscope", "hook_config.json")):
        sys.exit(f"step_anatomy: trainscope run failed ({p.returncode}): {p.stderr[-2000:]}")
    env = {k: v.replace(out, "{OUT}") for k, v in json.loads(lines[-1]).items()}
    files = {}
    for name in ("hook_config.json", "profiler_config.json"):
        with open(os.path.join(out, ".trainscope", name)) as f:
            files[name] = f.read().replace(out, "{OUT}")
    return files, env


def child_env(variant, files, env, trial):
    e = dict(os.environ, OMP_NUM_THREADS="1")
    for k in list(e):
        if k.startswith(("TRAINSCOPE", "SMDEBUG")):
            del e[k]
    if variant in HOOKED:
        os.makedirs(os.path.join(trial, ".trainscope"))
        for name, text in files.items():
            with open(os.path.join(trial, ".trainscope", name), "w") as f:
                f.write(text.replace("{OUT}", trial))
        e.update({k: v.replace("{OUT}", trial) for k, v in env.items()})
        if variant != "auto":
            e.pop("TRAINSCOPE_AUTO", None)
        if variant == "unprofiled":
            e.pop("TRAINSCOPE_PROFILER_CONFIG", None)
    return e


def child(variant, steps):
    """One run in this process: prints {"times": [ns...], "kinds": "q.p.a.s..."}."""
    if variant == "auto":
        import trainscope.auto

        trainscope.auto.install()
    import torch
    from run_cost_train import batches
    from torch import nn

    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    if variant in ("pre-hook", "floor"):
        model.register_forward_pre_hook(lambda module, args: None)
    if variant == "floor":
        from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                           register_optimizer_step_pre_hook)

        register_optimizer_step_pre_hook(lambda o, a, k: None)
        register_optimizer_step_post_hook(lambda o, a, k: None)
    hook = None
    if variant in ("hook", "unprofiled"):
        import trainscope.pytorch as ts

        hook = ts.Hook.create_from_json_file()
        hook.register_module(model)
        hook.register_loss(loss_fn)
    session = None
    if variant == "auto":
        from trainscope.auto import _capture

        session = _capture.current()
    times, kinds = [], []
    clock = time.perf_counter_ns
    model.train()
    for x, y in batches("mlp", steps, gen):
        t0 = clock()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        times.append(clock() - t0)
        h = hook if session is None else session.hook
        if h is None:
            kinds.append("q")
            continue
        prof = h._prof
        if h._saving:
            kinds.append("s")
        elif prof is not None and prof._phases_on:
            kinds.append("p")
        else:
            kinds.append("q")
    if hook is not None:
        hook.close()
    print(json.dumps({"times": times, "kinds": "".join(kinds)}))


def kinds_of(kinds):
    """Each step's kind, with 'a' for a quiet step right after a phase step."""
    out = list(kinds)
    for i in range(1, len(out)):
        if out[i] == "q" and kinds[i - 1] == "p":
            out[i] = "a"
    return out


def measure(variant, steps, files, env, tmp, n):
    trial = os.path.join(tmp, f"trial-{variant}-{n}")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", variant,
                        "--steps", str(steps)], capture_output=True, text=True,
                       env=child_env(variant, files, env, trial), timeout=1800)
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.exit(f"step_anatomy: {variant} failed ({p.returncode}): {p.stderr[-3000:]}")
    d = json.loads(lines[-1])
    shutil.rmtree(trial, ignore_errors=True)
    times = d["times"][WARMUP:]
    kinds = kinds_of(d["kinds"])[WARMUP:]
    by = {}
    for t, k in zip(times, kinds):
        by.setdefault(k, []).append(t / 1e3)
    return {"median": statistics.median(t / 1e3 for t in times),
            "mean": statistics.fmean(t / 1e3 for t in times),
            "steps": len(times),
            "kinds": {k: {"median": statistics.median(v), "count": len(v)} for k, v in by.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=15000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.steps)
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"step_anatomy: unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    if args.steps <= WARMUP:
        sys.exit(f"step_anatomy: --steps must be more than {WARMUP} (the warm-up left out)")
    tmp = tempfile.mkdtemp(prefix="ts_anatomy_")
    try:
        files, env = run_configs(tmp)
        rounds = {v: [] for v in variants}
        for r in range(args.rounds):
            for i in range(len(variants)):  # a rotated order each round
                v = variants[(i + r) % len(variants)]
                m = measure(v, args.steps, files, env, tmp, r)
                rounds[v].append(m)
                print(f"  round {r + 1}/{args.rounds} {v:8s}: median step {m['median']:7.1f} us",
                      file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(rounds, args)


def med(values):
    return statistics.median(values) if values else float("nan")


def report(rounds, args):
    summary = {}
    for v, ms in rounds.items():
        s = {"median_us": med([m["median"] for m in ms]), "mean_us": med([m["mean"] for m in ms])}
        kinds = {}
        for k in "qpas":
            got = [m["kinds"][k] for m in ms if k in m["kinds"]]
            if got:
                kinds[k] = {"median_us": med([g["median"] for g in got]),
                            "per_1000_steps": med([g["count"] * 1000 / m["steps"]
                                                   for g, m in zip(got, ms)])}
        s["kinds"] = kinds
        summary[v] = s
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    plain = summary.get("plain", {}).get("median_us")
    print(f"\nThe MLP's step in the training process, {args.steps} steps, medians of {args.rounds} "
          "rounds (us; `trainscope run --rules default`'s configurations, no rule worker beside)")
    print(f"{'variant':10s} {'median':>8s} {'mean':>8s} {'+plain':>7s}")
    for v, s in summary.items():
        extra = f"{s['median_us'] - plain:+7.1f}" if plain is not None else ""
        print(f"{v:10s} {s['median_us']:8.1f} {s['mean_us']:8.1f} {extra}")
    names = {"q": "quiet step", "p": "phase step", "a": "after a phase step", "s": "saving step"}
    for v in HOOKED:
        s = summary.get(v)
        if s is None or "q" not in s["kinds"]:
            continue
        q = s["kinds"]["q"]["median_us"]
        print(f"\n{v}: {'kind':19s} {'median':>8s} {'per 1000 steps':>15s} {'adds us/step':>13s}")
        for k in "qpas":
            if k not in s["kinds"]:
                continue
            d = s["kinds"][k]
            if k == "q":
                adds = q - plain if plain is not None else float("nan")
            else:
                adds = (d["median_us"] - q) * d["per_1000_steps"] / 1000
            print(f"{'':{len(v) + 2}s}{names[k]:19s} {d['median_us']:8.1f} "
                  f"{d['per_1000_steps']:15.1f} {adds:13.2f}")
    if plain is not None and "floor" in summary:
        print(f"\nfloor: PyTorch's dispatch of a module forward pre-hook and two global optimizer "
              f"hooks that do nothing, {summary['floor']['median_us'] - plain:+.1f} us a step")


if __name__ == "__main__":
    main()
