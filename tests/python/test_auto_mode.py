"""The automatic mode's pieces, without the supervisor: `python -m trainscope.auto` on unmodified
programs with a hook configuration written here, the boot folder's sitecustomize, and the cases
the mode must leave alone (a script with its own hook, no configuration, no torch).

Every test runs a real Python process: the mode installs process-wide PyTorch hooks, which must
not leak into the test process.
"""

import json
import math
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = REPO / "tests" / "training" / "auto_programs"


def _env(config=None, **extra):
    import trainscope

    env = dict(os.environ)
    for key in ("TRAINSCOPE_AUTO", "TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH",
                "TRAINSCOPE_PROFILER_CONFIG", "SMPROFILER_CONFIG_PATH"):
        env.pop(key, None)
    pkg_parent = str(pathlib.Path(trainscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    if config is not None:
        env["TRAINSCOPE_CONFIG"] = str(config)
    env.update(extra)
    return env


def _config(tmp_path, collections=("weights", "gradients", "losses", "relu_output"), interval=1):
    out = tmp_path / "trial"
    cfg = {
        "LocalPath": str(out),
        "HookParameters": {"save_interval": str(interval)},
        "CollectionConfigurations": [{"CollectionName": c} for c in collections],
    }
    path = tmp_path / "hook.json"
    path.write_text(json.dumps(cfg))
    return path, out


def _auto(args, env, timeout=240):
    return subprocess.run([sys.executable, "-m", "trainscope.auto", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def _trial(path):
    from trainscope import create_trial

    return create_trial(str(path))


def _auto_script(tmp_path, text, collections):
    """Runs the script `text` in the automatic mode with `collections`; (the run, the trial)."""
    cfg, out = _config(tmp_path, collections=collections)
    script = tmp_path / "script.py"
    script.write_text(text)
    return _auto([str(script)], _env(cfg)), out


def test_python_m_auto_captures_an_unmodified_loop(tmp_path):
    from trainscope import modes

    cfg, out = _config(tmp_path)
    p = _auto([str(PROGRAMS / "plain_loop.py"), "--steps", "12"], _env(cfg))
    assert p.returncode == 0, p.stderr
    t = _trial(out)
    assert t.steps(mode=modes.TRAIN) == list(range(12))
    # 1 validation pass (after step 10): a batch is one EVAL step.
    assert t.steps(mode=modes.EVAL) == [0]
    assert t.tensor("CrossEntropyLoss_output_0").steps(mode=modes.EVAL) == [0]
    w = t.tensor("Net_fc1.weight")
    g = t.tensor("gradient/Net_fc1.weight")
    # Step k's weights are the ones step k's gradient was computed with: SGD with momentum 0.9
    # and lr 0.1 from step 0 gives w1 = w0 - 0.1 * g0.
    w0, w1, g0 = (w.value(0, mode=modes.TRAIN), w.value(1, mode=modes.TRAIN),
                  g.value(0, mode=modes.TRAIN))
    assert abs(w1 - (w0 - 0.1 * g0)).max() < 1e-6


def _hooked_plain_loop(tmp_path):
    """plain_loop.py with the lines a user of the explicit hook writes."""
    src = (PROGRAMS / "plain_loop.py").read_text()
    edits = [
        ("criterion = nn.CrossEntropyLoss()\n",
         "criterion = nn.CrossEntropyLoss()\n"
         "import trainscope.pytorch as ts\n"
         "hook = ts.Hook.create_from_json_file()\n"
         "hook.register_module(model)\n"
         "hook.register_loss(criterion)\n"
         "hook.set_mode(ts.modes.TRAIN)\n"),
        ("        model.eval()\n", "        hook.set_mode(ts.modes.EVAL)\n        model.eval()\n"),
        ("        model.train()\n",
         "        model.train()\n        hook.set_mode(ts.modes.TRAIN)\n"),
    ]
    for old, new in edits:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    path = tmp_path / "plain_loop_hooked.py"
    path.write_text(src)
    return path


def test_automatic_trial_equals_the_hooked_one(tmp_path):
    """The same training with the explicit hook and without: same steps, modes, names, and
    the same bits in every tensor, but for the first step's activations and losses (the
    automatic mode finds the modules at the first optimizer step, after that forward pass)."""
    import numpy as np

    from trainscope import modes

    runs = {}
    for kind in ("auto", "hooked"):
        d = tmp_path / kind
        d.mkdir()
        cfg, out = _config(d, collections=("weights", "biases", "gradients", "losses",
                                           "relu_output"))
        script = PROGRAMS / "plain_loop.py" if kind == "auto" else _hooked_plain_loop(d)
        p = _auto([str(script), "--steps", "12"], _env(cfg))
        assert p.returncode == 0, p.stderr
        runs[kind] = _trial(out)
    auto, hooked = runs["auto"], runs["hooked"]
    for mode in (modes.TRAIN, modes.EVAL):
        assert auto.steps(mode=mode) == hooked.steps(mode=mode), mode
    assert auto.steps() == hooked.steps()
    assert set(auto.tensor_names()) == set(hooked.tensor_names())
    compared = 0
    params = set()
    for c in ("weights", "biases", "gradients"):
        params |= set(hooked.tensor_names(collection=c))
    for name in hooked.tensor_names():
        a, h = auto.tensor(name), hooked.tensor(name)
        steps = h.steps()
        if name not in params:  # a forward pass's output: not seen at the first step
            steps = steps[1:]
        assert a.steps() == steps, name
        for step in steps:
            assert np.array_equal(a.value(step), h.value(step)), (name, step)
            compared += 1
    assert compared > 100


def test_script_with_its_own_hook_is_left_alone(tmp_path):
    cfg, out = _config(tmp_path)
    script = tmp_path / "own_hook.py"
    script.write_text(
        "import torch\n"
        "import trainscope.pytorch as ts\n"
        "hook = ts.Hook.create_from_json_file()\n"
        "model = torch.nn.Linear(4, 2)\n"
        "hook.register_module(model)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(6):\n"
        "    opt.zero_grad()\n"
        "    model(torch.randn(8, 4)).pow(2).mean().backward()\n"
        "    opt.step()\n"
        "import trainscope.auto as auto\n"
        "s = auto.session()\n"
        "print('AUTO', s is not None and s.off, s is not None and s.hook is None)\n")
    p = _auto([str(script)], _env(cfg))
    assert p.returncode == 0, p.stderr
    assert "AUTO True True" in p.stdout, p.stdout + p.stderr
    t = _trial(out)
    # The script's hook only: its forward-based steps, its gradient hooks, one worker.
    assert t.workers() == ["worker_0"]
    assert t.steps() == list(range(6))
    assert "loss_output_0" not in t.tensor_names()
    assert "gradient/Linear_weight" in t.tensor_names()


def test_script_using_the_api_is_in_charge_even_when_its_hook_comes_late(tmp_path):
    """A script that imports trainscope.pytorch uses the explicit API: the automatic mode stands
    down at the first optimizer step, and the hook the script makes later (here from the
    configuration, through get_hook) captures alone, smdebug's forward-based steps from its
    registration on (it was a pre-training, then a hooked fine-tune, that got two hooks
    writing the same steps)."""
    cfg, out = _config(tmp_path)
    script = tmp_path / "late_hook.py"
    script.write_text(
        "import torch\n"
        "import trainscope.pytorch as ts\n"
        "model = torch.nn.Linear(4, 2)\n"
        "crit = torch.nn.MSELoss()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for i in range(6):\n"
        "    opt.zero_grad()\n"
        "    crit(model(torch.randn(8, 4)), torch.zeros(8, 2)).backward()\n"
        "    opt.step()\n"
        "    if i == 0:\n"
        "        hook = ts.get_hook(create_if_not_exists=True)\n"
        "        hook.register_module(model)\n"
        "        hook.register_loss(crit)\n"
        "    hook.save_scalar('i', i)\n")
    p = _auto([str(script)], _env(cfg))
    assert p.returncode == 0, p.stderr
    assert "its own hook is in charge" in p.stderr, p.stderr
    t = _trial(out)
    # Registered after iteration 0's forward pass: iterations 1-5 are its steps 0-4.
    assert t.steps() == list(range(5))
    assert {"Linear_weight", "gradient/Linear_weight", "MSELoss_output_0",
            "scalar/i"} <= set(t.tensor_names()), t.tensor_names()
    assert "MSELoss_output_1" not in t.tensor_names()


def test_grad_scaler_skipped_step_is_not_an_explosion(tmp_path):
    from trainscope import modes

    cfg, out = _config(tmp_path, collections=("weights", "gradients", "losses"))
    p = _auto([str(PROGRAMS / "grad_scaler_skip.py"), "--steps", "10", "--bad-step", "4"],
              _env(cfg))
    assert p.returncode == 0, p.stderr
    assert "skipped 1" in p.stdout, p.stdout
    t = _trial(out)
    # 10 iterations, 9 optimizer steps: the skipped one joins the next step.
    assert t.steps(mode=modes.TRAIN) == list(range(9))
    for name in t.tensor_names(collection="gradients"):
        for step in t.tensor(name).steps():
            v = t.tensor(name).value(step)
            assert math.isfinite(float(abs(v).max())), (name, step)
    # The loss saved is the unscaled one (the scaled one is 65536 times larger).
    loss = t.tensor("CrossEntropyLoss_output_0").value(1, mode=modes.TRAIN)
    assert float(loss) < 10


def test_without_configuration_the_training_runs_untouched(tmp_path):
    p = _auto([str(PROGRAMS / "plain_loop.py"), "--steps", "3"], _env())
    assert p.returncode == 0, p.stderr
    assert "automatic mode: off: no hook configuration" in p.stderr, p.stderr
    assert p.stderr.count("trainscope:") == 1, p.stderr


def test_boot_folder_turns_the_mode_on_lazily_and_chains_sitecustomize(tmp_path):
    import trainscope.auto

    cfg, out = _config(tmp_path)
    other = tmp_path / "site"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITE_RAN = True\n")
    pythonpath = os.pathsep.join([trainscope.auto.BOOT_DIR, str(other)])
    env = _env(cfg, TRAINSCOPE_AUTO="1")
    env["PYTHONPATH"] = pythonpath + os.pathsep + env["PYTHONPATH"]
    code = ("import sys, builtins\n"
            "print('TORCH', 'torch' in sys.modules, 'TS', 'trainscope' in sys.modules,\n"
            "      'OTHER', getattr(builtins, 'OTHER_SITE_RAN', 0))\n"
            "import torch\n"
            "import trainscope.auto as a\n"
            "print('SESSION', a.installed(), a.session() is not None)\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    # Nothing of trainscope is imported until torch is.
    assert "TORCH False TS False OTHER True" in p.stdout, p.stdout + p.stderr
    assert "SESSION True True" in p.stdout
    # Off unless asked.
    env["TRAINSCOPE_AUTO"] = "0"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert "SESSION False False" in p.stdout, p.stdout + p.stderr


def test_env_prints_the_switch_for_launchers():
    import trainscope.auto

    p = _auto(["--env"], _env())
    assert p.returncode == 0
    assert "export TRAINSCOPE_AUTO='1'" in p.stdout
    assert f"export PYTHONPATH='{trainscope.auto.BOOT_DIR}" in p.stdout


_LOOP = """
import time
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 8), torch.randn(32, 1)
for step in range(60):
    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss
    STEP
    time.sleep(0.002)
print("done")
"""
# forward and backward inside the step: its pre-hook is the first sign of each training step
_CLOSURE_STEP = "opt.step(closure)"
# the model's forward is the first sign of each training step
_PLAIN_STEP = "closure()\n    opt.step()"


def _profiled_loop(tmp_path, step):
    """Runs _LOOP with `step` in the automatic mode with the profiler, 2 ms steps and phases at
    most every 5 ms; returns the run and the trial's complete timeline events."""
    cfg, out = _config(tmp_path, collections=("losses",), interval=10)
    prof = tmp_path / "profiler.json"
    prof.write_text(json.dumps({"ProfilingParameters": {
        "ProfilerEnabled": True, "LocalPath": str(out), "PhaseMinIntervalInMilliseconds": 5,
        "RotateFileCloseIntervalInSeconds": 1}}))
    script = tmp_path / "loop.py"
    script.write_text(_LOOP.replace("STEP", step))
    r = _auto([str(script)], _env(cfg, TRAINSCOPE_PROFILER_CONFIG=str(prof)))
    assert r.returncode == 0, r.stderr
    events = []
    for f in sorted(out.glob("framework/pevents/*/*.json")):
        events += [e for e in json.loads(f.read_text()) if e.get("ph") == "X"]
    return r, events


def test_profiled_closure_steps_whose_phases_come_and_go(tmp_path):
    # Each training step starts inside a global optimizer pre-hook (the closure's forward runs
    # inside opt.step), and the profiler's phases turn on and off at those boundaries: nothing
    # may add or remove a global optimizer hook there (PyTorch raises "OrderedDict mutated
    # during iteration" in the training).
    r, events = _profiled_loop(tmp_path, _CLOSURE_STEP)
    assert "done" in r.stdout and "mutated" not in r.stderr, r.stderr
    steps = [e for e in events if e["name"].startswith("Step:")]
    phased = [e for e in steps if "phases" not in e["args"]]
    assert len(steps) >= 50 and 5 <= len(phased) < len(steps), (len(steps), len(phased))
    assert any(e["name"].endswith(".step") for e in events)  # Optimizer spans recorded


def test_profiled_phase_steps_time_the_models_forward_and_backward(tmp_path):
    # Each training step begins in the model's forward pre-hook (the automatic mode's step
    # boundary), and most phase steps follow one without: the model's forward has begun before
    # the profiler's callbacks are attached, and its start is taken at the boundary. Every
    # phase step has the model's Forward and Backward spans (both named after the module)
    # beside its Optimizer span.
    _, events = _profiled_loop(tmp_path, _PLAIN_STEP)
    by_step = {}
    for e in events:
        if not e["name"].startswith("Step:"):
            by_step.setdefault(int(e["args"]["step_num"]), []).append(e["name"])
    phased = {s: names for s, names in by_step.items() if "SGD.step" in names}
    assert len(phased) >= 5, by_step
    for step, names in phased.items():
        assert names.count("Sequential") == 2, (step, names)  # its Forward and Backward


_COUNTED_SCANS = """
import gc
scans = []
_get_objects = gc.get_objects
def counted(*args, **kwargs):
    scans.append(1)
    return _get_objects(*args, **kwargs)
gc.get_objects = counted
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
for step in range(5):
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
print("SCANS", len(scans))
"""


def test_the_first_step_finds_optimizers_models_and_losses_in_one_scan(tmp_path):
    # gc.get_objects() walks every live object (hundreds of thousands once torch is imported):
    # the automatic mode's setup makes one walk for the optimizers, the models and the loss
    # modules, and still finds each.
    r, out = _auto_script(tmp_path, _COUNTED_SCANS, ("losses", "weights"))
    assert r.returncode == 0, r.stderr
    assert "SCANS 1" in r.stdout, r.stdout + r.stderr
    names = _trial(out).tensor_names()
    assert "CrossEntropyLoss_output_0" in names and "Sequential_0.weight" in names, names


_LBFGS_MEMORY = """
import torch
from torch import nn


def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 // 2**20


torch.manual_seed(0)


class Unrolled(nn.Module):  # time_sequence_prediction's shape: an LSTMCell over time steps
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(16, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        h = c = torch.zeros(2048, 16)
        for _ in range(200):
            h, c = self.cell(x, (h, c))
        return self.out(h)


model = Unrolled()
loss_fn = nn.MSELoss()
opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=6)
x, y = torch.randn(2048, 16), torch.randn(2048, 1)
seen = []


def closure():
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    seen.append(rss_mb())
    return loss


for step in range(2):
    opt.step(closure)
print("GROWTH", max(seen[1:]) - seen[1], len(seen))
"""


def test_a_loss_module_graph_is_not_kept_past_its_backward(tmp_path):
    # On a saving step the automatic mode notes the loss module's output and its autograd node
    # (to know it when a scaled copy of it reaches backward()); an LBFGS step evaluates its
    # closure many times, and a node kept past its backward kept what the LSTMCell's backward
    # nodes hold of that evaluation: about 40 MB more at each of the 12 evaluations here (245 MB
    # each in time_sequence_prediction). A wide batch through a narrow cell: the memory of the
    # original's shape at a quarter of its arithmetic.
    cfg, out = _config(tmp_path, collections=("weights", "losses"))
    script = tmp_path / "lbfgs_memory.py"
    script.write_text(_LBFGS_MEMORY)
    r = _auto([str(script)], _env(cfg))
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("GROWTH")][-1]
    growth, evaluations = map(int, line.split()[1:])
    assert evaluations >= 10, line
    assert growth < 200, line  # MB over the evaluations after the first (410 when kept)
    assert "MSELoss_output_0" in _trial(out).tensor_names()


_COMPILED_LATE = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.MSELoss()
for i in range(8):
    if i == 3:
        model.compile(backend="eager")  # replaces the call the step boundary sat in front of
    opt.zero_grad()
    loss_fn(model(torch.randn(8, 4)), torch.randn(8, 2)).backward()
    opt.step()
from trainscope import _pre_call
print("IN_FRONT", _pre_call.in_front(model), model._compiled_call_impl is not None)
"""


def test_a_model_compiled_mid_training_keeps_its_steps(tmp_path):
    # The automatic mode's step boundary sits in front of the model's call (_pre_call.py);
    # module.compile() replaces it, and the steps go on.
    from trainscope import modes

    p, out = _auto_script(tmp_path, _COMPILED_LATE, ("weights", "losses"))
    assert p.returncode == 0, p.stderr
    assert "IN_FRONT False True" in p.stdout, p.stdout
    t = _trial(out)
    assert t.steps(mode=modes.TRAIN) == list(range(8))
    assert t.tensor("Sequential_0.weight").steps(mode=modes.TRAIN) == list(range(8))
    # The loss module is found at the end of the first step (its output from step 1 on). Step
    # 3's forward ran compiled, without the boundary: its backward made it (after the loss, so
    # that loss went to step 2) and moved it to a forward pre-hook, which makes the later ones.
    assert t.tensor("MSELoss_output_0").steps(mode=modes.TRAIN) == [1, 2, 4, 5, 6, 7]
