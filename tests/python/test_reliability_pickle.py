"""A model registered to a hook stays picklable and copyable (issue 17): torch.save(model),
copy.deepcopy(model) and pickle.dumps(model) work during a training, the copy is not hooked, and
the original keeps being captured."""

import copy
import io
import pickle
import subprocess
import sys

import torch
import torch.nn as nn

import trainscope.pytorch as ts
from hook_util import env as _env
from tiny_net import Net


def _hook(tmp_path, **kw):
    hook = ts.Hook(out_dir=str(tmp_path / "t"), save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights", "gradients", "losses", "relu_output"],
                   quiet=True, **kw)
    hook.get_collection("relu_output").include("relu_output")
    return hook


def _no_trainscope_hooks(module):
    for m in module.modules():
        for d in (m._forward_pre_hooks, m._forward_hooks):
            for fn in d.values():
                assert not getattr(fn, "__module__", "").startswith("trainscope"), (m, fn)
        assert not [k for k in vars(m) if k.startswith("_ts_") or k == "__getstate__"], vars(m)
        assert m._compiled_call_impl is None, m  # the step boundary in front of the call


def test_checkpoint_mid_training_and_load_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    # Built from torch's classes only, so that the fresh process can unpickle it.
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    crit = nn.CrossEntropyLoss()
    hook = _hook(tmp_path)
    hook.register_module(model)
    hook.register_loss(crit)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ckpt = tmp_path / "model.pt"
    for step in range(6):
        x, y = torch.randn(3, 4), torch.randint(0, 2, (3,))
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()
        if step == 2:
            torch.save(model, ckpt)  # the word language model's "save the best model"
            saved_weight = model[0].weight.detach().clone()
    hook.close()

    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.steps() == list(range(6))  # captured before and after the checkpoint
    for name in ("Sequential_0.weight", "gradient/Sequential_2.weight",
                 "CrossEntropyLoss_output_0", "1_output_0"):
        assert trial.tensor(name).steps() == list(range(6)), name

    # A fresh process without trainscope loads the whole model and runs it.
    probe = (
        "import sys, torch\n"
        "m = torch.load(sys.argv[1], weights_only=False)\n"
        "assert 'trainscope' not in sys.modules, 'loading the checkpoint imported trainscope'\n"
        "assert not any(m._forward_hooks for m in m.modules())\n"
        "assert not any(m._forward_pre_hooks for m in m.modules())\n"
        "assert all(m._compiled_call_impl is None for m in m.modules())\n"
        "print(float(m[0].weight.sum()), tuple(m(torch.zeros(1, 4)).shape))\n"
    )
    p = subprocess.run([sys.executable, "-c", probe, str(ckpt)], env=_env(),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    total, shape = p.stdout.split(" ", 1)
    assert abs(float(total) - float(saved_weight.sum())) < 1e-5
    assert shape.strip() == "(1, 2)"


def test_deepcopy_and_pickle_give_unhooked_copies(tmp_path):
    torch.manual_seed(0)
    model, crit = Net(), nn.CrossEntropyLoss()
    hook = _hook(tmp_path)
    hook.register_module(model)
    hook.register_loss(crit)
    x, y = torch.randn(3, 4), torch.randint(0, 2, (3,))
    crit(model(x), y).backward()  # step 0

    ema = copy.deepcopy(model)  # an EMA / best-model copy
    shallow = copy.copy(model)
    restored = pickle.loads(pickle.dumps(model))
    buf = io.BytesIO()
    torch.save({"model": model, "loss": crit}, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    for c in (ema, restored, loaded["model"], loaded["loss"]):
        _no_trainscope_hooks(c)
        assert c is not model
    assert torch.equal(ema.fc1.weight, model.fc1.weight)
    assert not shallow._forward_pre_hooks and not shallow._forward_hooks

    # The copies' forward passes are not steps of the hook and are not saved.
    with torch.no_grad():
        for c in (ema, restored, loaded["model"]):
            c(x)
    assert int(hook.step) == 0
    # The original is still hooked: its next forward is step 1, with everything saved.
    crit(model(x), y).backward()
    assert int(hook.step) == 1
    # A copy can be registered to a hook of its own.
    hook2 = ts.Hook(out_dir=str(tmp_path / "t2"), include_collections=["weights"], quiet=True)
    hook2.register_module(ema)
    with torch.no_grad():
        ema(x)
    hook2.close()
    hook.close()
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1]
    assert trial.tensor("relu_output_0").steps() == [0, 1]
    assert ts.create_trial(str(tmp_path / "t2")).tensor("Net_fc1.weight").steps() == [0]
    # The original still pickles after the copies were made (nothing was removed from it).
    assert model._compiled_call_impl is not None  # the step boundary, in front of its call
    pickle.dumps(model)


def test_copies_are_unhooked_with_the_profiler_on_too(tmp_path):
    out = str(tmp_path / "t")
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    hook = ts.Hook(out_dir=out, quiet=True, profiler_config={
        "ProfilingParameters": {"ProfilerEnabled": True, "LocalPath": out}})
    assert hook._prof is not None  # the profiler times the registered module's forward too
    hook.register_module(model)
    model(torch.zeros(2, 4)).sum().backward()
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    for c in (copy.deepcopy(model), torch.load(buf, weights_only=False)):
        _no_trainscope_hooks(c)
    hook.close()
