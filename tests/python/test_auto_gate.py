"""The automatic mode's C callbacks (python/src/auto_gate.cc): each one on the states of a
session, checked against what the Python callback it stands for does (the Python callback is
called for anything but a quiet step), and whole trainings run with the C callbacks and with the
Python ones alone (the fallback when the extension lacks them) give the same trial.

The C functions are called here on a stand-in session (the attributes the session has); the
trainings run in their own processes (the mode installs process-wide PyTorch hooks).
"""

import json
import os
import pathlib
import subprocess
import sys
import weakref

import pytest
import torch

from trainscope import _core

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "training" / "auto_programs"


class Core:
    """A hook's _c that is not a _core.Hook: its boundary fails (-1) in the C forward pre-hook."""


class Hook:
    def __init__(self, saving=False, fast=True, explicit=True):
        self._saving = saving
        self._fast = fast
        self._explicit_steps = explicit
        self._c = Core()


class Session:
    """The attributes of AutoSession the C callbacks read, and records of what they called."""

    def __init__(self, hook=None):
        self.off = False
        self.hook = hook
        self._pending = False
        self._eval = False
        self._manual = None
        self._known = {}
        self._stepped = set()
        self._cycle = None
        self._loss_outputs = {}
        self._scaled = {}
        self.roots = []
        self.calls = []

    def slow(self, *args, **kwargs):
        self.calls.append(("slow", args, kwargs))
        return "slow"

    def after(self, module, flags):
        self.calls.append(("after", module, flags))

    def know(self, optimizer):
        self._known[id(optimizer)] = weakref.ref(optimizer)


def _forward_pre(s):
    return _core.auto_forward_pre_hook(s, s.slow, s.after, torch.is_grad_enabled,
                                       torch.is_inference_mode_enabled)


def _model(s):
    m = torch.nn.Linear(2, 2)
    s.roots.append(m)
    return m


def test_forward_pre_hook_does_nothing_inside_a_training_step():
    s = Session(Hook())
    m = _model(s)
    hook = _forward_pre(s)
    assert hook(m, ()) is None
    m.eval()  # an evaluation pass inside a training step (a GAN's): nothing either
    assert hook(m, ()) is None
    assert s.calls == []
    s.off = True
    s._pending = s._eval = True
    assert hook(m, ()) is None  # the session stood down
    s.off, s.hook = False, None
    assert hook(m, ()) is None  # no hook yet
    assert s.calls == []


def test_forward_pre_hook_makes_the_boundary_of_a_training_step():
    s = Session(Hook())
    m = _model(s)
    s._pending = True
    _forward_pre(s)(m, ())
    # The boundary ran (pending cleared), the stand-in's boundary failed: after(module, -1)
    # makes it again in Python.
    assert s._pending is False
    assert s.calls == [("after", m, -1)]


@pytest.mark.parametrize("case", ["eval_mode", "module_eval", "no_grad_one_model",
                                  "inference_mode", "slow_hook", "implicit_steps",
                                  "loss_outputs_held", "scaled_held"])
def test_forward_pre_hook_leaves_everything_else_to_python(case):
    s = Session(Hook(fast=case != "slow_hook", explicit=case != "implicit_steps"))
    m = _model(s)
    s._pending = True
    s._eval = case == "eval_mode"
    if case == "module_eval":
        m.eval()
    if case == "loss_outputs_held":
        s._loss_outputs = {1: None}
    if case == "scaled_held":
        s._scaled = {1: None}
    hook = _forward_pre(s)
    args = (m, (torch.zeros(1),))
    if case == "no_grad_one_model":
        with torch.no_grad():
            assert hook(*args) == "slow"
    elif case == "inference_mode":
        with torch.inference_mode():
            assert hook(*args) == "slow"
    else:
        assert hook(*args) == "slow"
    assert s.calls == [("slow", args, {})]
    assert s._pending is True  # untouched: Python decides


def test_forward_pre_hook_without_grad_and_two_models_is_training():
    """no_grad() marks evaluation only with a single model (a GAN's generator pass under
    no_grad is part of its training step)."""
    s = Session(Hook())
    m = _model(s)
    _model(s)
    s._pending = True
    with torch.no_grad():
        _forward_pre(s)(m, ())
    assert s.calls == [("after", m, -1)]


def test_optimizer_pre_hook_returns_at_once_for_a_known_optimizer_on_a_quiet_step():
    s = Session(Hook())
    opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    pre = _core.auto_optimizer_pre_hook(s, s.slow)
    s.know(opt)
    assert pre(opt, (), {}) is None
    assert s.calls == []
    other = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    for state in ("unknown", "stepped", "saving", "pending", "eval", "manual", "no_hook"):
        s.calls.clear()
        target = other if state == "unknown" else opt
        s._stepped = {id(opt)} if state == "stepped" else set()
        s.hook = None if state == "no_hook" else Hook(saving=state == "saving")
        s._pending, s._eval = state == "pending", state == "eval"
        s._manual = [] if state == "manual" else None
        assert pre(target, (1,), {"k": 2}) == "slow", state
        assert s.calls == [("slow", (target, (1,), {"k": 2}), {})], state
    s.off = True
    s.calls.clear()
    assert pre(other, (), {}) is None
    assert s.calls == []


def test_optimizer_pre_hook_sees_a_new_object_at_a_dead_optimizers_address():
    s = Session(Hook())
    pre = _core.auto_optimizer_pre_hook(s, s.slow)
    opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    s._known[id(opt)] = weakref.ref(torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1))
    assert pre(opt, (), {}) == "slow"  # the weak reference is not this optimizer


def test_optimizer_post_hook_ends_the_step_when_every_optimizer_stepped():
    s = Session(Hook())
    g = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    d = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    post = _core.auto_optimizer_post_hook(s, s.slow)
    assert post(g, (), {}) == "slow"  # the optimizers of a step are not known yet
    s._cycle = {id(g), id(d)}
    assert post(d, (), {}) is None
    assert s._pending is False and s._stepped == {id(d)}
    assert post(g, (), {}) is None
    assert s._pending is True and s._stepped == set()
    assert s.calls == [("slow", (g, (), {}), {})]
    s._pending = False
    s.hook = None
    assert post(g, (), {}) is None and s._stepped == set() and not s._pending
    s.hook, s.off = Hook(), True
    assert post(g, (), {}) is None and s._stepped == set() and not s._pending


def test_optimizer_hooks_remember_the_usual_step_and_still_see_every_change():
    # The C hooks keep the last known and fresh optimizer and a cycle of one optimizer; what the
    # session changes between steps still counts.
    s = Session(Hook())
    pre = _core.auto_optimizer_pre_hook(s, s.slow)
    post = _core.auto_optimizer_post_hook(s, s.slow)
    opt = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    other = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    s.know(opt)
    s._cycle = {id(opt)}
    for _ in range(3):  # the usual steps: nothing reaches Python
        assert pre(opt, (), {}) is None
        assert post(opt, (), {}) is None
        assert s._pending is True and s._stepped == set()
        s._pending = False
    assert s.calls == []
    s._stepped = {id(opt)}  # it stepped already in this step
    assert pre(opt, (), {}) == "slow"
    s._stepped = set()
    s._known = {}  # a session that knows nothing (a new dict)
    assert pre(opt, (), {}) == "slow"
    s.know(opt)
    assert pre(opt, (), {}) is None
    assert pre(other, (), {}) == "slow"  # not known
    s.calls.clear()
    s._cycle = {id(opt), id(other)}  # a step of two optimizers (a new set)
    assert post(opt, (), {}) is None
    assert s._pending is False and s._stepped == {id(opt)}
    assert post(other, (), {}) is None
    assert s._pending is True and s._stepped == set()
    s._pending = False
    s._cycle = {id(other)}
    assert post(opt, (), {}) is None  # not the cycle's optimizer: noted, no boundary
    assert s._pending is False and s._stepped == {id(opt)}
    assert s.calls == []


def test_backward_wrapper_calls_the_original_on_a_quiet_step_and_python_otherwise():
    calls = []

    def original(*args, **kwargs):
        calls.append(("original", args, kwargs))
        return "original"

    s = Session(Hook())
    backward = _core.auto_backward(s, original, s.slow)
    assert backward.__name__ == "backward"
    assert backward(1, 2, inputs=3) == "original"
    assert calls == [("original", (1, 2), {"inputs": 3})] and s.calls == []
    for state in ("saving", "pending", "eval", "manual", "no_hook"):
        s.calls.clear()
        s.hook = None if state == "no_hook" else Hook(saving=state == "saving")
        s._pending, s._eval = state == "pending", state == "eval"
        s._manual = [] if state == "manual" else None
        assert backward(1, retain_graph=True) == "slow", state
        assert s.calls == [("slow", (1,), {"retain_graph": True})], state
    s.off = True
    calls.clear()
    assert backward(5) == "original" and calls == [("original", (5,), {})]


def test_a_broken_session_falls_back_to_python():
    """An attribute the C callbacks read is missing: the Python callback decides (it reports)."""

    class Broken:
        def slow(self, *args, **kwargs):
            return "slow"

    b = Broken()
    assert _core.auto_optimizer_pre_hook(b, b.slow)(object(), (), {}) == "slow"
    assert _core.auto_optimizer_post_hook(b, b.slow)(object(), (), {}) == "slow"
    assert _core.auto_backward(b, lambda *a: "original", b.slow)(1) == "slow"
    assert _core.auto_forward_pre_hook(b, b.slow, b.slow, torch.is_grad_enabled,
                                       torch.is_inference_mode_enabled)(object(), ()) == "slow"


# ---- whole trainings: the C callbacks and the Python ones give the same trial ----------------

# `python -m trainscope.auto PROGRAM ARGS...`, with the C callbacks removed from _core first when
# PYTHON_ONLY (the session then uses its Python callbacks, as with an extension that lacks them),
# printing at exit which callbacks the session used.
_RUN = """
import atexit, sys
import trainscope._core as core
if PYTHON_ONLY:
    for name in ("auto_forward_pre_hook", "auto_optimizer_pre_hook", "auto_optimizer_post_hook",
                 "auto_backward"):
        delattr(core, name)

def which():
    import torch
    from trainscope.auto import _capture
    s = _capture.current()
    print("CALLBACKS", type(s._forward_pre).__name__, type(torch.autograd.backward).__name__,
          file=sys.stderr)

atexit.register(which)
from trainscope.auto.__main__ import main
sys.exit(main(ARGS))
"""


def _env(config):
    import trainscope

    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("TRAINSCOPE", "SMDEBUG", "SMPROFILER")):
            del env[key]
    pkg_parent = str(pathlib.Path(trainscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env["TRAINSCOPE_CONFIG"] = str(config)
    return env


@pytest.mark.parametrize("program,args", [
    ("plain_loop.py", ["--steps", "12"]),  # with evaluation passes between training steps
    ("tiny_gan.py", []),                   # two optimizers and two models a step
    ("grad_accum.py", []),                 # several backward() calls a step
])
def test_the_c_and_python_callbacks_give_the_same_trial(tmp_path, program, args):
    import numpy as np

    from trainscope import create_trial, modes

    trials = {}
    for kind in ("c", "python"):
        d = tmp_path / kind
        d.mkdir()
        out = d / "trial"
        cfg = d / "hook.json"
        cfg.write_text(json.dumps({
            "LocalPath": str(out), "HookParameters": {"save_interval": "3"},
            "CollectionConfigurations": [{"CollectionName": c} for c in (
                "weights", "gradients", "losses", "relu_output")]}))
        script = d / "run.py"
        script.write_text(f"PYTHON_ONLY = {kind == 'python'}\n"
                          f"ARGS = {[str(PROGRAMS / program), *args]!r}\n" + _RUN)
        p = subprocess.run([sys.executable, str(script)], env=_env(cfg), capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        expected = ("CALLBACKS builtin_function_or_method builtin_function_or_method"
                    if kind == "c" else "CALLBACKS method function")
        assert expected in p.stderr, p.stderr
        trials[kind] = create_trial(str(out))
    c, py = trials["c"], trials["python"]
    assert c.steps() and c.steps() == py.steps()
    for mode in (modes.TRAIN, modes.EVAL):
        assert c.steps(mode=mode) == py.steps(mode=mode), mode
    assert set(c.tensor_names()) == set(py.tensor_names())
    compared = 0
    for name in c.tensor_names():
        a, b = c.tensor(name), py.tensor(name)
        assert a.steps() == b.steps(), name
        for step in a.steps():
            assert np.array_equal(a.value(step), b.value(step)), (name, step)
            compared += 1
    assert compared > 20


def test_instances_of_is_issubclass_of_each_type_as_the_python_scan():
    import abc
    import gc

    from trainscope.auto import _discover

    class Marked(abc.ABC):  # a __subclasscheck__ (ABCMeta's) decides, as issubclass would
        pass

    class Plain:
        pass

    Marked.register(Plain)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    plain = Plain()
    objects = gc.get_objects() + [plain, model, opt, model]
    kinds = (torch.optim.Optimizer, torch.nn.Module)
    found = _core.instances_of(objects, kinds)
    python = [o for o in objects if issubclass(type(o), kinds)]
    assert found == python  # the same objects, in the same order
    assert sum(o is model for o in found) == 3 and any(o is opt for o in found)  # gc's + 2
    assert any(o is model[0] for o in found)
    assert _core.instances_of(objects, Marked)[-1] is plain
    assert any(o is opt for o in _discover.live_objects(torch.optim.Optimizer))

    class Refuses(type):
        def __subclasscheck__(cls, sub):
            raise RuntimeError("no")

    with pytest.raises(RuntimeError, match="no"):
        _core.instances_of([1], Refuses("R", (), {}))
