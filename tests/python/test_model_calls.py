"""The model calls of a step (index meta.model_calls, docs/formats/index.md): how many times the
model ran in a step, written when twice or more. The automatic mode counts them (a rollout's:
tests/python/test_auto_programs.py, test_actor_critic_reinforcement_learning); so does a script's
own hook once it marks its steps with ``hook.step()``. Read by trainscope's Trial, ignored by
smdebug's reader.

Each training runs in its own Python process (a hook per process)."""

import glob
import json
import subprocess
import sys
import textwrap

import pytest
from hook_util import env

torch = pytest.importorskip("torch")

# A rollout-shaped loop with the script's hook: each step (hook.step()) calls the model
# CALLS[step] times, then steps the optimizer once on the summed loss.
SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from torch import nn
    import trainscope.pytorch as ts

    out = sys.argv[1]
    calls = [int(c) for c in sys.argv[2].split(",")]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = ts.Hook(out_dir=out, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["losses"])
    hook.register_module(model)
    for n in calls:
        hook.step()
        loss = sum(model(torch.randn(1, 4)).pow(2).sum() for _ in range(n))
        hook.record_tensor_value("loss", loss)
        opt.zero_grad()
        loss.backward()
        opt.step()
    hook.close()
""")

CALLS = [1, 5, 12, 2, 1, 30]


@pytest.fixture(scope="module")
def trial_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("model_calls")
    script = tmp / "train.py"
    script.write_text(SCRIPT)
    out = tmp / "trial"
    p = subprocess.run([sys.executable, str(script), str(out), ",".join(map(str, CALLS))],
                       env=env(OMP_NUM_THREADS=1), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    assert (out / "training_job_end.ts").exists(), p.stderr
    return out


def _meta(out, step):
    (path,) = glob.glob(str(out / "index" / "*" / f"{step:012d}_worker_0.json"))
    with open(path) as f:
        return json.load(f)["meta"]


def test_the_hooks_steps_record_their_calls(trial_dir):
    import trainscope

    t = trainscope.create_trial(str(trial_dir))
    # The first hook.step() begins step 0 (the calls before it, none here, would be step -1's).
    assert t.steps() == list(range(len(CALLS)))
    want = [n if n >= 2 else 0 for n in CALLS]
    assert [t.model_calls(s) for s in t.steps()] == want
    assert [_meta(trial_dir, s).get("model_calls", 0) for s in t.steps()] == want
    assert t.model_calls(2, worker="worker_0") == 12 and t.model_calls(2, worker="worker_7") == 0
    assert t.model_calls(99) == 0


def test_smdebug_reads_a_trial_with_the_record(trial_dir):
    smdebug_trials = pytest.importorskip("smdebug.trials")
    import trainscope

    smd = smdebug_trials.create_trial(str(trial_dir))
    ours = trainscope.create_trial(str(trial_dir))
    assert smd.steps() == ours.steps()
    assert sorted(smd.tensor_names()) == sorted(ours.tensor_names())
    for step in ours.steps():
        assert float(smd.tensor("loss_output_0").value(step)) == \
            float(ours.tensor("loss_output_0").value(step))
