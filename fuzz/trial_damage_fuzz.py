#!/usr/bin/env python3
"""Directory-level damage fuzzer of trainscope's readers (issue 17).

Takes a real trial (written by a real hook under `trainscope run`: tensors, collections, rule
output, event log, stop file, system metrics, framework timeline), and, case after case, copies
it and damages the copy at the level of the folder: files missing, swapped, cut short, filled
with garbage, replaced by symbolic links (to /dev/zero, to a file outside the trial, to
themselves, to nothing), by FIFOs, by folders or by huge sparse files, made unreadable; folders
missing, replaced by files, by links that loop or leave the trial, made unreadable. Then it runs
every reader on the damaged copy, each in its own process under a time-out and an address-space
limit (RLIMIT_AS):

  trainscope ls DIR, trainscope ls --json DIR, trainscope status DIR,
  trainscope timeline DIR -o OUT,
  Python: create_trial(DIR).steps() / tensor_names() / tensor(n).steps() / .value(step)
          / .reduction_value(step, "mean") for every tensor and step.

and asserts, for each:
  - no crash: the process did not die of a signal (SIGSEGV, SIGABRT from std::bad_alloc or an
    uncaught exception ...);
  - no hang: it finished within the time-out;
  - no unbounded allocation: it finished under the address-space limit (an allocation refused
    there shows as std::bad_alloc / MemoryError, which fails the case);
  - every failure is a clear error: the CLI exits with a non-zero code and a message on stderr
    that names a file or folder of the trial (no "terminate called", no traceback); Python raises
    only TrainscopeError subclasses (smdebug's exception names), never a bare RuntimeError,
    MemoryError, OSError or the like.

Permissions are damaged for real: when run as root (who reads any file), the readers run as
the user `nobody`.

Run it (a seeded run is reproducible; each case prints its seed and damage):
  python fuzz/trial_damage_fuzz.py --cases 40 --seed 1
  python fuzz/trial_damage_fuzz.py --trial runs/x --seconds 600 --keep /tmp/failures
The CLI is $TRAINSCOPE_BUILD_DIR/bin/trainscope (else build/bin/trainscope, else `trainscope` on
PATH); trainscope is imported from this Python. Without --trial the fuzzer makes its trial with
`trainscope run` on examples/pytorch/digits_mlp.py (needs torch; about a minute).
Exit status: 0 when every case held, 1 when one failed (its damage and output are printed).
"""

import argparse
import json
import os
import pathlib
import random
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
GIB = 1 << 30

# The Python reader: one process per case. Prints one JSON line: what it read, or the first
# exception (its class, whether it is a TrainscopeError, its message).
PY_READER = r"""
import json, sys, traceback
path = sys.argv[1]
out = {"ok": False}
try:
    from trainscope import create_trial
    from trainscope.exceptions import TrainscopeError
except Exception as e:  # the package itself: not the case's fault
    print(json.dumps({"setup_error": repr(e)}))
    sys.exit(3)
try:
    t = create_trial(path, timeout=2, end_delay=0)
    steps = t.steps()
    names = t.tensor_names()
    reads = 0
    for n in names[:64]:
        tensor = t.tensor(n)
        for s in tensor.steps()[:4]:
            tensor.value(s)
            try:
                tensor.reduction_value(s, "mean")
            except TrainscopeError:
                pass  # e.g. no reduction for a string tensor: a clear error is fine here
            reads += 1
    t.workers()
    out = {"ok": True, "steps": len(steps), "tensors": len(names), "reads": reads}
except TrainscopeError as e:
    out = {"ok": False, "trainscope_error": True, "type": type(e).__name__, "message": str(e)}
except BaseException as e:
    out = {"ok": False, "trainscope_error": False, "type": type(e).__name__, "message": str(e),
           "traceback": traceback.format_exc()}
print(json.dumps(out))
"""

# ---- damage ------------------------------------------------------------------------------------

FILE_DAMAGES = [
    "remove", "truncate", "empty", "garbage", "flip_bytes", "append_garbage", "swap",
    "symlink_dev_zero", "symlink_dev_urandom", "symlink_outside", "symlink_self",
    "symlink_dangling", "symlink_to_folder", "fifo", "folder", "sparse_huge", "unreadable",
]
# Damages that do not read or write the file's content (all a non-regular file can take).
REPLACING_DAMAGES = [
    "remove", "symlink_dev_zero", "symlink_dev_urandom", "symlink_self", "symlink_dangling",
    "symlink_to_folder", "fifo", "folder",
]
DIR_DAMAGES = [
    "remove_dir", "file_for_dir", "dir_symlink_parent", "dir_symlink_root", "dir_symlink_self",
    "dir_fifo", "unreadable_dir", "empty_dir",
]


def _entries(root):
    """The trial's files and folders (paths relative to root), sorted."""
    files, dirs = [], []
    for d, subdirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        if rel != ".":
            dirs.append(rel)
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
        subdirs.sort()
    return sorted(files), sorted(dirs)


def _replace(path, make):
    """Removes whatever is at `path` and makes something else there."""
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    make(path)


# Files a reader looks for that a trial may lack; planted (as garbage, a FIFO, a link to
# /dev/zero, a huge sparse file, a folder) so the readers of absent kinds are reached too.
PLANT_PATHS = [
    "incomplete_worker_0.json", "rule-output/Planted/status.json",
    "rule-output/Planted/events.jsonl", "framework/pytorch/detailed_profiling/planted.json",
    "system/incremental/2026010100/1767225600.algo-2.json",
    "framework/pevents/2026010100/1767225600000000_node-2_pythontimeline.json",
    "index/000000000/000000000999_worker_0.json",
    "events/000000000999/000000000999_worker_0.tfevents",
    "collections/000000000/worker_1_collections.json",
]
PLANT_KINDS = ["garbage", "fifo", "symlink_dev_zero", "sparse_huge", "folder", "json_garbage"]


def plant(rng, root):
    rel = rng.choice(PLANT_PATHS)
    kind = rng.choice(PLANT_KINDS)
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if os.path.lexists(p):
        _replace(p, lambda q: None)
    if kind == "garbage":
        pathlib.Path(p).write_bytes(rng.randbytes(rng.randint(1, 4096)))
    elif kind == "json_garbage":
        pathlib.Path(p).write_text(rng.choice(
            ["[]", "{}", "null", '"str"', '{"status": 123}', "{" * 10000, "1e999",
             '{"Timestamp": 1e300, "Type": "cpu", "Dimension": "x", "Value": 1}\n']))
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "symlink_dev_zero":
        os.symlink("/dev/zero", p)
    elif kind == "sparse_huge":
        with open(p, "wb") as f:
            f.truncate(4 * GIB)
    elif kind == "folder":
        os.mkdir(p)
    return f"plant_{kind} {rel}"


def apply_damage(rng, root, outside):
    """One random damage to the trial at `root`; returns its description."""
    if rng.random() < 0.2:
        try:
            return plant(rng, root)
        except OSError as e:  # an earlier damage made its folder something else
            return f"plant_skipped ({e.strerror})"
    files, dirs = _entries(root)
    # Files the readers read are the interesting ones; weight the kinds so each is reached.
    if dirs and rng.random() < 0.25:
        rel = rng.choice(dirs)
        kind = rng.choice(DIR_DAMAGES)
        p = os.path.join(root, rel)
        if kind == "remove_dir":
            shutil.rmtree(p)
        elif kind == "file_for_dir":
            _replace(p, lambda q: pathlib.Path(q).write_bytes(b"not a folder\n"))
        elif kind == "dir_symlink_parent":
            _replace(p, lambda q: os.symlink("..", q))
        elif kind == "dir_symlink_root":
            _replace(p, lambda q: os.symlink("/", q))
        elif kind == "dir_symlink_self":
            _replace(p, lambda q: os.symlink(os.path.basename(q), q))
        elif kind == "dir_fifo":
            _replace(p, os.mkfifo)
        elif kind == "unreadable_dir":
            os.chmod(p, 0)
        elif kind == "empty_dir":
            _replace(p, os.mkdir)
        return f"{kind} {rel}"
    if not files:
        return "nothing to damage"
    # Half the time, a file of a kind picked first (so the few rule and profiler files get their
    # share next to the many index and event files).
    if rng.random() < 0.5:
        groups = {}
        for f in files:
            groups.setdefault(_kind_of(f), []).append(f)
        rel = rng.choice(groups[rng.choice(sorted(groups))])
    else:
        rel = rng.choice(files)
    kind = rng.choice(FILE_DAMAGES)
    p = os.path.join(root, rel)
    if not stat.S_ISREG(os.lstat(p).st_mode):
        # Already a link, FIFO ... (an earlier damage): only replace it.
        kind = rng.choice(REPLACING_DAMAGES)
    data = pathlib.Path(p).read_bytes() if kind not in REPLACING_DAMAGES else b""
    if kind == "remove":
        os.unlink(p)
    elif kind == "truncate":
        pathlib.Path(p).write_bytes(data[: rng.randrange(len(data))] if data else b"")
    elif kind == "empty":
        pathlib.Path(p).write_bytes(b"")
    elif kind == "garbage":
        pathlib.Path(p).write_bytes(rng.randbytes(max(1, len(data))))
    elif kind == "flip_bytes":
        b = bytearray(data or b"\0")
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        pathlib.Path(p).write_bytes(bytes(b))
    elif kind == "append_garbage":
        pathlib.Path(p).write_bytes(data + rng.randbytes(rng.randint(1, 4096)))
    elif kind == "swap":
        other = rng.choice(files)
        q = os.path.join(root, other)
        if other == rel or not stat.S_ISREG(os.lstat(q).st_mode):
            os.unlink(p)
            return f"remove {rel}"
        tmp = p + ".swap"
        os.rename(p, tmp)
        os.rename(q, p)
        os.rename(tmp, q)
        return f"swap {rel} {other}"
    elif kind == "symlink_dev_zero":
        _replace(p, lambda q: os.symlink("/dev/zero", q))
    elif kind == "symlink_dev_urandom":
        _replace(p, lambda q: os.symlink("/dev/urandom", q))
    elif kind == "symlink_outside":
        # A real file of the same name outside the trial (the link would leave it).
        target = os.path.join(outside, os.path.basename(p))
        pathlib.Path(target).write_bytes(data)
        _replace(p, lambda q: os.symlink(target, q))
    elif kind == "symlink_self":
        _replace(p, lambda q: os.symlink(os.path.basename(q), q))
    elif kind == "symlink_dangling":
        _replace(p, lambda q: os.symlink(os.path.basename(q) + ".gone", q))
    elif kind == "symlink_to_folder":
        _replace(p, lambda q: os.symlink(".", q))
    elif kind == "fifo":
        _replace(p, os.mkfifo)
    elif kind == "folder":
        _replace(p, os.mkdir)
    elif kind == "sparse_huge":
        with open(p, "r+b") as f:
            f.truncate(rng.choice([4 * GIB, 64 * GIB]) + len(data))
    elif kind == "unreadable":
        os.chmod(p, 0)
    return f"{kind} {rel}"


def _kind_of(rel):
    """A file's kind, for picking a kind first: its folder and extension without step numbers."""
    parts = rel.split(os.sep)
    head = parts[0]
    if head == "rule-output" and len(parts) == 3:
        return "rule-output/*/" + parts[2]
    return head + ":" + os.path.splitext(rel)[1]


# ---- readers -----------------------------------------------------------------------------------


def _limits(as_bytes, drop_to):
    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if drop_to is not None:
            os.setgid(drop_to[1])
            os.setgroups([])
            os.setuid(drop_to[0])
    return preexec


def _run(argv, timeout, as_bytes, drop_to, cwd):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout,
                           preexec_fn=_limits(as_bytes, drop_to), cwd=cwd)
    except subprocess.TimeoutExpired as e:
        return {"hang": True, "seconds": time.monotonic() - t0,
                "stderr": (e.stderr or b"")[-2000:] if isinstance(e.stderr, str) else ""}
    return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
            "seconds": time.monotonic() - t0}


BAD_STDERR = ("terminate called", "std::bad_alloc", "Traceback (most recent call last)",
              "AddressSanitizer", "runtime error:", "Segmentation fault", "Aborted")


# Exit codes that report what the rules found, not a failure (README, "Exit codes"): 3 issues
# found, 4 stopped, 6 a rule ended in Error, 8 the trial is incomplete. Every other non-zero code
# (1 error, 7 a damaged status file ...) needs a message naming the file.
VERDICT_CODES = (3, 4, 6, 8)


def check_cli(name, r, trial, damage):
    """Problems with one CLI run (empty when it held)."""
    if r.get("hang"):
        return [f"{name}: did not finish in time (hang)"]
    problems = []
    rc, err = r["rc"], r["stderr"]
    if rc < 0:
        problems.append(f"{name}: killed by signal {-rc}")
    for bad in BAD_STDERR:
        if bad in err:
            problems.append(f"{name}: stderr has {bad!r}")
    if rc > 0 and rc not in VERDICT_CODES:
        if not err.strip():
            problems.append(f"{name}: exit {rc} without a message")
        elif not _names_a_path(err, trial, damage):
            problems.append(f"{name}: exit {rc} with a message that names no file: {err.strip()}")
    return problems


def _names_a_path(text, trial, damage):
    if trial in text or os.path.basename(trial) in text:
        return True
    words = damage.split()[1:]
    for w in words:
        for part in w.split(os.sep):
            if len(part) > 2 and part in text:
                return True
    return False


def check_python(r):
    if r.get("hang"):
        return ["python reader: did not finish in time (hang)"]
    if r["rc"] < 0:
        return [f"python reader: killed by signal {-r['rc']}: {r['stderr'][-1500:]}"]
    lines = r["stdout"].strip().splitlines()
    try:
        out = json.loads(lines[-1])
    except (IndexError, ValueError):
        return [f"python reader: exit {r['rc']} without its report: {r['stderr'][-1500:]}"]
    if "setup_error" in out:
        raise SystemExit(f"the Python reader cannot import trainscope: {out['setup_error']}")
    if out.get("ok") or out.get("trainscope_error"):
        return []
    return [f"python reader: {out['type']} (not a TrainscopeError): {out['message']}\n"
            f"{out.get('traceback', '')}"]


def run_readers(cli, trial, scratch, args, drop_to):
    """Every reader on `trial`; returns {reader: result}."""
    timeout, limit = args.timeout, args.limit_gib * GIB
    out = os.path.join(scratch, "merged.json")
    runs = {
        "ls": [cli, "ls", trial],
        "ls --json": [cli, "ls", "--json", trial],
        "status": [cli, "status", trial],
        "timeline": [cli, "timeline", trial, "-o", out],
    }
    results = {k: _run(v, timeout, limit, drop_to, scratch) for k, v in runs.items()}
    results["python"] = _run([sys.executable, "-c", PY_READER, trial], timeout,
                             args.py_limit_gib * GIB, drop_to, scratch)
    return results


# ---- driver ------------------------------------------------------------------------------------


def find_cli():
    build = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
    exe = build / "bin" / "trainscope"
    if exe.exists():
        return str(exe)
    return shutil.which("trainscope") or shutil.which(
        "trainscope", path=os.path.dirname(sys.executable))


def _usable_as(cli, drop_to):
    """Whether the user drop_to can run the CLI and import trainscope from this Python."""
    for argv in ([cli, "--version"], [sys.executable, "-c", "import trainscope._core"]):
        try:
            p = subprocess.run(argv, capture_output=True, timeout=60, cwd="/",
                               preexec_fn=_limits(8 * GIB, drop_to))
        except (OSError, subprocess.SubprocessError):
            return False
        if p.returncode != 0:
            return False
    return True


def make_trial(cli, where):
    """A real trial: digits_mlp under `trainscope run` with the default rules, the stop action
    and the system sampler, at a learning rate that makes the rules find (and stop) something."""
    trial = os.path.join(where, "trial")
    cmd = [cli, "run", "--out", trial, "--rules", "default", "--action", "stop",
           "--system-interval-ms", "200", "--", sys.executable,
           str(REPO / "examples" / "pytorch" / "digits_mlp.py"), "--lr", "1.0", "--epochs", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=where)
    if p.returncode not in (0, 4) or not os.path.isdir(os.path.join(trial, "index")):
        raise SystemExit(f"making the trial failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    # The run lock is the supervisor's, not a reader's input.
    return trial


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trial", help="a real trial to damage (default: make one)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=30, help="damaged copies to try")
    ap.add_argument("--seconds", type=float, default=0,
                    help="stop starting cases after this long (0: no limit)")
    ap.add_argument("--damages", type=int, default=2, help="most damages per case")
    ap.add_argument("--timeout", type=float, default=30, help="seconds each reader may take")
    ap.add_argument("--limit-gib", type=float, default=2, help="CLI address-space limit")
    ap.add_argument("--py-limit-gib", type=float, default=4, help="Python address-space limit")
    ap.add_argument("--keep", help="copy each failing case here")
    args = ap.parse_args()

    cli = find_cli()
    if cli is None:
        raise SystemExit("no trainscope command: build it (build/bin) or pip install .")
    drop_to = None
    if os.geteuid() == 0:
        import pwd  # noqa: PLC0415

        nobody = pwd.getpwnam("nobody")
        drop_to = (nobody.pw_uid, nobody.pw_gid)
        if not _usable_as(cli, drop_to):
            # A checkout nobody cannot read (under /root, say): run the readers as root, for
            # whom an unreadable file is readable, and leave those damages out.
            print("note: nobody cannot run this trainscope; the readers run as root and files "
                  "are not made unreadable")
            drop_to = None
            FILE_DAMAGES.remove("unreadable")
            DIR_DAMAGES.remove("unreadable_dir")
    work = tempfile.mkdtemp(prefix="ts_damage_")
    os.chmod(work, 0o755)
    try:
        pristine = args.trial or make_trial(cli, work)
        failures = 0
        t0 = time.monotonic()
        kinds = {}
        for case in range(args.cases):
            if args.seconds and time.monotonic() - t0 > args.seconds:
                print(f"time limit: {case} cases run")
                break
            seed = args.seed * 1_000_003 + case
            rng = random.Random(seed)
            case_dir = os.path.join(work, f"case{case}")
            os.makedirs(case_dir)
            outside = os.path.join(case_dir, "outside")
            scratch = os.path.join(case_dir, "scratch")
            os.makedirs(outside)
            os.makedirs(scratch)
            os.chmod(case_dir, 0o755)
            os.chmod(scratch, 0o777)
            trial = os.path.join(case_dir, "trial")
            shutil.copytree(pristine, trial, symlinks=True)
            damage = "; ".join(apply_damage(rng, trial, outside)
                               for _ in range(rng.randint(1, args.damages)))
            for d in damage.split("; "):
                kinds[d.split()[0]] = kinds.get(d.split()[0], 0) + 1
            results = run_readers(cli, trial, scratch, args, drop_to)
            problems = []
            for name in ("ls", "ls --json", "status", "timeline"):
                problems += check_cli(name, results[name], trial, damage)
            problems += check_python(results["python"])
            secs = max(r.get("seconds", 0) for r in results.values())
            state = "ok" if not problems else "FAILED"
            print(f"case {case} (seed {seed}): {damage}: {state} (slowest reader {secs:.1f} s)",
                  flush=True)
            if problems:
                failures += 1
                for pr in problems:
                    print("    " + pr.replace("\n", "\n    "))
                if args.keep:
                    dest = os.path.join(args.keep, f"case{case}_seed{seed}")
                    shutil.copytree(case_dir, dest, symlinks=True, dirs_exist_ok=True)
            _restore_permissions(case_dir)
            shutil.rmtree(case_dir, ignore_errors=True)
        print(f"damage kinds tried: {json.dumps(dict(sorted(kinds.items())))}")
        print(f"{failures} failing case(s)")
        return 1 if failures else 0
    finally:
        _restore_permissions(work)
        shutil.rmtree(work, ignore_errors=True)


def _restore_permissions(root):
    for d, subdirs, names in os.walk(root):
        for n in subdirs + names:
            p = os.path.join(d, n)
            try:
                if not os.path.islink(p) and stat.S_IMODE(os.lstat(p).st_mode) == 0:
                    os.chmod(p, 0o755)
            except OSError:
                pass


if __name__ == "__main__":
    sys.exit(main())
