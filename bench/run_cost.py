#!/usr/bin/env python
"""The whole run at the cost of its capture: a training's wall time under `trainscope run`
beside the same training without trainscope, as a user measures it.

    python bench/run_cost.py [--models cnn,lstm,mlp] [--variants hook,auto] [--rounds 3]
                             [--rules default] [--run-args "..."] [--device cuda] [--json]
                             [--tmp DIR]

Trains each model of bench/run_cost_train.py (a CNN, an LSTM language model, an MLP whose step
is about a millisecond) plain and under `trainscope run --rules default`, in two variants:

  hook  the script holds the two-line smdebug-style hook (Hook.create_from_json_file)
  auto  the script is unmodified (no hook): the automatic mode captures it

The runs of a model are interleaved, in a new random order each round, and each ratio is the
median over rounds of (run's wall time / the same round's plain wall time). The wall time is the
whole command's, from start to exit, as a user sees it (the rules' last verdicts included).

After the timed rounds one more run of each (model, variant), not timed, breaks the cost down
by polling /proc every 100 ms: CPU seconds per training step of the training process tree, of
the rule workers, of the system sampler (the supervisor's `ts-sampler` thread) and of the rest
of the supervisor; bytes the trial holds per step (tensors: events/ + index/; profile:
system/ + framework/); and the rules' latency: from the last step's index landing to each rule's
final verdict (`status.json`, finished), median and worst over the rules.

Each round also times a run of --fixed-steps steps (10) plain and in each variant: the run's
fixed cost (trainscope's start and end: the supervisor, the rule workers, the hook's or the
automatic mode's setup, the last verdicts) is the median of (short run - short plain). The rest of
the whole run's extra time, spread over its steps, is the per-step cost; the table gives both,
and the ratio the run would have without its fixed cost.

--run-args adds options to every `trainscope run`, e.g. `--hook-config
bench/run_cost_every_step.json`: gradients saved every step, the schedule --rules default had
before the rules' requests were merged as the union of their steps (a before/after on the
same machine).

--device trains on that device (run_cost_train.py --device): on a GPU the hook's statistics are
computed there and the system sampler reads the GPU through NVML.

Goal (the issue): the wall-time ratio <= 1.05 for each training.
"""

import argparse
import glob
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TRAIN = os.path.join(HERE, "run_cost_train.py")
GOAL = 1.05
TICK = os.sysconf("SC_CLK_TCK")


def trainscope_cmd():
    exe = shutil.which("trainscope", path=os.path.dirname(sys.executable) + os.pathsep +
                       os.environ.get("PATH", ""))
    if not exe:
        sys.exit("run_cost: no `trainscope` command next to this Python or on PATH: "
                 "run scripts/setup.sh, or activate .venv")
    return exe


RUN_ARGS = []  # --run-args, split
TRAIN_ARGS = []  # --device


def command(model, variant, out, rules, steps):
    train = [sys.executable, TRAIN, "--model", model, *TRAIN_ARGS]
    if steps:
        train += ["--steps", str(steps)]
    if variant == "plain":
        return train
    if variant == "hook":
        train.append("--hook")
    return [trainscope_cmd(), "run", "--out", out, "--rules", rules, *RUN_ARGS, "--"] + train


# ---------------------------------------------------------------------------------------------
# /proc accounting


def _stat(path):
    """(ppid, cpu seconds) of a /proc/<pid>[/task/<tid>]/stat, or None if it went away."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


class TreePoller:
    """Polls the process tree under `root` and keeps the last CPU time seen of each process (and
    of the root's threads), classified as training, rules, sampler or supervisor."""

    def __init__(self, root, interval=0.1):
        self.root, self.interval = root, interval
        self.cpu = {}  # key -> (category, seconds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _poll(self):
        children = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                st = _stat(f"/proc/{d}/stat")
                if st:
                    children.setdefault(st[0], []).append(int(d))
        todo, tree = [self.root], []
        while todo:
            p = todo.pop()
            tree.append(p)
            todo.extend(children.get(p, []))
        for pid in tree:
            if pid == self.root:
                tasks = f"/proc/{pid}/task"
                for tid in os.listdir(tasks) if os.path.isdir(tasks) else []:
                    st = _stat(f"/proc/{pid}/task/{tid}/stat")
                    if st:
                        comm = _read(f"/proc/{pid}/task/{tid}/comm").strip()
                        cat = "sampler" if comm == b"ts-sampler" else "supervisor"
                        self.cpu[("t", tid)] = (cat, st[1])
                continue
            st = _stat(f"/proc/{pid}/stat")
            if not st:
                continue
            cat = self.cpu.get(("p", pid), (None,))[0]
            if cat is None or cat == "training":
                # A process that has not exec'd yet shows its parent's command line, and a
                # process that has exited (a zombie until reaped) shows none: only a rule
                # worker's own command line classifies it, and a worker stays one.
                argv = _read(f"/proc/{pid}/cmdline").split(b"\0")
                cat = "rules" if len(argv) > 1 and argv[1] == b"rule-worker" else "training"
            self.cpu[("p", pid)] = (cat, st[1])

    def _run(self):
        while not self._stop.is_set():
            try:
                self._poll()
            except OSError:
                pass
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join()
        out = {"training": 0.0, "rules": 0.0, "sampler": 0.0, "supervisor": 0.0}
        for cat, sec in self.cpu.values():
            out[cat] += sec
        return out


def children_cpu():
    r = os.times()
    return r.children_user + r.children_system


def run_once(model, variant, rules, steps, tmp, breakdown=False):
    out = tempfile.mkdtemp(prefix=f"{model}-{variant}-", dir=tmp)
    os.rmdir(out)  # trainscope run makes it
    cmd = command(model, variant, out, rules, steps)
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    poller = TreePoller(proc.pid) if breakdown else None
    output, _ = proc.communicate()
    wall = time.perf_counter() - t0
    cpu = children_cpu() - cpu0
    if variant == "plain" and proc.returncode != 0 or proc.returncode not in (0, 3, 6):
        sys.exit(f"run_cost: {' '.join(cmd)} exited {proc.returncode}:\n{output[-3000:]}")
    line = [ln for ln in output.splitlines() if ln.startswith("steps=")]
    nsteps = int(line[-1].split()[0].split("=")[1]) if line else steps
    res = {"wall_s": wall, "cpu_s": cpu, "steps": nsteps, "exit": proc.returncode}
    if proc.returncode in (3, 6):  # a finding or a rule's Error on a healthy training: say which
        res["findings"] = rule_messages(out)
    if breakdown and variant != "plain":
        res["cpu_by_part_s"] = poller.stop()
        res.update(trial_figures(out))
    elif poller:
        poller.stop()
    shutil.rmtree(out, ignore_errors=True)
    return res


def _size(root, parts):
    total = 0
    for part in parts:
        for dirpath, _, files in os.walk(os.path.join(root, part)):
            for f in files:
                try:
                    total += os.lstat(os.path.join(dirpath, f)).st_size
                except OSError:
                    pass
    return total


def rule_statuses(out):
    """The rules' status.json documents of a trial (those that can be read)."""
    docs = []
    for st in glob.glob(os.path.join(out, "rule-output", "*", "status.json")):
        try:
            with open(st) as f:
                docs.append(json.load(f))
        except (OSError, ValueError):
            continue
    return docs


def rule_messages(out):
    """{rule: "status: message"} of the rules that did not end NoIssuesFound."""
    return {s.get("rule", "?"): f"{s.get('status')}: {s.get('message', '')}"
            for s in rule_statuses(out) if s.get("status") != "NoIssuesFound"}


def trial_figures(out):
    """Bytes held and the rules' end latency, from a finished trial."""
    figs = {"tensor_bytes": _size(out, ["events", "index", "collections"]),
            "profile_bytes": _size(out, ["system", "framework"])}
    index = glob.glob(os.path.join(out, "index", "*", "*.json"))
    last = max((os.stat(p).st_mtime for p in index), default=None)
    lags, statuses = [], {}
    for s in rule_statuses(out):
        statuses[s.get("rule", "?")] = s.get("status")
        if last is not None and s.get("finished") and "updated_us" in s:
            lags.append(s["updated_us"] / 1e6 - last)
    figs["saved_steps"] = len({os.path.basename(p).split("_")[0] for p in index})
    figs["verdict_lag_s"] = lags
    figs["statuses"] = statuses
    return figs


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="cnn,lstm,mlp")
    ap.add_argument("--variants", default="hook,auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rules", default="default")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps per training (default: per model)")
    ap.add_argument("--tmp", default=None, help="folder for the trials (default: a temporary one)")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the /proc breakdown runs")
    ap.add_argument("--run-args", default="", help="more options for trainscope run")
    ap.add_argument("--fixed-steps", type=int, default=10,
                    help="steps of the short runs that measure the fixed cost (0: none)")
    ap.add_argument("--device", default=None, help="train on this device (cuda, cuda:1, ...)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    RUN_ARGS.extend(shlex.split(args.run_args))
    if args.device:
        TRAIN_ARGS.extend(["--device", args.device])
    models = [m for m in args.models.split(",") if m]
    variants = [v for v in args.variants.split(",") if v]
    tmp = args.tmp or tempfile.mkdtemp(prefix="run_cost-")
    os.makedirs(tmp, exist_ok=True)
    rng = random.Random(0)
    results = {}
    for model in models:
        walls = {v: [] for v in ["plain"] + variants}
        short = {v: [] for v in ["plain"] + variants}
        steps = {}
        for r in range(args.rounds):
            order = ["plain"] + variants
            rng.shuffle(order)
            for v in order:
                res = run_once(model, v, args.rules, args.steps, tmp)
                walls[v].append(res["wall_s"])
                steps[v] = res["steps"]
                print(f"  {model:5} round {r + 1}/{args.rounds} {v:5}: {res['wall_s']:6.2f} s "
                      f"(exit {res['exit']})", file=sys.stderr, flush=True)
                for rule, text in res.get("findings", {}).items():
                    print(f"        {rule}: {text}", file=sys.stderr, flush=True)
            if args.fixed_steps > 0:
                rng.shuffle(order)
                for v in order:
                    short[v].append(run_once(model, v, args.rules, args.fixed_steps,
                                             tmp)["wall_s"])
                print(f"  {model:5} round {r + 1}/{args.rounds} {args.fixed_steps} steps: " +
                      ", ".join(f"{v} {short[v][-1]:.2f} s" for v in order), file=sys.stderr,
                      flush=True)
        entry = {"plain_s": statistics.median(walls["plain"]), "variants": {}}
        for v in variants:
            ratios = [w / p for w, p in zip(walls[v], walls["plain"])]
            entry["variants"][v] = {"wall_s": statistics.median(walls[v]),
                                    "ratio": statistics.median(ratios), "ratios": ratios}
            if short[v]:
                fixed = statistics.median(w - p for w, p in zip(short[v], short["plain"]))
                extra = entry["variants"][v]["wall_s"] - entry["plain_s"]
                entry["variants"][v].update({
                    "fixed_s": fixed,
                    "per_step_us": (extra - fixed) / max(steps[v], 1) * 1e6,
                    "ratio_without_fixed": (entry["plain_s"] + extra - fixed) / entry["plain_s"]})
            if not args.no_breakdown:
                print(f"  {model:5} breakdown {v}", file=sys.stderr, flush=True)
                entry["variants"][v]["breakdown"] = run_once(model, v, args.rules, args.steps, tmp,
                                                             breakdown=True)
        if not args.no_breakdown:
            entry["plain_breakdown"] = run_once(model, "plain", args.rules, args.steps, tmp)
        results[model] = entry
    if not args.tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps({"goal": GOAL, "rounds": args.rounds, "rules": args.rules,
                          "results": results}, indent=1))
        return
    print_table(results, variants, args)


def print_table(results, variants, args):
    on = f" on {args.device}" if args.device else ""
    print(f"\ntrainscope run --rules {args.rules} {args.run_args}, wall time beside the plain "
          f"training{on} (median of {args.rounds} interleaved rounds; goal <= {GOAL})\n")
    head = (f"{'training':8} {'variant':7} {'plain s':>8} {'run s':>7} {'ratio':>6} {'goal':>5} | "
            f"{'fixed s':>7} {'us/step':>7} {'w/o fixed':>9} | "
            f"{'CPU ms/step: train':>18} {'rules':>6} {'sampler':>7} {'superv':>6} | "
            f"{'KB/step':>8} {'profile KB':>10} | {'lag med/max s':>13}")
    print(head)
    print("-" * len(head))
    for model, e in results.items():
        pb = e.get("plain_breakdown")
        for v in variants:
            ve = e["variants"][v]
            row = (f"{model:8} {v:7} {e['plain_s']:8.2f} {ve['wall_s']:7.2f} {ve['ratio']:6.3f} "
                   f"{'ok' if ve['ratio'] <= GOAL else 'over':>5} | ")
            if "fixed_s" in ve:
                row += (f"{ve['fixed_s']:7.2f} {ve['per_step_us']:7.1f} "
                        f"{ve['ratio_without_fixed']:9.3f} | ")
            else:
                row += f"{'-':>7} {'-':>7} {'-':>9} | "
            b = ve.get("breakdown")
            if b:
                n = max(b["steps"], 1)
                c = b["cpu_by_part_s"]
                row += (f"{c['training'] / n * 1e3:18.2f} {c['rules'] / n * 1e3:6.2f} "
                        f"{c['sampler'] / n * 1e3:7.3f} {c['supervisor'] / n * 1e3:6.2f} | "
                        f"{b['tensor_bytes'] / n / 1024:8.1f} {b['profile_bytes'] / 1024:10.0f} | ")
                lags = b["verdict_lag_s"]
                row += (f"{statistics.median(lags):6.2f}/{max(lags):5.2f}" if lags
                        else f"{'-':>13}")
            print(row)
        if pb:
            print(f"{model:8} {'plain':7} {'':8} {'':7} {'':6} {'':5} | {'':7} {'':7} {'':9} | "
                  f"{pb['cpu_s'] / max(pb['steps'], 1) * 1e3:18.2f}")
    print(f"\nfixed s: a run of {args.fixed_steps} steps less the plain one (trainscope's start "
          "and end, median over rounds);\nus/step: the rest of the extra time per step; w/o "
          "fixed: the ratio less the fixed cost.")
    print("CPU ms/step: CPU time per training step of the training's processes, the rule "
          "workers,\nthe system sampler thread and the rest of the supervisor (one breakdown run, "
          "/proc every 100 ms).\nKB/step: tensor bytes in the trial per training step; lag: last "
          "step's index -> each rule's final verdict.")
    for model, e in results.items():
        for v in variants:
            b = e["variants"][v].get("breakdown")
            if b:
                found = {r: s for r, s in b["statuses"].items() if s != "NoIssuesFound"}
                print(f"  {model}/{v}: {b['saved_steps']} saved steps; statuses other than "
                      f"NoIssuesFound: {found or 'none'}")


if __name__ == "__main__":
    main()
