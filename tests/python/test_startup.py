"""What every `trainscope run` pays before the training's first step: the `trainscope` command's
Python entry point (which only hands over to the native command) and the automatic mode's boot
import the trainscope package, so importing it must not import the analysis API (numpy and the
trial reader, about a tenth of a second); `from trainscope import create_trial` still works."""

import subprocess
import sys


def _python(code):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_command_entry_point_does_not_import_the_analysis_api():
    out = _python("import sys, trainscope.cli, trainscope.auto\n"
                  "print(sorted(m for m in ('numpy', 'trainscope.trials') if m in sys.modules))")
    assert out.strip() == "[]"


def test_the_analysis_api_is_there_on_first_use():
    out = _python("import sys, trainscope\n"
                  "assert 'create_trial' in dir(trainscope) and 'numpy' not in sys.modules\n"
                  "from trainscope import create_trial\n"
                  "from trainscope.trials import create_trial as direct\n"
                  "assert create_trial is direct and trainscope.create_trial is direct\n"
                  "try:\n"
                  "    trainscope.no_such_name\n"
                  "except AttributeError as e:\n"
                  "    print(e)\n")
    assert out.strip() == "module 'trainscope' has no attribute 'no_such_name'"


# A training that updates its parameters by hand (no torch.optim, which imports torch._dynamo on
# its first step) and is not compiled: trainscope must not import the compiler (about 0.9 s) or
# FSDP (0.4 s) to learn that the model is neither compiled nor sharded.
_MANUAL_TRAINING = """
import json, sys
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
HOOK
x = torch.randn(64, 8)
y = x.sum(1, keepdim=True)
for _ in range(5):
    loss = nn.functional.mse_loss(model(x), y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
print(json.dumps({m: m in sys.modules for m in ("torch._dynamo", "torch.distributed.fsdp")}))
"""


def _trial_steps(out):
    from trainscope import create_trial

    return create_trial(str(out)).steps()


def test_a_hook_does_not_import_the_compiler_for_a_model_that_is_not_compiled(tmp_path):
    out = tmp_path / "trial"
    hook = ("import trainscope.pytorch as ts\n"
            f"hook = ts.Hook(out_dir={str(out)!r}, include_collections=['losses', 'weights'],\n"
            "                save_config=ts.SaveConfig(save_interval=1))\n"
            "hook.register_module(model)\n")
    script = tmp_path / "train.py"
    script.write_text(_MANUAL_TRAINING.replace("HOOK", hook))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == (
        '{"torch._dynamo": false, "torch.distributed.fsdp": false}')
    assert _trial_steps(out) == [0, 1, 2, 3, 4]


def test_the_automatic_mode_does_not_import_the_compiler_for_a_model_that_is_not_compiled(
        tmp_path):
    import json
    import os
    import pathlib

    import trainscope

    out = tmp_path / "trial"
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"LocalPath": str(out), "HookParameters": {"save_interval": "1"},
                               "CollectionConfigurations": [{"CollectionName": "weights"}]}))
    script = tmp_path / "train.py"
    script.write_text(_MANUAL_TRAINING.replace("HOOK", ""))
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRAINSCOPE_AUTO", "SMDEBUG_CONFIG_FILE_PATH")}
    env["TRAINSCOPE_CONFIG"] = str(cfg)
    env["PYTHONPATH"] = (str(pathlib.Path(trainscope.__file__).resolve().parent.parent) +
                         os.pathsep + env.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "trainscope.auto", str(script)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == (
        '{"torch._dynamo": false, "torch.distributed.fsdp": false}')
    # The first iteration ran before the mode could tell the updates were by hand (README).
    assert _trial_steps(out) == [0, 1, 2, 3]
