"""The automatic mode stands down for a script that makes its own hook, whatever the order in
which the script makes its optimizer and its hook, under the real `trainscope run`."""

import os
import subprocess
import sys

import pytest

import trainscope

TRAINSCOPE = os.path.join(os.path.dirname(sys.executable), "trainscope")

SCRIPT = """
import torch
import trainscope.pytorch as ts
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
{first}
{second}
hook.register_module(model)
for _ in range(6):
    opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
print("TRAINED 6")
"""
OPT = "opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)"
HOOK = "hook = ts.Hook.create_from_json_file()"


@pytest.mark.parametrize("order", ["optimizer_first", "hook_first"])
def test_own_hook_made_in_either_order_trains_to_the_end(tmp_path, order):
    first, second = (OPT, HOOK) if order == "optimizer_first" else (HOOK, OPT)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(first=first, second=second))
    out = tmp_path / "trial"
    p = subprocess.run([TRAINSCOPE, "run", "--out", str(out), "--rule", "VanishingGradient",
                        "--save-interval", "1", "--", sys.executable, str(script)],
                       capture_output=True, text=True, timeout=240)
    # Was: RuntimeError: OrderedDict mutated during iteration at the first opt.step() when the
    # optimizer existed before the hook (the mode removed its optimizer hook while PyTorch
    # iterated over them).
    assert p.returncode == 0, p.stdout + p.stderr
    assert "TRAINED 6" in p.stdout + p.stderr
    t = trainscope.create_trial(str(out))
    # The script's hook alone wrote the trial: its forward-based steps and gradient hooks.
    assert t.workers() == ["worker_0"]
    assert t.steps() == list(range(6))
    assert "gradient/Sequential_0.weight" in t.tensor_names()
