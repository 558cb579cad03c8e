"""The closure record (index meta.closure_evaluations, docs/formats/index.md): which loss tensors
each call of an optimizer step's closure saved. Written by the script's hook (a global optimizer
step pre-hook) and by the automatic mode; read by trainscope's Trial; ignored by smdebug's reader;
used by LossNotDecreasing to see a loss that blows up within LBFGS's evaluations.

Each training runs in its own Python process: the hook installs a process-wide optimizer hook.
"""

import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

REPO = pathlib.Path(__file__).resolve().parents[2]

# A tiny LBFGS regression (float64, as pytorch/examples' time_sequence_prediction), with the
# explicit hook: a TRAIN step per optimizer step, then an EVAL step.
SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from torch import nn
    import trainscope.pytorch as ts

    out, lr, steps, explicit, optim = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), \\
        sys.argv[4] == "1", sys.argv[5]
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)).double()
    x = torch.randn(64, 4, dtype=torch.float64)
    y = (x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=torch.float64)).sin()
    criterion = nn.MSELoss()
    if optim == "lbfgs":
        opt = torch.optim.LBFGS(model.parameters(), lr=lr, max_iter=6)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr)
    hook = ts.Hook(out_dir=out, save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(criterion)
    for step in range(steps):
        if explicit:
            hook.set_mode(ts.modes.TRAIN)
            hook.step()

        def closure():
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            return loss

        opt.step(closure)
        if explicit:
            hook.set_mode(ts.modes.EVAL)
            hook.step()
        with torch.no_grad():
            criterion(model(x), y)
    hook.close()
""")


def _env():
    import trainscope

    env = dict(os.environ)
    for key in ("TRAINSCOPE_AUTO", "TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH"):
        env.pop(key, None)
    pkg_parent = str(pathlib.Path(trainscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env["SMDEBUG_TRAINING_END_DELAY_REFRESH"] = "0"
    return env


def _train(tmp_path, lr=0.5, steps=3, explicit=True, optim="lbfgs"):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "trial"
    p = subprocess.run([sys.executable, str(script), str(out), str(lr), str(steps),
                        "1" if explicit else "0", optim],
                       env=_env(), capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    assert (out / "training_job_end.ts").exists(), p.stderr
    return out


def _index(out, step):
    (path,) = glob.glob(str(out / "index" / "*" / f"{step:012d}_worker_0.json"))
    with open(path) as f:
        return json.load(f)


def test_lbfgs_evaluations_are_recorded_per_step(tmp_path):
    import trainscope
    from trainscope import modes

    out = _train(tmp_path)
    t = trainscope.create_trial(str(out))
    assert t.steps(mode=modes.TRAIN) == [0, 1, 2]
    for mode_step in range(3):
        step = t.global_step(modes.TRAIN, mode_step)
        record = t.closure_evaluations(step)
        assert len(record) == 1 and record[0]["optimizer"] == "LBFGS"
        evaluations = record[0]["evaluations"]
        # LBFGS(max_iter=6) calls the closure up to 7 times (once more than its iterations,
        # fewer when it converges); each call saved one output of the criterion, in order.
        assert 2 <= len(evaluations) <= 7, evaluations
        assert evaluations == [[f"MSELoss_output_{e}"] for e in range(len(evaluations))]
        names = set(t.tensor_names(step=step, mode=modes.GLOBAL))
        assert {n for (n,) in evaluations} <= names
        assert _index(out, step)["meta"]["closure_evaluations"] == record
    # The evaluation pass after each step saved its own loss; no closure there.
    for mode_step in range(3):
        step = t.global_step(modes.EVAL, mode_step)
        assert t.closure_evaluations(step) == []
        assert "closure_evaluations" not in _index(out, step)["meta"]


def test_smdebug_reads_a_trial_with_the_record(tmp_path):
    smdebug_trials = pytest.importorskip("smdebug.trials")
    import trainscope

    out = _train(tmp_path)
    smd = smdebug_trials.create_trial(str(out))
    ours = trainscope.create_trial(str(out))
    assert smd.steps() == ours.steps()
    assert sorted(smd.tensor_names()) == sorted(ours.tensor_names())
    for name in ours.tensor_names():
        for step in ours.tensor(name).steps():
            assert float(smd.tensor(name).value(step)) == float(ours.tensor(name).value(step))


def test_no_record_without_repeated_closure_calls(tmp_path):
    """A closure called once a step (SGD) says nothing the names do not; with steps marked by
    forward passes (no hook.step()) each LBFGS evaluation is a step of its own."""
    import trainscope

    for optim, explicit in (("sgd", True), ("lbfgs", False)):
        run = tmp_path / f"{optim}_{int(explicit)}"
        run.mkdir()
        out = _train(run, lr=0.1, steps=2, explicit=explicit, optim=optim)
        t = trainscope.create_trial(str(out))
        assert t.steps()
        assert all(t.closure_evaluations(s) == [] for s in t.steps()), optim
        for path in glob.glob(str(out / "index" / "*" / "*.json")):
            with open(path) as f:
                assert "closure_evaluations" not in json.load(f)["meta"], path


AUTO_SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1)).double()
    x = torch.randn(64, 4, dtype=torch.float64)
    y = (x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]], dtype=torch.float64)).sin()
    criterion = nn.MSELoss()
    opt = torch.optim.LBFGS(model.parameters(), lr=float(sys.argv[1]), max_iter=6)
    for step in range(3):
        def closure():
            opt.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            return loss
        opt.step(closure)
        with torch.no_grad():
            criterion(model(x), y)
""")


def test_automatic_mode_records_the_evaluations(tmp_path):
    """An unmodified LBFGS script under the automatic mode (as `trainscope run` captures
    pytorch/examples' time_sequence_prediction): one TRAIN step per optimizer step, its closure
    evaluations recorded, the evaluation pass an EVAL step."""
    import trainscope
    from trainscope import modes

    script = tmp_path / "auto_train.py"
    script.write_text(AUTO_SCRIPT)
    out = tmp_path / "trial"
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"LocalPath": str(out), "HookParameters": {"save_interval": "1"},
                               "CollectionConfigurations": [{"CollectionName": "losses"}]}))
    env = _env()
    env["TRAINSCOPE_CONFIG"] = str(cfg)
    p = subprocess.run([sys.executable, "-m", "trainscope.auto", str(script), "0.5"], env=env,
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    assert (out / "training_job_end.ts").exists(), p.stderr  # the automatic mode captured it
    t = trainscope.create_trial(str(out))
    assert t.steps(mode=modes.TRAIN) == [0, 1, 2]
    for mode_step in range(3):
        record = t.closure_evaluations(t.global_step(modes.TRAIN, mode_step))
        assert len(record) == 1 and record[0]["optimizer"] == "LBFGS"
        evaluations = record[0]["evaluations"]
        assert len(evaluations) >= 2
        assert evaluations == [[f"MSELoss_output_{e}"] for e in range(len(evaluations))]


def _loss_not_decreasing(out):
    import trainscope
    from trainscope.exceptions import NoMoreData, RuleEvaluationConditionMet
    from trainscope.rules import LossNotDecreasing, invoke_rule

    rule = LossNotDecreasing(trainscope.create_trial(str(out)))
    try:
        invoke_rule(rule, raise_eval_cond=True)
    except RuleEvaluationConditionMet:
        return rule.last_findings
    except NoMoreData:
        pass
    return []


def test_loss_not_decreasing_sees_lbfgs_blowing_up_within_its_steps(tmp_path):
    """lr 20 without line search: the loss blows up within the evaluations of each step. With
    the record the evaluations are one series and the divergence is found, naming LBFGS; the
    same trial without the record (as smdebug would write it) is judged as before: 7 series of
    one value a step, nothing found."""
    out = _train(tmp_path, lr=20.0, steps=3)
    findings = _loss_not_decreasing(out)
    assert findings, "no finding on a loss that blew up within LBFGS's evaluations"
    f = findings[0]
    assert f["tensor"] == "MSELoss_output_0" and f["step"] <= 2, f
    assert "divergence_factor" in f["condition"], f
    assert "LBFGS" in f["recommendation"] and "line_search_fn" in f["recommendation"], f

    bare = tmp_path / "without_record"
    shutil.copytree(out, bare)
    for path in glob.glob(str(bare / "index" / "*" / "*.json")):
        with open(path) as fh:
            index = json.load(fh)
        index["meta"].pop("closure_evaluations", None)
        with open(path, "w") as fh:
            json.dump(index, fh)
    assert _loss_not_decreasing(bare) == []


def test_loss_not_decreasing_quiet_on_healthy_lbfgs(tmp_path):
    out = _train(tmp_path, lr=0.5, steps=4)
    assert _loss_not_decreasing(out) == []
