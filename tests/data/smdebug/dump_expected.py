#!/usr/bin/env python
"""Records what smdebug's own reader reports for each fixture trial, as expected/<name>.json.

Run after make_fixtures.py, with the same virtualenv:

    .venv/bin/python tests/data/smdebug/dump_expected.py            # all fixtures
    .venv/bin/python tests/data/smdebug/dump_expected.py dtypes     # just one
    .venv/bin/python tests/data/smdebug/dump_expected.py --check    # exit 1 if a file is stale

Every answer comes from smdebug.trials.create_trial(<fixture>) and its Trial/Tensor methods; where
smdebug raises, the exception's class name is recorded instead ({"error": "StepUnavailable"}).
Where smdebug cannot read back what was written (dtypes it does not decode, save_shape's raw
values), the value make_fixtures.py handed to smdebug is recorded under the top-level key
"written", recomputed from make_fixtures.py (fixed seeds), never read from the trial.

JSON schema (all step numbers are JSON object keys, i.e. strings):
  fixture, smdebug_version, numpy_version
  trial:
    workers, num_workers, loaded_all_steps, last_complete_step, modes (names, not GLOBAL),
    steps {MODE: [...]}, steps_with_incomplete {MODE: [...]}    MODE: GLOBAL/TRAIN/EVAL/PREDICT
    mode_of_step {global: [mode name, mode step]}                    trial.mode / trial.mode_step
    global_step {MODE: {mode step: global step}}                    trial.global_step
    has_passed_step {MODE: {step: StepState name}}
    tensor_names, tensor_names_by_mode {MODE: [...]},
    tensor_names_by_step {MODE: {step: [...] or error}}
    collections {name: tensor_names(collection=name)}
    missing_tensor: what trial.tensor("no/such/tensor") raised
  tensors: {name: {
    steps {MODE: [...]}, steps_with_incomplete {MODE: [...]},
    at {global step: {workers, value, shape, reduction_values[, by_worker {worker: {...}}]}}
        for every step the trial knows plus probes (1, last + 1, 100);
    mode_values {MODE: {mode step: {"global_step": g} when value(mode step, mode) equals value(g),
                 else the value or error}}
    reduction_value {name or abs_name: value}   tensor.reduction_value(first step, ...) for every
        reduction and norm, abs False/True: saved ones, or smdebug's numpy on-the-fly ones}}
  written: {name: {step: value or {"write_error": class}}}   (dtypes, save_shape only)

A value is {"dtype": numpy dtype name, "shape": [...], "value": nested list}; floats are exact
(float32/float16 widened to double), NaN/Infinity as the strings "nan", "inf", "-inf", complex as
[real, imag], bool as true/false. A non-array answer is {"pytype": type name, "value": ...}.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
os.environ["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"  # only shortens a sleep after the end marker

import numpy as np  # noqa: E402

import make_fixtures  # noqa: E402

FIXTURES = ("pt_modes", "dtypes", "save_shape", "two_workers", "two_workers_ended")
REDUCTIONS = ("min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2")


def encode_scalar(x):
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (np.integer, int)):
        return int(x)
    if isinstance(x, (np.complexfloating, complex)):
        return [encode_scalar(x.real), encode_scalar(x.imag)]
    if isinstance(x, (np.floating, float)):
        f = float(x)
        if np.isnan(f):
            return "nan"
        if np.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(x, (str, np.str_)):
        return str(x)
    if isinstance(x, bytes):
        return x.decode("utf-8", "backslashreplace")
    return repr(x)


def encode_array(a):
    if isinstance(a, np.ndarray):
        if a.ndim == 0:
            nested = encode_scalar(a[()])
        else:
            nested = _nest(a)
        return {"dtype": str(a.dtype), "shape": list(a.shape), "value": nested}
    if isinstance(a, np.generic):
        return {"pytype": type(a).__name__, "value": encode_scalar(a)}
    if a is None or isinstance(a, (bool, int, float, str)):
        return {
            "pytype": type(a).__name__,
            "value": a if not isinstance(a, float) else encode_scalar(a),
        }
    return {"pytype": type(a).__name__, "value": repr(a)}


def _nest(a):
    if a.ndim == 1:
        return [encode_scalar(x) for x in a]
    return [_nest(sub) for sub in a]


def error(e):
    return {"error": type(e).__name__}


def attempt(fn, encode=lambda x: x):
    try:
        return encode(fn())
    except Exception as e:  # noqa: BLE001 (recording what smdebug raises is the point)
        return error(e)


def reduction_key(name, is_abs):
    return f"abs_{name}" if is_abs else name


def encode_reductions(rv):
    return {reduction_key(n, a): encode_array(v) for (n, a), v in sorted(rv.items())}


def _mode_name(mode):
    return None if mode is None else mode.name


def describe_trial(trial, modes):
    from smdebug.core.modes import ModeKeys  # noqa: PLC0415

    all_modes = [ModeKeys.GLOBAL, ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT]
    steps = {m.name: trial.steps(mode=m) for m in all_modes}
    steps_inc = {m.name: trial.steps(mode=m, show_incomplete_steps=True) for m in all_modes}
    global_steps = steps_inc["GLOBAL"]
    last = max(global_steps) if global_steps else -1
    probe_steps = sorted(set(range(0, last + 2)) | {100})
    info = {
        "workers": trial.workers(),
        "num_workers": trial.num_workers,
        "loaded_all_steps": trial.loaded_all_steps,
        "last_complete_step": trial.last_complete_step,
        "modes": sorted(m.name for m in trial.modes()),
        "steps": steps,
        "steps_with_incomplete": steps_inc,
        "mode_of_step": {
            str(g): [_mode_name(trial.mode(g)), trial.mode_step(g)] for g in probe_steps
        },
        "global_step": {
            m.name: {
                str(s): trial.global_step(m, s)
                for s in steps_inc[m.name] + [max(steps_inc[m.name] or [-1]) + 1]
            }
            for m in modes
        },
        "has_passed_step": {
            m.name: {
                str(s): attempt(lambda: trial.has_passed_step(s, mode=m).name) for s in probe_steps
            }
            for m in [ModeKeys.GLOBAL] + modes
        },
        "tensor_names": trial.tensor_names(),
        "tensor_names_by_mode": {m.name: trial.tensor_names(mode=m) for m in modes},
        "tensor_names_by_step": {
            m.name: {
                str(s): attempt(lambda: trial.tensor_names(step=s, mode=m))
                for s in steps_inc[m.name] + [max(steps_inc[m.name] or [-1]) + 1]
            }
            for m in [ModeKeys.GLOBAL] + modes
        },
        "collections": {
            name: trial.tensor_names(collection=name) for name in sorted(trial.collections())
        },
        "missing_tensor": attempt(lambda: trial.tensor("no/such/tensor"), lambda t: "returned"),
    }
    return info, global_steps


def describe_tensor(trial, name, modes, global_steps):
    from smdebug.core.modes import ModeKeys  # noqa: PLC0415

    t = trial.tensor(name)
    all_modes = [ModeKeys.GLOBAL, ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT]
    last = max(global_steps) if global_steps else -1
    multi = len(trial.workers()) > 1
    at = {}
    values = {}
    for step in sorted(set(global_steps) | {1, last + 1, 100}):
        entry = {
            "workers": attempt(lambda: sorted(t.workers(step))),
            "value": attempt(lambda: t.value(step), encode_array),
            "shape": attempt(lambda: list(t.shape(step))),
            "reduction_values": attempt(lambda: t.reduction_values(step), encode_reductions),
        }
        try:
            values[step] = t.value(step)
        except Exception:  # noqa: BLE001
            pass
        if multi:
            entry["by_worker"] = {
                w: {
                    "value": attempt(lambda: t.value(step, worker=w), encode_array),
                    "shape": attempt(lambda: list(t.shape(step, worker=w))),
                    "reduction_values": attempt(
                        lambda: t.reduction_values(step, worker=w), encode_reductions
                    ),
                }
                for w in trial.workers()
            }
        at[str(step)] = entry

    mode_values = {}
    for m in modes:
        mode_steps = trial.steps(mode=m, show_incomplete_steps=True)
        per_mode = {}
        for ms in sorted(set(mode_steps) | {max(mode_steps or [-1]) + 1}):
            try:
                v = t.value(ms, mode=m)
            except Exception as e:  # noqa: BLE001
                per_mode[str(ms)] = error(e)
                continue
            g = trial.global_step(m, ms)
            same = g in values and _same(values[g], v)
            per_mode[str(ms)] = {"global_step": g} if same else encode_array(v)
        mode_values[m.name] = per_mode

    own_steps = t.steps(show_incomplete_steps=True)
    reduction_value = {}
    if own_steps:
        first = own_steps[0]
        for red in REDUCTIONS:
            for is_abs in (False, True):
                reduction_value[reduction_key(red, is_abs)] = attempt(
                    lambda: t.reduction_value(first, red, abs=is_abs), encode_array
                )
    return {
        "steps": {m.name: t.steps(mode=m) for m in all_modes},
        "steps_with_incomplete": {
            m.name: t.steps(mode=m, show_incomplete_steps=True) for m in all_modes
        },
        "at": at,
        "mode_values": mode_values,
        "reduction_value": reduction_value,
    }


def _same(a, b):
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return a.tobytes() == b.tobytes()


# ----------------------------------------------------------------------------------------------
# What make_fixtures.py handed to smdebug.


def written_dtypes():
    failures = make_fixtures.dtype_write_failures()
    written = {}
    for step in (0, 1):
        for name, value in make_fixtures.dtype_cases(step).items():
            rec = (
                {"write_error": failures[(name, step)]}
                if (name, step) in failures
                else encode_array(value)
            )
            written.setdefault(name, {})[str(step)] = rec
    return written


def recomputed_mlp(args, steps):
    captured = make_fixtures.train_mlp(**args)
    return {
        name: {s: v for s, v in by_step.items() if s in steps} for name, by_step in captured.items()
    }


def check_against_read(trial, recomputed):
    """Fails when a value smdebug reads differs from the recomputation: keeps "written" honest."""
    checked = 0
    for name, by_step in recomputed.items():
        for step, want in by_step.items():
            try:
                got = trial.tensor(name).value(step)
            except Exception:  # noqa: BLE001 (unreadable: that is what "written" is for)
                continue
            if not np.array_equal(got, want):
                raise SystemExit(
                    f"{name} step {step}: smdebug read {got}, recomputation gave {want}"
                )
            checked += 1
    if checked == 0:
        raise SystemExit("recomputation check compared nothing")
    return checked


# ----------------------------------------------------------------------------------------------
# Compact JSON: objects are broken into lines down to DEPTH, everything deeper stays on one line.

DEPTH = 4
DEPTH_BY_TOP_KEY = {"written": 3}  # one line per (tensor, step)


def dumps(obj, depth=0, limit=DEPTH):
    if isinstance(obj, dict) and obj and depth < limit:
        pad = " " * (depth + 1)
        items = []
        for k, v in obj.items():
            child_limit = DEPTH_BY_TOP_KEY.get(k, limit) if depth == 0 else limit
            items.append(f"{pad}{json.dumps(k)}: {dumps(v, depth + 1, child_limit)}")
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dump(name, check=False):
    """Writes expected/<name>.json; with check, only compares and returns whether it is current."""
    import smdebug  # noqa: PLC0415
    from smdebug.core.modes import ModeKeys  # noqa: PLC0415
    from smdebug.trials import create_trial  # noqa: PLC0415

    trial = create_trial(os.path.join(HERE, name))
    modes = sorted(trial.modes(), key=lambda m: m.value)
    info, global_steps = describe_trial(trial, modes)
    out = {
        "fixture": name,
        "smdebug_version": smdebug.__version__,
        "numpy_version": np.__version__,
        "trial": info,
        "tensors": {
            n: describe_tensor(trial, n, modes, global_steps) for n in trial.tensor_names()
        },
    }
    if name == "dtypes":
        out["written"] = written_dtypes()
    elif name in ("pt_modes", "save_shape"):
        args = make_fixtures.PT_MODES_ARGS if name == "pt_modes" else make_fixtures.SAVE_SHAPE_ARGS
        recomputed = recomputed_mlp(args, set(trial.steps(ModeKeys.GLOBAL)))
        check_against_read(trial, recomputed)
        if name == "save_shape":
            out["written"] = {
                n: {str(s): encode_array(v) for s, v in sorted(by_step.items())}
                for n, by_step in sorted(recomputed.items())
            }
    path = os.path.join(HERE, "expected", f"{name}.json")
    text = dumps(out) + "\n"
    if check:
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        print(f"{'up to date' if same else 'STALE'}: {path}")
        return same
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {path}")
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(FIXTURES)}")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file is stale"
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(FIXTURES))
    if unknown:
        parser.error(f"unknown fixture(s) {unknown}; choose from {list(FIXTURES)}")
    results = [dump(name, check=args.check) for name in args.names or FIXTURES]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
