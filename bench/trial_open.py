#!/usr/bin/env python
"""Side-by-side: how long smdebug and trainscope take to open a trial and read values from it.

    .venv/bin/python bench/trial_open.py            # builds (once) and times the default trial
    .venv/bin/python bench/trial_open.py PATH       # times an existing trial
    .venv/bin/python bench/trial_open.py --json     # machine-readable result

Without PATH a trial of --steps x --tensors float32 tensors of --elems values each is written with
smdebug's own FileWriter (mode TRAIN, one worker, end marker), once, under --cache-dir; the build
time is measured and kept beside the trial.

Measurements, each in a fresh Python process (imports done before the clock starts; the OS page
cache stays warm, it is not dropped):
  open   create_trial(path) + tensor_names() + steps()
  read   value(step) of --reads (tensor, step) pairs drawn with a fixed seed, after the open
The trainscope column is filled when `import trainscope` works (trainscope.create_trial(path) with
smdebug's Trial API), else "n/a". Each side runs --repeat times; the table shows the median.
The goal for trainscope is to open a trial at least 20x faster than smdebug.

smdebug sleeps SMDEBUG_TRAINING_END_DELAY_REFRESH seconds (default 1) after seeing the end marker;
this harness sets it to 0 so the sleep is not counted against smdebug (--smdebug-end-delay).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "data", "smdebug")
OPEN_GOAL = 20.0


# ----------------------------------------------------------------------------------------------
# Building the trial with smdebug.


def trial_name(steps, tensors, elems):
    return f"smdebug_{steps}steps_{tensors}tensors_{elems}f32"


def tensor_names(tensors):
    return [f"layer{i:03d}/weight" for i in range(tensors)]


def build_trial(path, steps, tensors, elems):
    """Writes the trial with smdebug's FileWriter; returns seconds spent."""
    sys.path.insert(0, FIXTURES)
    os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
    import numpy as np  # noqa: PLC0415
    import smdebug_numpy2_compat  # noqa: PLC0415

    smdebug_numpy2_compat.install()
    from smdebug.core.collection import Collection  # noqa: PLC0415
    from smdebug.core.collection_manager import CollectionManager  # noqa: PLC0415
    from smdebug.core.modes import ModeKeys  # noqa: PLC0415
    from smdebug.core.writer import FileWriter  # noqa: PLC0415

    rng = np.random.default_rng(7)
    names = tensor_names(tensors)
    # A pool of distinct arrays, reused round-robin: generating 500k random arrays would dominate.
    pool = [rng.standard_normal(elems).astype(np.float32) for _ in range(97)]
    start = time.perf_counter()
    for step in range(steps):
        writer = FileWriter(trial_dir=path, worker="worker_0", step=step)
        for i, name in enumerate(names):
            writer.write_tensor(
                tdata=pool[(step * tensors + i) % len(pool)],
                tname=name,
                mode=ModeKeys.TRAIN,
                mode_step=step,
            )
        writer.close()
        if step % 1000 == 999:
            print(
                f"  built {step + 1}/{steps} steps, {time.perf_counter() - start:.0f} s",
                file=sys.stderr,
            )
    manager = CollectionManager()
    manager.add(Collection("weights", include_regex=["weight"], tensor_names=names))
    manager.set_num_workers(1)
    manager.export(path, "worker_0_collections.json")
    open(os.path.join(path, "training_job_end.ts"), "w").close()
    return time.perf_counter() - start


def cached_trial(cache_dir, steps, tensors, elems):
    """Returns (path, build info); builds the trial when the cache has no complete copy."""
    name = trial_name(steps, tensors, elems)
    path = os.path.join(cache_dir, name)
    stamp = path + ".built.json"
    if os.path.exists(stamp):
        with open(stamp) as f:
            return path, json.load(f)
    if os.path.exists(path):
        import shutil  # noqa: PLC0415

        shutil.rmtree(path)  # an interrupted build
    os.makedirs(cache_dir, exist_ok=True)
    print(f"building {path} with smdebug (cached for later runs)...", file=sys.stderr)
    seconds = build_trial(path, steps, tensors, elems)
    info = {
        "steps": steps,
        "tensors": tensors,
        "elems": elems,
        "build_s": round(seconds, 2),
        "bytes": directory_bytes(path),
        "writer": "smdebug.core.writer.FileWriter",
    }
    with open(stamp, "w") as f:
        json.dump(info, f)
    return path, info


def directory_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


# ----------------------------------------------------------------------------------------------
# One measurement, run in a child process: `trial_open.py --_measure LIB PATH READS`.


def measure(lib, path, reads):
    import hashlib  # noqa: PLC0415
    import random  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    if lib == "smdebug":
        os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
        from smdebug.trials import create_trial  # noqa: PLC0415
    else:
        import trainscope  # noqa: PLC0415

        create_trial = trainscope.create_trial
    t0 = time.perf_counter()
    trial = create_trial(path)
    ta = time.perf_counter()
    names = trial.tensor_names()
    tb = time.perf_counter()
    steps = trial.steps()
    t1 = time.perf_counter()

    rnd = random.Random(11)
    pairs = []  # (tensor, one of its own steps); chosen before the clock starts
    own_steps = {}
    for _ in range(reads if names else 0):
        name = rnd.choice(names)
        if name not in own_steps:
            own_steps[name] = list(trial.tensor(name).steps())
        if own_steps[name]:
            pairs.append((name, rnd.choice(own_steps[name])))
    digest = hashlib.sha256()
    t2 = time.perf_counter()
    for name, step in pairs:
        value = trial.tensor(name).value(step)
        digest.update(np.asarray(value).tobytes())
    t3 = time.perf_counter()
    listing = hashlib.sha256(
        json.dumps([list(names), [int(s) for s in steps]]).encode()
    ).hexdigest()
    return {
        "open_s": t1 - t0,
        "create_trial_s": ta - t0,
        "tensor_names_s": tb - ta,
        "steps_s": t1 - tb,
        "read_s": t3 - t2,
        "reads": len(pairs),
        "num_tensors": len(names),
        "num_steps": len(steps),
        "listing_sha256": listing,
        "values_sha256": digest.hexdigest(),
    }


def run_child(lib, path, reads, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--_measure", lib, path, str(reads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{lib} measurement failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def trainscope_available(env):
    probe = "import trainscope, sys; sys.exit(0 if hasattr(trainscope, 'create_trial') else 3)"
    return (
        subprocess.run([sys.executable, "-c", probe], capture_output=True, env=env).returncode == 0
    )


def side(lib, path, reads, repeat, env):
    runs = [run_child(lib, path, reads, env) for _ in range(repeat)]
    first = runs[0]
    return {
        "open_s": statistics.median(r["open_s"] for r in runs),
        "read_s": statistics.median(r["read_s"] for r in runs),
        "open_runs_s": [round(r["open_s"], 4) for r in runs],
        "open_parts_s": {
            k: statistics.median(r[k] for r in runs)
            for k in ("create_trial_s", "tensor_names_s", "steps_s")
        },
        "read_runs_s": [round(r["read_s"], 4) for r in runs],
        "reads": first["reads"],
        "num_tensors": first["num_tensors"],
        "num_steps": first["num_steps"],
        "listing_sha256": first["listing_sha256"],
        "values_sha256": first["values_sha256"],
    }


# ----------------------------------------------------------------------------------------------


def fmt_s(x):
    return "n/a" if x is None else f"{x:.3f}"


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.1f}x"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_measure"]:
        print(json.dumps(measure(argv[1], argv[2], int(argv[3]))))
        return 0

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "path", nargs="?", help="an existing trial (default: build one with smdebug)"
    )
    parser.add_argument(
        "--cache-dir",
        default=os.path.join(tempfile.gettempdir(), "trainscope-bench-trials"),
        help="where the built trial is kept (default: %(default)s)",
    )
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--tensors", type=int, default=50)
    parser.add_argument("--elems", type=int, default=256, help="float32 values per tensor")
    parser.add_argument("--reads", type=int, default=100, help="tensor values read after the open")
    parser.add_argument(
        "--repeat", type=int, default=3, help="fresh processes per side (median shown)"
    )
    parser.add_argument(
        "--smdebug-end-delay",
        default="0",
        help="SMDEBUG_TRAINING_END_DELAY_REFRESH for the smdebug side (smdebug's default is 1)",
    )
    parser.add_argument("--no-trainscope", action="store_true", help="time smdebug only")
    parser.add_argument(
        "--trainscope-path",
        help="folder prepended to PYTHONPATH to find trainscope (default: as installed)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a table"
    )
    args = parser.parse_args(argv)

    if args.path:
        path, build = os.path.abspath(args.path), None
    else:
        path, build = cached_trial(args.cache_dir, args.steps, args.tensors, args.elems)

    env = dict(os.environ)
    if args.trainscope_path:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (args.trainscope_path, env.get("PYTHONPATH")) if p
        )
    smd_env = dict(
        env, SMDEBUG_TRAINING_END_DELAY_REFRESH=args.smdebug_end_delay, SMDEBUG_LOG_LEVEL="error"
    )

    smd = side("smdebug", path, args.reads, args.repeat, smd_env)
    ts = None
    if not args.no_trainscope and trainscope_available(env):
        ts = side("trainscope", path, args.reads, args.repeat, env)

    def ratio(key):
        return smd[key] / ts[key] if ts and ts[key] > 0 else None

    agree = None
    if ts:
        agree = {
            "listing": smd["listing_sha256"] == ts["listing_sha256"],
            "values": smd["values_sha256"] == ts["values_sha256"],
        }
    result = {
        "trial": path,
        "trial_bytes": directory_bytes(path),
        "build": build,
        "smdebug_end_delay_s": args.smdebug_end_delay,
        "python": sys.version.split()[0],
        "smdebug": smd,
        "trainscope": ts,
        "open_ratio": ratio("open_s"),
        "read_ratio": ratio("read_s"),
        "open_goal_ratio": OPEN_GOAL,
        "open_goal_met": None if ts is None else ratio("open_s") >= OPEN_GOAL,
        "agree": agree,
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0

    megabytes = result["trial_bytes"] / 1e6
    print(f"trial: {path}")
    print(f"  {smd['num_steps']} steps, {smd['num_tensors']} tensors, {megabytes:.1f} MB")
    if build:
        shape = f"{build['steps']} steps x {build['tensors']} tensors x {build['elems']} float32"
        print(f"  built by smdebug's FileWriter in {build['build_s']:.1f} s ({shape}; cached)")
    print(f"  fresh process per run, median of {args.repeat}")
    print(f"  smdebug end-marker refresh delay: {args.smdebug_end_delay} s")
    rows = [
        ("open: create_trial+tensor_names+steps", "open_s", f">= {OPEN_GOAL:.0f}x faster to open"),
        (f"read {smd['reads']} tensor values", "read_s", "(no goal; smdebug shown for scale)"),
    ]
    header = f"{'measurement':<40}{'smdebug s':>12}{'trainscope s':>14}{'ratio':>9}  goal"
    print(header)
    print("-" * len(header))
    for label, key, goal in rows:
        ts_s = fmt_s(ts[key] if ts else None)
        print(f"{label:<40}{fmt_s(smd[key]):>12}{ts_s:>14}{fmt_ratio(ratio(key)):>9}  {goal}")
    if ts is None:
        print("trainscope: not importable (or has no create_trial); its columns read n/a")
    else:
        verdict = "met" if result["open_goal_met"] else "NOT met"
        same = f"same names/steps: {agree['listing']}; same values: {agree['values']}"
        print(f"open goal {verdict}; {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
