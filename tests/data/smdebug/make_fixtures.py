#!/usr/bin/env python
"""Writes small smdebug trials that trainscope's readers are tested against.

Run with the project virtualenv (smdebug 1.0.34, torch, numpy 2.x):

    .venv/bin/python tests/data/smdebug/make_fixtures.py            # all fixtures
    .venv/bin/python tests/data/smdebug/make_fixtures.py dtypes     # just one

Each fixture folder tests/data/smdebug/<name>/ is deleted and written again. Tensor values are
deterministic (fixed seeds, CPU, one torch thread; the script re-executes itself with
PYTHONHASHSEED=0 so collections files list collections in a stable order); the bytes are not quite:
smdebug stamps every event with the wall time, and names TensorBoard files after the process id and
host name.

Everything is written by smdebug through its public API, the way a user would call it:
  pt_modes            smdebug.pytorch.Hook on an MLP, 6 TRAIN + 3 EVAL steps, reductions, TB export
  dtypes              smdebug.core.writer.FileWriter, one tensor per (dtype, shape)
  save_shape          Hook with ReductionConfig(save_raw_tensor=True, save_shape=True)
  two_workers         a real 2-process gloo run with include_workers="all"; worker_1's index file
                      for the last step is then removed and so is the end marker (worker_1 "lags")
  two_workers_ended   the same files plus training_job_end.ts

numpy 2.x: smdebug 1.0.34 calls ndarray.tostring() (gone in numpy 2.3) and float() on a (1,)-array
(an error in numpy 2.x). smdebug_numpy2_compat.py (beside this file) patches those two calls from
the outside; see its docstring. Nothing else of smdebug is changed.

The values handed to smdebug are reproducible without smdebug: dump_expected.py imports
dtype_cases() and train_mlp() from here to record what was written where smdebug cannot read it
back.
"""

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

os.environ.setdefault("SMDEBUG_LOG_LEVEL", "error")
os.environ.pop("TRAINING_JOB_NAME", None)  # off SageMaker, so hooks write the end marker

import numpy as np  # noqa: E402

import smdebug_numpy2_compat  # noqa: E402

SEED = 1234
END_MARKER = "training_job_end.ts"
ALL_FIXTURES = ("pt_modes", "dtypes", "save_shape", "two_workers")

# The reductions pt_modes asks the hook for.
PT_REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
PT_NORMS = ["l1", "l2"]
PT_ABS_REDUCTIONS = ["mean"]


# ----------------------------------------------------------------------------------------------
# PyTorch training shared by pt_modes, save_shape and the recomputation in dump_expected.py.


def _torch():
    import torch  # noqa: PLC0415 (dtypes needs no torch)

    return torch


def make_mlp(sizes):
    """An MLP Linear(sizes[0], sizes[1]) - ReLU - Linear(sizes[1], sizes[2]), class name Mlp."""
    torch = _torch()

    class Mlp(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(sizes[0], sizes[1])
            self.relu = torch.nn.ReLU()
            self.fc2 = torch.nn.Linear(sizes[1], sizes[2])

        def forward(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    return Mlp()


def make_batches(seed, count, batch, n_in, n_out):
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(batch, n_in, generator=gen), torch.randint(0, n_out, (batch,), generator=gen))
        for _ in range(count)
    ]


def train_mlp(sizes, train_steps, eval_steps, seed, hook=None, before_register=None, extras=False):
    """Trains an Mlp for train_steps TRAIN then eval_steps EVAL forwards; returns what it computed.

    hook: an smdebug.pytorch.Hook or None. The hook does not change the computation, so running
    with hook=None reproduces every value the hook saw.
    before_register(hook, net): called before register_module (to add module collections).
    extras: also call hook.save_scalar / hook.save_tensor each step.
    Returns {tensor name as smdebug names it: {global step: np.ndarray}} for every step: parameters
    as they were at the step's forward, gradients after its backward, relu output, loss.
    """
    torch = _torch()
    torch.set_num_threads(1)  # same arithmetic order whatever the machine
    torch.manual_seed(seed)
    net = make_mlp(sizes)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    captured = {}

    def keep(name, step, value):
        captured.setdefault(name, {})[step] = value.detach().clone().numpy()

    relu_out = []
    net.relu.register_forward_hook(lambda m, i, o: relu_out.append(o))
    if hook is not None:
        import smdebug.pytorch as smd  # noqa: PLC0415

        if before_register is not None:
            before_register(hook, net)
        hook.register_module(net)
        hook.register_loss(loss_fn)
        hook.set_mode(smd.modes.TRAIN)

    batches = make_batches(seed + 1, train_steps + eval_steps, 4, sizes[0], sizes[2])
    step = 0
    for x, y in batches[:train_steps]:
        for pname, p in net.named_parameters():
            keep(f"Mlp_{pname}", step, p)
        if hook is not None and extras:
            hook.save_tensor("labels", y, "custom")
            hook.save_tensor("first_input_fp16", x[0].half(), "custom")
        opt.zero_grad()
        relu_out.clear()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        keep("relu_output_0", step, relu_out[0])
        keep("CrossEntropyLoss_output_0", step, loss)
        for pname, p in net.named_parameters():
            keep(f"gradient/Mlp_{pname}", step, p.grad)
        if hook is not None and extras:
            hook.save_scalar("lr", 0.1)
            hook.save_scalar("train_loss", float(loss.item()))
        step += 1

    if hook is not None:
        hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for x, y in batches[train_steps:]:
            for pname, p in net.named_parameters():
                keep(f"Mlp_{pname}", step, p)
            relu_out.clear()
            logits = net(x)
            loss = loss_fn(logits, y)
            keep("relu_output_0", step, relu_out[0])
            keep("CrossEntropyLoss_output_0", step, loss)
            if hook is not None and extras:
                accuracy = float((logits.argmax(dim=1) == y).float().mean())
                hook.save_scalar("eval_accuracy", accuracy)
            step += 1
    return captured


PT_MODES_ARGS = dict(sizes=(8, 16, 4), train_steps=6, eval_steps=3, seed=SEED)
SAVE_SHAPE_ARGS = dict(sizes=(4, 3, 2), train_steps=3, eval_steps=0, seed=SEED + 10)


def write_pt_modes(out):
    import smdebug.pytorch as smd  # noqa: PLC0415

    reduction_config = smd.ReductionConfig(
        reductions=PT_REDUCTIONS,
        norms=PT_NORMS,
        abs_reductions=PT_ABS_REDUCTIONS,
        save_raw_tensor=True,
    )
    hook = smd.Hook(
        out_dir=out,
        export_tensorboard=True,
        save_config=smd.SaveConfig(save_interval=2),
        reduction_config=reduction_config,
        include_collections=[
            "weights",
            "biases",
            "gradients",
            "losses",
            "relu_activations",
            "custom",
        ],
    )

    def add_module_collections(h, net):
        h.get_collection("relu_activations").add_module_tensors(
            net.relu, inputs=False, outputs=True
        )
        h.get_collection("custom").include("^labels$")
        h.get_collection("custom").include("^first_input_fp16$")
        # TensorBoard histograms only for weights and biases (keeps the fixture small).
        for name in ("gradients", "relu_activations", "custom"):
            h.get_collection(name).save_histogram = False

    train_mlp(hook=hook, before_register=add_module_collections, extras=True, **PT_MODES_ARGS)
    hook.close()


def write_save_shape(out):
    import smdebug.pytorch as smd  # noqa: PLC0415

    hook = smd.Hook(
        out_dir=out,
        save_config=smd.SaveConfig(save_interval=1),
        reduction_config=smd.ReductionConfig(save_raw_tensor=True, save_shape=True),
        include_collections=["weights", "biases", "gradients", "losses"],
    )

    def weights_with_reductions(h, net):
        # weights also save hook-side reductions; biases and gradients only raw + shape.
        h.get_collection("weights").reduction_config = smd.ReductionConfig(
            reductions=["mean"], norms=["l2"], save_raw_tensor=True, save_shape=True
        )

    train_mlp(hook=hook, before_register=weights_with_reductions, **SAVE_SHAPE_ARGS)
    hook.close()


# ----------------------------------------------------------------------------------------------
# dtypes: one tensor per (dtype, shape) through smdebug's FileWriter.

DTYPE_NAMES = (
    "float16", "float32", "float64",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "bool", "complex64", "complex128",
)  # fmt: skip


def _dtype_values(dtype, count, rng):
    """count values of dtype, including the type's edge values first."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        info = np.finfo(dt)
        edges = [0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, info.max, info.min, info.tiny, info.eps]
        body = rng.standard_normal(count)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        edges = [0, 1, info.max, info.min, info.max - 1]
        body = rng.integers(info.min, info.max, size=count, dtype=dt, endpoint=True)
    elif dt.kind == "b":
        edges = [True, False]
        body = rng.integers(0, 2, size=count).astype(bool)
    else:  # complex
        edges = [0j, complex(1.5, -2.25), complex(np.nan, 1.0), complex(np.inf, -np.inf)]
        body = rng.standard_normal(count) + 1j * rng.standard_normal(count)
    values = np.concatenate([np.array(edges, dtype=dt), np.asarray(body).astype(dt)])
    return values[:count]


def dtype_cases(step):
    """{tensor name: np.ndarray} written at global step `step` (0 or 1) of the dtypes fixture.

    Names are "<dtype>/<shape kind>" with shape kinds scalar (0-d), vec (5,), mat (2, 3),
    empty (0,) and empty2d (2, 0); plus strings: "str/vec", "str/empty", and two that smdebug
    cannot write ("str/mat", "bytes/vec"; see dtype_write_failures()).
    """
    rng = np.random.default_rng(SEED + step)
    cases = {}
    for name in DTYPE_NAMES:
        flat = _dtype_values(name, 12, rng)
        if step == 1:
            flat = flat[::-1].copy()
        cases[f"{name}/scalar"] = flat[2:3].reshape(())  # a 0-d ndarray, not a numpy scalar
        cases[f"{name}/vec"] = flat[:5].copy()
        cases[f"{name}/mat"] = flat[6:12].reshape(2, 3)
        cases[f"{name}/empty"] = np.zeros((0,), dtype=name)
        cases[f"{name}/empty2d"] = np.zeros((2, 0), dtype=name)
    words = ["", "a", "héllo", "日本語", "tab\tnl\n"]
    cases["str/vec"] = np.array(words if step == 0 else words[::-1])
    cases["str/empty"] = np.array([], dtype="<U1")
    # smdebug's writer only encodes 1-d arrays of str; these two raise in FileWriter.write_tensor.
    cases["str/mat"] = np.array([["a", "b"], ["c", "d"]])
    cases["bytes/vec"] = np.array([b"x", b"yz"])
    return cases


def write_dtypes(out):
    """Writes global steps 0 and 1 in mode GLOBAL; returns {(name, step): exception class name}."""
    from smdebug.core.collection import Collection  # noqa: PLC0415
    from smdebug.core.collection_manager import CollectionManager  # noqa: PLC0415
    from smdebug.core.modes import ModeKeys  # noqa: PLC0415
    from smdebug.core.writer import FileWriter  # noqa: PLC0415

    smdebug_numpy2_compat.install()
    failures = {}
    names = set()
    for step in (0, 1):
        writer = FileWriter(trial_dir=out, worker="worker_0", step=step)
        for name, value in dtype_cases(step).items():
            try:
                writer.write_tensor(tdata=value, tname=name, mode=ModeKeys.GLOBAL, mode_step=step)
                names.add(name)
            except Exception as e:  # noqa: BLE001 (record what smdebug's writer refuses)
                failures[(name, step)] = type(e).__name__
        writer.close()
    manager = CollectionManager()
    manager.add(Collection("dtypes", tensor_names=sorted(names)))
    manager.set_num_workers(1)
    manager.export(out, "worker_0_collections.json")
    open(os.path.join(out, END_MARKER), "w").close()
    return failures


def dtype_write_failures():
    """What write_dtypes could not write, found without writing anything to the fixture."""
    import tempfile  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        return write_dtypes(os.path.join(tmp, "trial"))


# ----------------------------------------------------------------------------------------------
# two_workers: a real 2-process run on the gloo backend.

TWO_WORKERS_ARGS = dict(sizes=(4, 3, 2), train_steps=4, eval_steps=0)


def _two_workers_rank(rank, out, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    smdebug_numpy2_compat.install()
    import torch.distributed as dist  # noqa: PLC0415

    import smdebug.pytorch as smd  # noqa: PLC0415

    dist.init_process_group("gloo", rank=rank, world_size=2)
    dist.barrier()  # both ranks construct their Hook before anyone can write the end marker
    hook = smd.Hook(
        out_dir=out,
        include_workers="all",
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    train_mlp(hook=hook, seed=SEED + 100 * (rank + 1), **TWO_WORKERS_ARGS)
    dist.barrier()
    hook.close()
    dist.barrier()
    dist.destroy_process_group()


def write_two_workers(out, out_ended):
    import multiprocessing  # noqa: PLC0415
    import socket  # noqa: PLC0415

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_two_workers_rank, args=(r, out, port)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"two_workers: ranks exited with {[p.exitcode for p in procs]}")
    last = TWO_WORKERS_ARGS["train_steps"] - 1
    # worker_1 lags: its last step's event file is on disk, its index file is not yet.
    os.remove(os.path.join(out, "index", "000000000", f"{last:012d}_worker_1.json"))
    shutil.copytree(out, out_ended)
    os.remove(os.path.join(out, END_MARKER))
    if not os.path.exists(os.path.join(out_ended, END_MARKER)):
        raise SystemExit("two_workers: smdebug did not write the end marker")


# ----------------------------------------------------------------------------------------------


def check_layout(out, expected_files):
    """Fails loudly when smdebug laid the trial out differently than the fixture promises."""
    found = sorted(
        os.path.relpath(os.path.join(d, f), out)
        for d, _, files in os.walk(out)
        for f in files
        if not os.path.relpath(d, out).startswith("tensorboard")
    )
    if found != sorted(expected_files):
        raise SystemExit(
            f"{out}: unexpected layout\n found {found}\n want {sorted(expected_files)}"
        )


def _step_files(steps, workers=("worker_0",)):
    files = []
    for s in steps:
        for w in workers:
            files.append(f"events/{s:012d}/{s:012d}_{w}.tfevents")
            files.append(f"index/{s // 1000:09d}/{s:012d}_{w}.json")
    return files


def _collections_files(workers=("worker_0",)):
    return [f"collections/000000000/{w}_collections.json" for w in workers]


def main(argv=None):
    if os.environ.get("PYTHONHASHSEED") != "0":
        # smdebug writes collections in set order; a fixed hash seed keeps the files stable.
        env = dict(os.environ, PYTHONHASHSEED="0")
        args = sys.argv[1:] if argv is None else list(argv)
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *args], env)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"any of {', '.join(ALL_FIXTURES)}"
    )
    parser.add_argument("--out", default=HERE, help="parent folder of the fixtures (default: here)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(ALL_FIXTURES))
    if unknown:
        parser.error(f"unknown fixture(s) {unknown}; choose from {list(ALL_FIXTURES)}")
    smdebug_numpy2_compat.install()
    for name in args.names or ALL_FIXTURES:
        out = os.path.join(args.out, name)
        shutil.rmtree(out, ignore_errors=True)
        if name == "pt_modes":
            write_pt_modes(out)
            check_layout(out, _step_files([0, 2, 4, 6, 8]) + _collections_files() + [END_MARKER])
            tb = sorted(os.listdir(os.path.join(out, "tensorboard")))
            if tb != ["EVAL", "TRAIN"]:
                raise SystemExit(f"{out}: tensorboard/ holds {tb}")
        elif name == "dtypes":
            write_dtypes(out)
            check_layout(out, _step_files([0, 1]) + _collections_files() + [END_MARKER])
        elif name == "save_shape":
            write_save_shape(out)
            check_layout(out, _step_files([0, 1, 2]) + _collections_files() + [END_MARKER])
        elif name == "two_workers":
            ended = out + "_ended"
            shutil.rmtree(ended, ignore_errors=True)
            write_two_workers(out, ended)
            workers = ("worker_0", "worker_1")
            files = _step_files(range(4), workers) + _collections_files(workers)
            files.remove("index/000000000/000000000003_worker_1.json")
            check_layout(out, files)
            check_layout(ended, files + [END_MARKER])
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
