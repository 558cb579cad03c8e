"""Custom Python rules under `trainscope run --rule-file FILE.py:CLASS[:KEY=VALUE,...][@ACTIONS]`
(issue 17): the real CLI, real PyTorch trainings, each custom rule in its own Python process
driven by its rule worker, with the statuses, time-outs, stop action, status.json and exit codes
of the built-in rules; bad specs refused before the training runs.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from profiler_util import trainscope_cli

CLI = trainscope_cli()
pytestmark = pytest.mark.skipif(
    CLI is None, reason="no trainscope command: build it or pip install .")

# A real training: a linear regression whose loss the hook saves every 10 steps (the collection
# `trainscope run` configures when no built-in rule asks for more). It writes a marker first, so a
# test can tell whether it ran, and the last step it reached.
TRAINING = r"""
import pathlib, sys, time, torch
import trainscope.pytorch as ts
marker = pathlib.Path(sys.argv[1])
marker.write_text("started")
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
loss_fn = torch.nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
hook = ts.Hook.create_from_json_file()
hook.register_module(model)
hook.register_loss(loss_fn)
x, y = torch.randn(64, 4), torch.randn(64, 1)
steps = int(sys.argv[2])
for step in range(steps):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    marker.write_text(str(step))  # a rule's stop request ends the process (TrainingStopped)
    time.sleep(float(sys.argv[3]))
hook.close()
"""

RULES = r'''
import time
from trainscope.rules import Rule


class LossAbove(Rule):
    """Met when the saved loss is above `threshold`."""

    def __init__(self, base_trial, threshold=1.0, collection="losses"):
        super().__init__(base_trial)
        self.threshold = threshold
        self.collection = collection

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names(collection=self.collection):
            t = self.base_trial.tensor(name)
            if step in t.steps() and float(t.value(step)) > self.threshold:
                return True
        return False


class NeverFires(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial)

    def invoke_at_step(self, step):
        return False


class RaisesAtTen(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial)

    def invoke_at_step(self, step):
        if step >= 10:
            raise ValueError(f"boom at step {step}")
        return False


class Hangs(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial)

    def invoke_at_step(self, step):
        time.sleep(3600)


class NotARule:
    pass


class NeedsLimit(Rule):
    def __init__(self, base_trial, limit):
        super().__init__(base_trial)
        self.limit = float(limit)

    def invoke_at_step(self, step):
        return False
'''


def _env():
    """The training and the rules import the trainscope these tests import."""
    import trainscope

    env = dict(os.environ)
    pkg_parent = str(pathlib.Path(trainscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TRAINSCOPE_PYTHON", None)  # the training's python (sys.executable) runs the rules
    return env


def _run(tmp_path, *options, steps=60, sleep=0.0, timeout=300):
    rules = tmp_path / "rules.py"
    rules.write_text(RULES)
    trial, marker = tmp_path / "trial", tmp_path / "marker"
    argv = [CLI, "run", "--out", str(trial), "--rules", "none", "--no-system", "--json",
            *[o.replace("RULES", str(rules)) for o in options], "--",
            sys.executable, "-c", TRAINING, str(marker), str(steps), str(sleep)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(),
                       cwd=tmp_path)
    summary = None
    if p.stdout.strip().startswith("{"):
        summary = json.loads(p.stdout)
    return p, summary, trial, marker


def _status_file(trial, rule):
    return json.loads((trial / "rule-output" / rule / "status.json").read_text())


def _serve_processes(trial):
    """pids of the custom-rule Python processes evaluating `trial`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            args = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in args]
        if "trainscope.rules.custom" in args and str(trial) in args:
            found.append(int(pid))
    return found


def test_a_custom_rule_fires_and_stops_the_training(tmp_path):
    p, summary, trial, marker = _run(
        tmp_path, "--rule-file", "RULES:LossAbove:threshold=0@stop", "--rule-file",
        "RULES:NeverFires", steps=2000, sleep=0.01)
    assert p.returncode == 4, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    by_rule = {r["rule"]: r for r in summary["rules"]}
    assert by_rule["LossAbove"]["status"] == "IssuesFound", by_rule
    assert by_rule["LossAbove"]["first_finding_step"] == 0
    assert by_rule["NeverFires"]["status"] == "NoIssuesFound", by_rule
    # The stop request names the custom rule, and the training ended long before its 2000 steps.
    stop = json.loads((trial / "rule-output" / "stop_training.json").read_text())
    assert stop["rule"] == "LossAbove" and stop["step"] == 0, stop
    assert int(marker.read_text()) < 1500, marker.read_text()
    # status.json in the built-in rules' format, with the parameters in effect (the command
    # line's threshold, the default collection) and the finding in events.jsonl.
    status = _status_file(trial, "LossAbove")
    assert status["status"] == "IssuesFound" and status["finished"] is True
    assert status["parameters"] == {"threshold": "0", "collection": "losses"}, status
    event = json.loads((trial / "rule-output" / "LossAbove" / "events.jsonl").read_text()
                       .splitlines()[0])
    assert event["rule"] == "LossAbove" and event["step"] == 0
    assert "rules.py" in event["explanation"]
    # `trainscope status` reads it as it reads a built-in rule's.
    s = subprocess.run([CLI, "status", str(trial), "--json"], capture_output=True, text=True,
                       timeout=60)
    assert s.returncode == 3, s.stderr
    assert {r["rule"]: r["status"] for r in json.loads(s.stdout)["rules"]} == {
        "LossAbove": "IssuesFound", "NeverFires": "NoIssuesFound"}
    assert not _serve_processes(trial)


def test_a_custom_rule_that_raises_is_an_error_and_the_training_finishes(tmp_path):
    p, summary, trial, marker = _run(tmp_path, "--rule-file", "RULES:RaisesAtTen", steps=60)
    assert p.returncode == 6, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    assert summary["training_exit_code"] == 0 and marker.read_text() == "59"
    (rule,) = summary["rules"]
    assert rule["rule"] == "RaisesAtTen" and rule["status"] == "Error", rule
    # The exception, its message and where it was raised.
    assert "ValueError: boom at step 10" in rule["message"], rule["message"]
    assert "rules.py:" in rule["message"] and "invoke_at_step" in rule["message"]
    assert rule["last_step"] == 0  # steps 0 evaluated; 10 raised
    assert "Traceback" in p.stderr  # the whole traceback, for the user
    assert not _serve_processes(trial)


def test_a_custom_rule_that_hangs_is_killed_at_the_rules_timeout(tmp_path):
    p, summary, trial, marker = _run(tmp_path, "--rules-timeout", "2", "--rule-file",
                                     "RULES:Hangs", steps=20)
    assert p.returncode == 6, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    assert summary["training_exit_code"] == 0 and marker.read_text() == "19"
    (rule,) = summary["rules"]
    assert rule["status"] == "Error", rule
    assert "did not end within --rules-timeout (2 s)" in rule["message"], rule["message"]
    assert "--rule-file" in rule["message"]  # how to evaluate it again
    # Neither the worker nor the rule's Python process is left behind.
    time.sleep(0.5)
    assert not _serve_processes(trial)


@pytest.mark.parametrize("spec, message", [
    ("missing.py:LossAbove", "missing.py: no such file"),
    ("RULES:Nope", "no class named Nope (Rule subclasses defined there: Hangs, LossAbove, "
                   "NeedsLimit, NeverFires, RaisesAtTen)"),
    ("RULES:NotARule", "NotARule is a class with bases ['object'], not a Rule subclass"),
    ("RULES:LossAbove:treshold=3", "LossAbove: unknown parameter 'treshold' (its parameters: "
                                   "threshold, collection)"),
    ("RULES:LossAbove:threshold=high", "parameter threshold='high': must be a number"),
    ("RULES:NeedsLimit", "parameter 'limit' has no default: give it"),
    ("RULES", "write FILE.py:CLASS"),
    ("RULES:LossAbove@nosuchaction", 'rules.py:LossAbove@nosuchaction: action 1 "nosuchaction": '
                                     'unknown action'),
])
def test_a_bad_custom_rule_is_refused_before_the_training(tmp_path, spec, message):
    p, summary, trial, marker = _run(tmp_path, "--rule-file", spec)
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
    assert message in p.stderr, p.stderr
    assert "trainscope run: --rule-file " in p.stderr
    assert not marker.exists(), "the training ran"
    assert not (trial / "rule-output").exists()


def test_a_rule_file_that_fails_to_import_is_named_with_its_line(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("from trainscope.rules import Rule\n\nraise RuntimeError('half written')\n")
    p, _, _, marker = _run(tmp_path, "--rule-file", f"{bad}:Anything")
    assert p.returncode == 2, p.stderr
    assert "importing it raised RuntimeError: half written (line 3 of" in p.stderr, p.stderr
    assert not marker.exists()


def test_an_interpreter_that_cannot_run_the_rules_is_named(tmp_path):
    env = _env()
    env["TRAINSCOPE_PYTHON"] = "/nonexistent/python3"
    rules = tmp_path / "rules.py"
    rules.write_text(RULES)
    q = subprocess.run([CLI, "run", "--out", str(tmp_path / "t2"), "--rules", "none",
                        "--no-system", "--rule-file", f"{rules}:NeverFires", "--",
                        sys.executable, "-c", "print('ran')"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert q.returncode == 2, q.stderr
    assert "set TRAINSCOPE_PYTHON to that interpreter (now: /nonexistent/python3)" in q.stderr
    assert "ran" not in q.stdout
