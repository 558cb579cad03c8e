"""SIGKILL stress of the durability contract (docs/formats/trial.md, Durability): many seeded
random kills of real PyTorch trainings, each trial recovered (`trainscope recover`) and read by
trainscope's reader and smdebug's; prints the kill count, where the kills fell, the steps lost
(must be 0) and the time.

    python bench/kill_stress.py [--kills 200] [--seed 17] [--steps 24] [--cli PATH]

Each kill draws a training: 0.5 to 4 MiB saved a step (uniform), TRAINSCOPE_THREADS 1 or 2, and a
kill point: before the first step (a uniform delay after launch, 10 % of kills), mid-run (after
step k's hook.step() returned, k uniform over the steps, 60 %), or in close() (a uniform delay of
0 to 30 ms after every step was handed over, 30 %). Where a kill fell is judged from what the
training had printed and whether it was still alive. A step is lost when the training had handed
it over and either reader misses it, or a value differs. Needs the trainscope package and smdebug
importable by this Python, and the `trainscope` command (--cli, else $TRAINSCOPE_BUILD_DIR/bin, else
beside this Python).
"""

import argparse
import collections
import json
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "tests" / "python" / "hook_scripts"
FIXTURES = REPO / "tests" / "data" / "smdebug"
TENSOR = "big_output_0"

TRAIN = r'''
import sys, torch
import trainscope.pytorch as ts
out, steps, floats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hook = ts.Hook(out_dir=out, include_regex=["big"],
               save_config=ts.SaveConfig(save_interval=1), quiet=True)
x = torch.arange(floats, dtype=torch.float32)
print("start", flush=True)
for step in range(steps):
    hook.step()  # ends step - 1: handed over once this returns
    print(step, flush=True)
    x[0] = step
    x[-1] = -step
    hook.record_tensor_value("big", x)
hook.step()
print("closing", flush=True)
hook.close()
print("closed", flush=True)
'''


def find_cli(arg):
    if arg:
        return arg
    build = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
    if (build / "bin" / "trainscope").exists():
        return str(build / "bin" / "trainscope")
    return shutil.which("trainscope", path=os.path.dirname(sys.executable))


def child_env(threads=None):
    e = dict(os.environ)
    import trainscope  # noqa: PLC0415

    paths = [os.path.dirname(os.path.dirname(trainscope.__file__)), str(FIXTURES), str(SCRIPTS)]
    if e.get("PYTHONPATH"):
        paths.append(e["PYTHONPATH"])
    e["PYTHONPATH"] = os.pathsep.join(paths)
    e["SMDEBUG_LOG_LEVEL"] = "error"
    e["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    if threads is not None:
        e["TRAINSCOPE_THREADS"] = str(threads)
    # The journal is opt-in (docs/formats/journal.md): on here, unless the caller set
    # TRAINSCOPE_JOURNAL (=0 runs the control, where a kill may lose queued steps).
    e.setdefault("TRAINSCOPE_JOURNAL", "1")
    return e


class Reader:
    """A reader process that stays up (read_steps.py in stdin mode)."""

    def __init__(self, which):
        code = ("import runpy, sys; sys.argv = sys.argv[1:]; import smdebug_numpy2_compat; "
                "smdebug_numpy2_compat.install(); runpy.run_path(sys.argv[0], run_name='__main__')")
        self.p = subprocess.Popen([sys.executable, "-c", code, str(SCRIPTS / "read_steps.py"),
                                   which, "-", TENSOR], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=child_env(), text=True)

    def read(self, path):
        self.p.stdin.write(path + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def one_kill(rng, i, root, script, cli, readers, steps):
    mib = rng.uniform(0.5, 4.0)
    floats = int(mib * (1 << 20)) // 4
    threads = rng.choice((1, 2))
    phase = rng.choices(("before", "mid", "close"), weights=(10, 60, 30))[0]
    out = str(root / f"t{i}")
    p = subprocess.Popen([sys.executable, str(script), out, str(steps), str(floats)],
                         stdout=subprocess.PIPE, env=child_env(threads), text=True)
    handed, seen_close = 0, False
    try:
        if phase == "before":
            time.sleep(rng.uniform(0.0, 3.0))
        else:
            k = rng.randint(1, steps - 1) if phase == "mid" else None
            for line in p.stdout:
                line = line.strip()
                if line == "start":
                    continue
                if line == "closing":
                    seen_close = True
                    handed = steps
                    time.sleep(rng.uniform(0.0, 0.03))  # close() takes tens of ms
                    break
                handed = int(line)
                if k is not None and handed >= k:
                    break
        alive = p.poll() is None
        p.send_signal(signal.SIGKILL)
    finally:
        p.kill()
        p.wait(timeout=60)
        # What the training printed before it died counts too (steps it handed over meanwhile).
        rest = p.stdout.read().split()
        p.stdout.close()
    began = phase != "before"
    for line in rest:
        if line == "start":
            continue
        if line in ("closing", "closed"):
            seen_close, handed = True, steps
            alive = alive and line != "closed"
        elif not seen_close:
            handed, began = int(line), True
    if seen_close:
        where = "in close()" if alive else "after exit"
    elif not began:
        where = "before first step"  # nothing was handed over (handed stays 0)
    else:
        where = "mid-run"
    r = subprocess.run([cli, "recover", out, "--json"], capture_output=True, text=True,
                       timeout=120)
    problems = []
    rec = {"steps_recovered": 0}
    if r.returncode != 0:
        problems.append(f"recover exit {r.returncode}: {r.stdout} {r.stderr}")
    else:
        rec = json.loads(r.stdout)
    lost = 0
    got = {}
    if os.path.isdir(os.path.join(out, "index")):
        for which, reader in readers.items():
            got[which] = reader.read(out)
            if "error" in got[which]:
                problems.append(f"{which}: {got[which]['error']}")
        if len(got) == 2 and got["trainscope"] != got["smdebug"]:
            problems.append("the readers disagree")
    res = got.get("trainscope", {"steps": [], "values": {}})
    seen = res.get("steps", [])
    if seen != list(range(len(seen))):
        problems.append(f"steps with a gap: {seen}")
    lost = max(0, handed - len(seen))
    # arange(floats) with x[0] = s and x[-1] = -s: exact in float32 below 2**24 elements
    total = float(floats) * (floats - 1) / 2 - (floats - 1)
    for s in seen:
        v = res["values"].get(str(s))
        if v is None or v[0] != s or v[1] != -s or v[3] != floats or abs(v[2] - total) > 0.5:
            problems.append(f"step {s}: value {v}")
    return {"where": where, "lost": lost, "problems": problems, "mib": mib, "threads": threads,
            "handed": handed, "recovered": rec.get("steps_recovered", 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--cli")
    ap.add_argument("--keep", action="store_true", help="keep the trials")
    args = ap.parse_args()
    cli = find_cli(args.cli)
    if not cli:
        sys.exit("kill_stress: the trainscope command was not found (--cli)")
    rng = random.Random(args.seed)
    root = pathlib.Path(tempfile.mkdtemp(prefix="ts_kill_stress_"))
    script = root / "train.py"
    script.write_text(TRAIN)
    readers = {"trainscope": Reader("trainscope"), "smdebug": Reader("smdebug")}
    t0 = time.time()
    results = []
    try:
        i = 0
        # --kills kills of a live training: a training that had already exited is no kill (it
        # is still checked, and counted apart).
        while sum(r["where"] != "after exit" for r in results) < args.kills:
            r = one_kill(rng, i, root, script, cli, readers, args.steps)
            results.append(r)
            if r["problems"] or r["lost"]:
                print(f"kill {i}: {r}", flush=True)
            if not args.keep:
                shutil.rmtree(root / f"t{i}", ignore_errors=True)
            if (i + 1) % 20 == 0:
                print(f"... {i + 1} trainings, {time.time() - t0:.0f} s", flush=True)
            i += 1
    finally:
        for reader in readers.values():
            reader.close()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    elapsed = time.time() - t0
    where = collections.Counter(r["where"] for r in results)
    lost = sum(r["lost"] for r in results)
    bad = [r for r in results if r["problems"]]
    handed = sum(r["handed"] for r in results)
    recovered = sum(r["recovered"] for r in results)
    killed = sum(r["where"] != "after exit" for r in results)
    print(f"\nkill_stress: {killed} SIGKILLs of live trainings, {len(results)} trainings "
          f"(seed {args.seed}, "
          f"{args.steps} steps of 0.5-4 MiB, TRAINSCOPE_THREADS 1/2: "
          f"{sum(r['threads'] == 1 for r in results)}/{sum(r['threads'] == 2 for r in results)})")
    for w in ("before first step", "mid-run", "in close()", "after exit"):
        print(f"  killed {w:18s}: {where.get(w, 0)}"
              + ("  (had exited: no kill, checked all the same)" if w == "after exit" else ""))
    print(f"  steps handed over before the kills: {handed}; published by recovery: {recovered}")
    print(f"  steps lost: {lost} (limit 0); trials with other problems: {len(bad)} (limit 0)")
    print(f"  time: {elapsed:.0f} s ({elapsed / max(1, len(results)):.1f} s a kill)")
    sys.exit(1 if lost or bad else 0)


if __name__ == "__main__":
    main()
