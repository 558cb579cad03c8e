"""Runs one training program of tests/training/programs/ with plain PyTorch measurements instead
of trainscope, to check that its planted problem is real (and that a healthy program trains).

    python tests/training/plain_measure.py PROGRAM.py --json OUT.json -- [program args]

The program imports ``trainscope.pytorch``; this script puts a stand-in package of that name first
on sys.path (written to a temporary folder). The stand-in has the user-facing Hook API that the
programs use (constructor, create_from_json_file, register_module, register_loss, set_mode,
save_tensor, save_scalar, record_tensor_value, get_collection, close) and measures with ordinary
PyTorch module, parameter and tensor hooks. Nothing from trainscope runs, so what it measures is
a fact about the training, whatever trainscope's rules later make of it.

What it records per step (the step boundary is each forward call of the registered module, as in
smdebug, or each hook.step() once the program calls it, as with trainscope's hook): mode, mode step,
wall time, the loss, mean |gradient| of every parameter, the relative update ||w - w_prev|| /
||w_prev|| of every parameter since the previous training step, NaN/inf in losses, parameters and
gradients, and for modules of the activation types (ReLU, Tanh, Sigmoid) the activity of their
units; the top module's input (per-channel mean of 4-D inputs, share of zeros, share of token 0 of
integer inputs); the variance of every ReLU module's input; the values given to save_tensor (labels,
predictions). OUT.json holds the per-step records and a summary.
"""

import json
import math
import os
import runpy
import sys
import tempfile
import time

class _Recorder:
    def __init__(self):
        self.steps = []  # one dict per step
        self.cur = None
        self.mode = "GLOBAL"
        self.mode_steps = {}
        self.hooks = []
        self.t0 = time.monotonic()
        self.prev_params = {}  # name -> tensor copy at the previous TRAIN/GLOBAL boundary
        self.act = {}  # (module name, call) -> [active counts per unit (tensor), samples]
        self.closed = False

    def boundary(self, hook):
        import torch

        ms = self.mode_steps.get(self.mode, -1) + 1
        self.mode_steps[self.mode] = ms
        self.cur = {
            "step": len(self.steps),
            "mode": self.mode,
            "mode_step": ms,
            "t": round(time.monotonic() - self.t0, 4),
            "losses": [],
            "grad_abs_mean": {},
            "nonfinite": [],
            "relu": {},
            "saturated": {},
            "relu_input_var": {},
            "active_share": {},
            "saved": {},
            "input": None,
        }
        self.calls = {}
        if self.mode in ("TRAIN", "GLOBAL"):
            upd = {}
            wvar = {}
            for name, p in hook._params:
                w = p.detach().to(torch.float64)
                if not torch.isfinite(w).all():
                    self.cur["nonfinite"].append(name)
                prev = self.prev_params.get(name)
                if prev is not None and prev.shape == w.shape:
                    denom = float(prev.norm()) + 1e-9
                    upd[name] = float((w - prev).norm()) / denom
                if w.numel() > 1:
                    wvar[name] = float(w.var(unbiased=False))
                self.prev_params[name] = w.clone()
            self.cur["update_ratio"] = upd
            self.cur["weight_var"] = wvar
        self.steps.append(self.cur)

    def io(self, name, module, inputs, output):
        import torch
        from torch import nn

        if self.cur is None:
            return
        k = self.calls.get(name, 0)
        self.calls[name] = k + 1
        key = f"{name}#{k}"
        x = inputs[0] if isinstance(inputs, (tuple, list)) and inputs else inputs
        if isinstance(module, nn.ReLU) and isinstance(output, torch.Tensor):
            self._activity(key, output.detach() > 0, self.cur["relu"])
            if isinstance(x, torch.Tensor):
                self.cur["relu_input_var"][key] = float(x.detach().double().var(unbiased=False))
        elif isinstance(module, (nn.Tanh, nn.Sigmoid)) and isinstance(x, torch.Tensor):
            xd = x.detach()
            if isinstance(module, nn.Tanh):
                active = (xd > -9.4999) & (xd < 9.4999)
            else:
                active = (xd > -23) & (xd < 16.99999)
            self._activity(key, active, self.cur["saturated"])
        if (hasattr(module, "_plain_top") and isinstance(x, torch.Tensor)
                and self.cur["input"] is None):
            xd = x.detach()
            info = {"dtype": str(xd.dtype), "shape": list(xd.shape),
                    "zero_fraction": float((xd == 0).double().mean())}
            if xd.is_floating_point():
                info["mean"] = float(xd.double().mean())
                if xd.dim() == 4:
                    info["channel_means"] = [float(v) for v in xd.double().mean(dim=(0, 2, 3))]
            else:
                info["token0_fraction"] = float((xd == 0).double().mean())
            self.cur["input"] = info

    def _activity(self, key, active, out):
        # Units as trainscope's DeadRelu counts them: rank 2 (N, F) -> F units; rank >= 4 -> C.
        import torch

        a = active
        # The layer's share of active values at this step (ReLU: > 0; tanh/sigmoid: inside the
        # linear range), whatever the split between units.
        self.cur["active_share"][key] = float(a.double().mean())
        if a.dim() == 1:
            a = a.unsqueeze(0)
        if a.dim() == 2:
            per_unit = a.double().sum(0)
            n = a.shape[0]
        elif a.dim() == 3:
            per_unit = a.double().sum((0, 1))
            n = a.shape[0] * a.shape[1]
        else:
            dims = [d for d in range(a.dim()) if d != 1]
            per_unit = a.double().sum(dims)
            n = a.numel() // a.shape[1]
        acc = self.act.get(key)
        if acc is None or acc[0].shape != per_unit.shape:
            acc = [torch.zeros_like(per_unit), 0]
            self.act[key] = acc
        acc[0] += per_unit
        acc[1] += n
        # Like the rules: judge once at least 100 samples have been seen, then start again.
        if acc[1] >= 100:
            inactive = (acc[0] < 0.01 * acc[1]).double().mean()
            out[key] = {"inactive_fraction": float(inactive), "samples": acc[1]}
            self.act[key] = [torch.zeros_like(per_unit), 0]

    def grad(self, name, g):
        import torch

        if self.cur is None or g is None:
            return
        gd = g.detach()
        self.cur["grad_abs_mean"][name] = float(gd.abs().double().mean())
        if not torch.isfinite(gd).all():
            self.cur["nonfinite"].append("gradient/" + name)

    def loss(self, name, value):
        if self.cur is None:
            return
        v = float(value.detach().double().mean())
        self.cur["losses"].append(v)
        if not math.isfinite(v):
            self.cur["nonfinite"].append(name)

    def saved(self, name, value):
        import torch

        if self.cur is None:
            return
        if isinstance(value, torch.Tensor):
            value = value.detach()
            if value.dim() >= 2 and value.shape[-1] > 1:
                value = value.argmax(-1)
            value = value.reshape(-1).tolist()
        self.cur["saved"].setdefault(name, []).extend(
            value if isinstance(value, list) else [value])


REC = _Recorder()


def _write_stub(folder):
    """Writes the stand-in trainscope package (sources below) under `folder`."""
    pkg = os.path.join(folder, "trainscope")
    os.makedirs(os.path.join(pkg, "pytorch"))
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(pkg, "modes.py"), "w") as f:
        f.write(_MODES)
    with open(os.path.join(pkg, "pytorch", "__init__.py"), "w") as f:
        f.write(_PYTORCH)


_MODES = '''
from enum import Enum
class ModeKeys(Enum):
    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4
TRAIN, EVAL, PREDICT, GLOBAL = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL
'''

_PYTORCH = '''
"""Stand-in for trainscope.pytorch that measures with plain PyTorch
(tests/training/plain_measure.py)."""
import json, os
import torch
from .. import modes
from ..modes import ModeKeys
import plain_measure as _pm

class SaveConfigMode:
    def __init__(self, save_interval=None, start_step=None, end_step=None, save_steps=None):
        self.save_interval = save_interval

class SaveConfig:
    def __init__(self, mode_save_configs=None, save_interval=None, start_step=None,
                 end_step=None, save_steps=None):
        self.save_interval = save_interval

class ReductionConfig:
    def __init__(self, reductions=None, abs_reductions=None, norms=None, abs_norms=None,
                 save_raw_tensor=False, save_shape=False):
        pass

class Collection:
    def __init__(self, name, include_regex=None, **kw):
        self.name = name
        self.include_regex = list(include_regex or [])
        self.save_config = None
        self.reduction_config = None
    def include(self, t):
        self.include_regex.extend(t if isinstance(t, (list, tuple)) else [t])
    def add_module_tensors(self, module, inputs=False, outputs=True):
        pass

_HOOK = None

def get_hook(*a, **k):
    return _HOOK

class Hook:
    def __init__(self, out_dir=None, export_tensorboard=False, tensorboard_dir=None, dry_run=False,
                 reduction_config=None, save_config=None, include_regex=None,
                 include_collections=None, save_all=False, include_workers="one", **kw):
        global _HOOK
        assert out_dir, "out_dir is required"
        self.out_dir = out_dir
        self._params = []
        self._collections = {}
        self._closed = False
        self._explicit = False  # hook.step() marks the steps (forward calls no longer do)
        _HOOK = self

    @classmethod
    def create_from_json_file(cls, json_file_path=None):
        path = json_file_path or os.environ.get("TRAINSCOPE_CONFIG")
        with open(path) as f:
            cfg = json.load(f)
        return cls(out_dir=cfg.get("LocalPath"))

    def register_module(self, module):
        top = module
        top._plain_top = True
        top_name = top._get_name()
        for name, sub in top.named_modules():
            mname = top_name if sub is top else name
            sub.register_forward_hook(
                lambda m, i, o, mname=mname: _pm.REC.io(mname, m, i, o))
        top.register_forward_pre_hook(
            lambda m, i: None if self._explicit else _pm.REC.boundary(self))
        for pname, p in top.named_parameters():
            name = f"{top_name}_{pname}"
            self._params.append((name, p))
            if p.requires_grad:
                p.register_hook(lambda g, name=name: _pm.REC.grad(name, g))

    register_hook = register_module

    def register_loss(self, loss_module):
        lname = loss_module._get_name()
        loss_module.register_forward_hook(lambda m, i, o: _pm.REC.loss(lname, o))

    def step(self):
        self._explicit = True
        _pm.REC.boundary(self)

    def set_mode(self, mode):
        _pm.REC.mode = mode.name if hasattr(mode, "name") else str(mode).upper()

    def save_tensor(self, tensor_name, tensor_value, collections_to_write="default"):
        _pm.REC.saved(tensor_name, tensor_value)

    def save_scalar(self, name, value, sm_metric=False, timestamp=None):
        _pm.REC.saved("scalar/" + name, float(value))

    def record_tensor_value(self, tensor_name, tensor_value):
        if "loss" in tensor_name.lower():
            _pm.REC.loss(tensor_name, tensor_value)
        else:
            _pm.REC.saved(tensor_name, tensor_value)

    def get_collection(self, name, create=True):
        return self._collections.setdefault(name, Collection(name))

    def add_collection(self, c):
        self._collections[c.name] = c

    def close(self):
        self._closed = True
'''


def summarize(steps):
    """The facts the checks and docstrings use, from the per-step records."""
    train = [s for s in steps if s["mode"] in ("TRAIN", "GLOBAL")]
    evals = [s for s in steps if s["mode"] == "EVAL"]
    out = {"steps": len(steps), "train_steps": len(train), "eval_steps": len(evals)}
    tl = [s["losses"][0] for s in train if s["losses"]]
    if tl:
        k = max(1, min(10, len(tl) // 4))
        out["train_loss_first"] = sum(tl[:k]) / k
        out["train_loss_last"] = sum(tl[-k:]) / k
        finite = [x for x in tl if math.isfinite(x)]
        out["train_loss_min"] = min(finite) if finite else None
    nonfinite = [s["step"] for s in steps if s["nonfinite"]]
    out["first_nonfinite_step"] = nonfinite[0] if nonfinite else None
    if nonfinite:
        out["first_nonfinite_tensors"] = steps[nonfinite[0]]["nonfinite"][:5]
    # Smallest mean |gradient| of each parameter over the training steps.
    gmin = {}
    for s in train:
        for n, v in s["grad_abs_mean"].items():
            if math.isfinite(v):
                gmin[n] = min(gmin.get(n, v), v)
    out["grad_abs_mean_min"] = gmin
    first_g = next((s for s in train if s["grad_abs_mean"]), None)
    out["grad_abs_mean_step0"] = first_g["grad_abs_mean"] if first_g else {}
    # Update ratios: max and min over steps per parameter.
    umax, umin = {}, {}
    for s in train:
        for n, v in s.get("update_ratio", {}).items():
            if math.isfinite(v):
                umax[n] = max(umax.get(n, v), v)
                umin[n] = min(umin.get(n, v), v)
    out["update_ratio_max"] = umax
    out["update_ratio_min"] = umin
    wv = {}
    for s in train:
        for n, v in s.get("weight_var", {}).items():
            wv.setdefault(n, []).append(v)
    out["weight_var_first_last"] = {n: [v[0], v[-1]] for n, v in wv.items()}
    for key in ("relu", "saturated"):
        worst = {}
        first = {}
        for s in steps:
            for n, d in s[key].items():
                f = d["inactive_fraction"]
                worst[n] = max(worst.get(n, 0.0), f)
                if n not in first and f > 0.5:
                    first[n] = s["step"]
        out[f"{key}_inactive_max"] = worst
        out[f"{key}_first_step_over_half"] = first
    var_first = next((s["relu_input_var"] for s in train if s["relu_input_var"]), {})
    out["relu_input_var_step0"] = var_first
    inp = next((s["input"] for s in train if s["input"]), None)
    out["input_step0"] = inp
    gaps = [b["t"] - a["t"] for a, b in zip(steps, steps[1:])]
    if gaps:
        i = max(range(len(gaps)), key=lambda j: gaps[j])
        out["max_step_gap_s"] = round(gaps[i], 3)
        out["max_step_gap_after_step"] = steps[i]["step"]
    # Per evaluation pass: mean loss, and the mean training loss of the phase before it.
    passes = []
    cur, train_acc = None, []
    for s in steps:
        if s["mode"] == "EVAL":
            if cur is None:
                cur = {"first_step": s["step"], "losses": [], "labels": [], "preds": [],
                       "train_mean": sum(train_acc) / len(train_acc) if train_acc else None}
                train_acc = []
            cur["losses"].extend(s["losses"])
            cur["labels"].extend(s["saved"].get("labels", []))
            cur["preds"].extend(s["saved"].get("predictions", []))
            cur["last_step"] = s["step"]
        else:
            if cur is not None:
                passes.append(cur)
                cur = None
            train_acc.extend(s["losses"])
    if cur is not None:
        passes.append(cur)
    ps = []
    for p in passes:
        e = {"first_step": p["first_step"], "last_step": p["last_step"],
             "val_loss": sum(p["losses"]) / len(p["losses"]) if p["losses"] else None,
             "train_loss": p["train_mean"]}
        if p["labels"] and len(p["labels"]) == len(p["preds"]):
            right = sum(1 for a, b in zip(p["labels"], p["preds"]) if a == b)
            e["accuracy"] = right / len(p["labels"])
            recall = {}
            for c in sorted(set(p["labels"])):
                idx = [i for i, a in enumerate(p["labels"]) if a == c]
                recall[c] = sum(1 for i in idx if p["preds"][i] == c) / len(idx)
            e["min_recall"] = min(recall.values())
            e["recall"] = recall
        ps.append(e)
    out["eval_passes"] = ps
    labels = [x for s in train for x in s["saved"].get("labels", [])]
    if labels:
        counts = {}
        for x in labels:
            counts[x] = counts.get(x, 0) + 1
        out["train_label_counts"] = counts
        preds = [x for s in train for x in s["saved"].get("predictions", [])]
        if len(preds) == len(labels):
            out["train_accuracy_last_500"] = (
                sum(1 for a, b in zip(labels[-500:], preds[-500:]) if a == b) / len(labels[-500:]))
    return out


def run_program(program, prog_args):
    """Runs one program under the stand-in hook; returns its result dict."""
    global REC
    REC = _Recorder()
    argv, cwd = sys.argv, os.getcwd()
    sys.argv = [program] + list(prog_args)
    t0 = time.monotonic()
    c0 = time.process_time()
    try:
        runpy.run_path(program, run_name="__main__")
    finally:
        sys.argv = argv
        os.chdir(cwd)
    return {"program": os.path.basename(program), "args": list(prog_args),
            "wall_s": round(time.monotonic() - t0, 2),
            "cpu_s": round(time.process_time() - c0, 2),
            "summary": summarize(REC.steps), "steps": REC.steps}


def main():
    """plain_measure.py PROGRAM.py [--json OUT.json] -- [program args]
    plain_measure.py --batch SPEC.json: SPEC is [{"program", "args", "json"}]; the programs run one
    after the other in this process (PyTorch is imported once)."""
    argv = sys.argv[1:]
    if "--" in argv:
        i = argv.index("--")
        own, prog_args = argv[:i], argv[i + 1:]
    else:
        own, prog_args = argv, []
    if own and own[0] == "--batch":
        with open(own[1]) as f:
            jobs = json.load(f)
    else:
        jobs = [{"program": own[0], "args": prog_args,
                 "json": own[own.index("--json") + 1] if "--json" in own else None}]
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as stub_dir:
        _write_stub(stub_dir)
        sys.path.insert(0, stub_dir)
        sys.path.insert(0, here)
        sys.modules["plain_measure"] = sys.modules[__name__]
        for job in jobs:
            result = run_program(job["program"], job["args"])
            if job.get("json"):
                with open(job["json"], "w") as f:
                    json.dump(result, f, indent=1, default=float)
            else:
                print(json.dumps(result["summary"], indent=1, default=float))


if __name__ == "__main__":
    main()
