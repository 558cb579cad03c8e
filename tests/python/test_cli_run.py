"""`trainscope run` and `trainscope status` end to end: real trainings under the supervisor, its
rule worker processes, its Prometheus endpoint, its terminal and signal handling.

Each test starts the real `trainscope` command (the build's, else the installed one) and a real
Python training; nothing is stubbed.
"""

import json
import math
import os
import pathlib
import pty
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from profiler_util import trainscope_cli

REPO = pathlib.Path(__file__).resolve().parents[2]
CLI = trainscope_cli()
pytestmark = pytest.mark.skipif(
    CLI is None, reason="no trainscope command: build it or pip install .")


def _env():
    """The training imports the trainscope these tests import."""
    import trainscope

    env = dict(os.environ)
    pkg_parent = str(pathlib.Path(trainscope.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _workers_of(trial):
    """pid -> the rules (a tuple) of the running `trainscope rule-worker` processes of `trial`."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode() for a in argv if a]
        if "rule-worker" in args and str(trial) in args and "--rule" in args:
            found[int(pid)] = tuple(args[i + 1].split(":")[0] for i, a in enumerate(args)
                                    if a == "--rule")
    return found


def _wait_for(pred, timeout=120, what="condition"):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _run_argv(trial, *options, code):
    """`trainscope run` with no rules but OPTIONS and no system sampler, on `python -c CODE`."""
    return [CLI, "run", "--out", str(trial), "--rules", "none", "--no-system", *options, "--",
            sys.executable, "-c", code]


def _summary(stdout):
    return json.loads(stdout[stdout.rindex('{\n  "command"'):])


def _status_json(trial):
    p = subprocess.run([CLI, "status", str(trial), "--json"], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, json.loads(p.stdout)


# ---- the README's main job, with its Prometheus endpoint scraped while it runs -----------------


def _scrape(port):
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def test_main_job_is_caught_explained_and_stopped_with_metrics(tmp_path):
    """scripts/run-main.sh's command: the planted problem (learning rate 1.0 kills the ReLUs) is
    caught by a rule, explained, and the training stopped; the trial is closed and readable; the
    metrics endpoint showed the step, the loss and the findings while it ran."""
    trial = tmp_path / "main"
    cmd = [CLI, "run", "--out", str(trial), "--rules", "default", "--action", "stop",
           "--metrics-port", "0", "--no-system", "--",
           sys.executable, str(REPO / "examples" / "pytorch" / "digits_mlp.py"), "--lr", "1.0",
           "--epochs", "8"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(), cwd=tmp_path)
    # The port is on stderr's third line; read stderr in the background from then on.
    port, err_head = None, ""
    while port is None:
        line = p.stderr.readline()
        assert line, "trainscope run ended before serving metrics:\n" + err_head
        err_head += line
        if "metrics at http://127.0.0.1:" in line:
            port = int(line.rsplit(":", 1)[1].split("/")[0])
    err_rest = []
    t = threading.Thread(target=lambda: err_rest.append(p.stderr.read()))
    t.start()
    last, scrapes = None, 0
    while p.poll() is None:
        try:
            last = _scrape(port)
            scrapes += 1
        except OSError:
            pass  # serving stopped: the run is ending
        time.sleep(0.1)
    out = p.stdout.read()
    t.join()
    err = err_head + "".join(err_rest)
    assert p.returncode == 4, (p.returncode, out[-3000:], err[-3000:])

    stop = json.loads((trial / "rule-output" / "stop_training.json").read_text())
    rule, step = stop["rule"], stop["step"]
    # The rules run in parallel processes: whichever of those that catch this problem (dead
    # first-layer units; the loss rising) reports first stops the training.
    assert rule in ("VanishingGradient", "DeadRelu", "LossNotDecreasing"), stop
    assert stop["explanation"]
    # Reported: in the summary (the explanation and what to do) and by the training itself.
    assert f"training was STOPPED by {rule} at step {step}" in out, out
    assert "what to do: " in out
    assert f"trainscope: training stopped on request of {rule} at step {step}" in err, err[-3000:]
    assert err.count("training stopped on request of") == 1

    # The trial is closed (end marker) and every step saved before the stop reads back.
    import trainscope

    tr = trainscope.create_trial(str(trial))
    assert (trial / "training_job_end.ts").exists()
    steps = tr.steps()
    assert steps and steps[-1] >= step - 10, (steps, step)
    assert steps[-1] < 8 * 47, "the training ran to its end instead of stopping"
    loss = tr.tensor_names(collection="losses")[0]
    for s in tr.tensor(loss).steps():
        assert math.isfinite(float(tr.tensor(loss).value(s)))

    # `trainscope status` says the same as run's summary: the stopping rule found issues.
    code, status = _status_json(trial)
    assert code == 3
    by_rule = {r["rule"]: r for r in status["rules"]}
    assert by_rule[rule]["status"] == "IssuesFound"
    assert status["stop_request"]["rule"] == rule and status["training_ended"]

    # The metrics endpoint, as last scraped before it closed.
    assert scrapes > 0 and last is not None
    assert last[("trainscope_step", (("mode", "TRAIN"),))] >= step - 10
    assert math.isfinite(last[("trainscope_loss", ())])
    assert last[("trainscope_loss_step", ())] > 0
    assert last[("trainscope_rule_findings_total", (("rule", rule),))] >= 1
    assert last[("trainscope_stop_requested", ())] == 1
    # The stop action ran in the rule's worker; its outcome reached the supervisor's endpoint.
    assert last[("trainscope_actions_total", (("action", "stop"), ("result", "done")))] >= 1
    assert last[("trainscope_rule_status", (("rule", rule), ("status", "IssuesFound")))] == 1


def test_a_corrupt_event_log_is_named_and_the_run_goes_on(tmp_path):
    # Somebody else's line in rule-output/events.log.jsonl: the metrics feed says which file and
    # byte, stops counting actions, and the run (training and endpoint) carries on.
    trial = tmp_path / "corrupt"
    (trial / "rule-output").mkdir(parents=True)
    (trial / "rule-output" / "events.log.jsonl").write_text("this is not JSON\n")
    p = subprocess.run(_run_argv(trial, "--json", "--metrics-port", "0",
                                 code="import time; time.sleep(1)"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert _summary(p.stdout)["training_exit_code"] == 0
    assert "events.log.jsonl at byte 0" in p.stderr, p.stderr
    assert "trainscope_actions_total stops counting" in p.stderr
    assert p.stderr.count("stops counting") == 1  # said once, not at every poll


# ---- rule workers that die or hang ------------------------------------------------------------

SLEEPER = "import time; time.sleep({})"


def test_a_killed_rule_worker_is_an_error_and_the_training_goes_on(tmp_path):
    trial = tmp_path / "killed"
    p = subprocess.Popen(_run_argv(trial, "--json", "--rule", "ExplodingTensor", "--rule",
                                   "MaxInitializationTime", code=SLEEPER.format(4)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = _wait_for(lambda: _workers_of(trial) if len(_workers_of(trial)) == 2 else None,
                        what="two rule workers")
    victim = next(pid for pid, rules in workers.items() if rules == ("ExplodingTensor",))
    os.kill(victim, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    summary = _summary(out)
    assert summary["training_exit_code"] == 0  # the training went on to its end
    by_rule = {r["rule"]: r for r in summary["rules"]}
    assert by_rule["ExplodingTensor"]["status"] == "Error"
    assert "killed by signal 9" in by_rule["ExplodingTensor"]["message"]
    assert "trainscope rule-worker" in by_rule["ExplodingTensor"]["message"]  # how to rerun it
    assert by_rule["MaxInitializationTime"]["status"] == "NoIssuesFound"
    assert p.returncode == summary["exit_code"] == 6  # no issues, but a rule in Error
    assert "rule ExplodingTensor: its worker was killed by signal 9" in err
    assert _status_json(trial)[0] == 6


def test_rules_of_a_kind_share_one_worker_unless_isolated(tmp_path):
    """The built-in debugging rules share one worker (one reading of each step), the profiler
    rules another; a worker killed takes down only its own rules, each reported in Error with how
    to rerun it. --isolate-rules starts one worker per rule."""
    rules = ["--rule", "ExplodingTensor", "--rule", "LossNotDecreasing", "--rule",
             "MaxInitializationTime", "--rule", "CPUBottleneck"]
    trial = tmp_path / "shared"
    p = subprocess.Popen(_run_argv(trial, "--json", *rules, code=SLEEPER.format(4)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = _wait_for(lambda: _workers_of(trial) if len(_workers_of(trial)) == 2 else None,
                        what="two rule workers")
    assert sorted(sorted(r) for r in workers.values()) == [
        ["CPUBottleneck", "MaxInitializationTime"], ["ExplodingTensor", "LossNotDecreasing"]]
    victim = next(pid for pid, r in workers.items() if "ExplodingTensor" in r)
    os.kill(victim, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    by_rule = {r["rule"]: r for r in _summary(out)["rules"]}
    for rule in ("ExplodingTensor", "LossNotDecreasing"):
        assert by_rule[rule]["status"] == "Error"
        assert "killed by signal 9" in by_rule[rule]["message"]
        assert f"trainscope rule-worker {trial} --rule '{rule}'" in by_rule[rule]["message"]
        assert f"rule {rule}: its worker was killed by signal 9" in err
    assert by_rule["MaxInitializationTime"]["status"] == "NoIssuesFound"
    assert by_rule["CPUBottleneck"]["status"] == "NoIssuesFound"
    assert p.returncode == 6

    trial = tmp_path / "isolated"
    p = subprocess.Popen(_run_argv(trial, "--json", "--isolate-rules", *rules,
                                   code=SLEEPER.format(3)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = _wait_for(lambda: _workers_of(trial) if len(_workers_of(trial)) == 4 else None,
                        what="four rule workers")
    assert sorted(workers.values()) == [("CPUBottleneck",), ("ExplodingTensor",),
                                        ("LossNotDecreasing",), ("MaxInitializationTime",)]
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 6  # the debugging rules never got tensors: Error, as before


NAN_LOSS = r"""
import sys, torch
import trainscope.pytorch as ts
hook = ts.Hook(out_dir=sys.argv[1], save_config=ts.SaveConfig(save_interval=1))
for step in range(12):
    hook.step()
    hook.save_tensor("loss", torch.tensor([float("nan") if step >= 5 else 1.0]), "losses")
hook.close()
"""


def test_one_worker_evaluates_several_rules_each_with_its_own_status_and_actions(tmp_path):
    """`trainscope rule-worker DIR --rule A --rule B ...` on a finished trial: each rule gets its
    own status and its own actions; a rule that cannot be created is in Error alone; debugging
    and profiler rules are refused together, with what to do."""
    trial = tmp_path / "trial"
    subprocess.run([sys.executable, "-c", NAN_LOSS, str(trial)], check=True, env=_env(),
                   timeout=120)
    p = subprocess.run([CLI, "rule-worker", str(trial), "--rule", "ExplodingTensor@stop",
                        "--rule", "LossNotDecreasing:bogus=1", "--rule", "AllZero:tensor_regex=x",
                        "--rule", "VanishingGradient"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr  # a rule in Error
    status = {r: json.loads((trial / "rule-output" / r / "status.json").read_text())
              for r in ("ExplodingTensor", "LossNotDecreasing", "AllZero", "VanishingGradient")}
    assert status["ExplodingTensor"]["status"] == "IssuesFound"
    assert status["ExplodingTensor"]["first_finding_step"] == 5
    assert status["LossNotDecreasing"]["status"] == "Error"
    assert "unknown parameter 'bogus'" in status["LossNotDecreasing"]["message"]
    assert status["AllZero"]["status"] == "NoIssuesFound"
    assert status["VanishingGradient"]["status"] == "NoIssuesFound"
    assert all(s["finished"] for s in status.values())
    # Only ExplodingTensor's own action (stop) ran: the request names it.
    stop = json.loads((trial / "rule-output" / "stop_training.json").read_text())
    assert stop["rule"] == "ExplodingTensor", stop

    p = subprocess.run([CLI, "rule-worker", str(trial), "--rule", "ExplodingTensor", "--rule",
                        "CPUBottleneck"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "all debugging rules or all profiler rules: start one worker for each kind" in p.stderr
    p = subprocess.run([CLI, "rule-worker", str(trial), "--rule", "ExplodingTensor", "--rule",
                        "ExplodingTensor:only_nan=True"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "rule ExplodingTensor is given twice: give each rule once" in p.stderr


def test_a_rule_worker_stuck_past_the_rules_timeout_is_killed_and_reported(tmp_path):
    trial = tmp_path / "stuck"
    p = subprocess.Popen(_run_argv(trial, "--json", "--rules-timeout", "1", "--rule",
                                   "ExplodingTensor", code=SLEEPER.format(2)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    (victim,) = _wait_for(lambda: _workers_of(trial), what="the rule worker")
    os.kill(victim, signal.SIGSTOP)  # stuck: SIGTERM cannot end it, SIGKILL can
    out, _ = p.communicate(timeout=120)
    summary = _summary(out)
    (rule,) = summary["rules"]
    assert rule["status"] == "Error", rule
    assert "did not end within --rules-timeout (1 s)" in rule["message"]
    assert p.returncode == 6
    assert not _workers_of(trial)


# ---- the terminal and signals -----------------------------------------------------------------


def _run_in_pty(argv, script):
    """Runs argv on a new pseudo-terminal. `script` is [(wait_for_bytes, bytes_to_type)]; returns
    (everything the terminal showed, exit code)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    out, steps, t0 = b"", list(script), time.monotonic()
    while time.monotonic() - t0 < 60:
        if steps and steps[0][0] in out:
            os.write(fd, steps.pop(0)[1])
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the other side closed
                break
            if not chunk:
                break
            out += chunk
    deadline = time.monotonic() + 60
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.close(fd)
    if ended[0] == 0:  # hung (a stopped training): its orphaned group then gets SIGHUP
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError("trainscope run hung; the terminal showed:\n"
                             + out.decode(errors="replace"))
    return out.decode(errors="replace"), os.waitstatus_to_exitcode(ended[1])


def test_the_training_owns_the_terminal(tmp_path):
    """A training that reads the terminal (input(), pdb) gets it; in a background process group
    it would be stopped by SIGTTIN and the run would hang."""
    trial = tmp_path / "tty"
    out, code = _run_in_pty(_run_argv(trial, code="s = input('name? '); print('got', s.upper())"),
                            [(b"name? ", b"ada\n")])
    assert "got ADA" in out, out
    assert code == 0, out


def test_ctrl_c_reaches_the_training_and_the_rules_still_finish(tmp_path):
    """Ctrl-C on the terminal interrupts the training (KeyboardInterrupt), not the rule workers:
    they read the trial to its end and finish with a verdict instead of Stopped."""
    trial = tmp_path / "ctrlc"
    training = ("import time\ntry:\n    print('ready', flush=True)\n    time.sleep(60)\n"
                "except KeyboardInterrupt:\n    print('interrupted', flush=True)\n"
                "    raise SystemExit(7)\n")
    out, code = _run_in_pty(_run_argv(trial, "--rule", "MaxInitializationTime", code=training),
                            [(b"ready", b"\x03")])
    assert "interrupted" in out, out
    # The live view: a status line per rule, redrawn in place (cursor up, clear) on a terminal.
    assert "trainscope: training running for" in out and "\x1b[J" in out, out
    assert any(line.lstrip().startswith("MaxInitializationTime") and "findings 0" in line
               for line in out.splitlines()), out
    assert code == 5, out  # the training failed (its exit code 7)
    assert "exited with code 7" in out
    status_file = trial / "rule-output" / "MaxInitializationTime" / "status.json"
    status = json.loads(status_file.read_text())
    assert status["status"] == "NoIssuesFound" and status["finished"], status


def test_sigterm_is_forwarded_to_the_training(tmp_path):
    trial = tmp_path / "term"
    marker = tmp_path / "got_sigterm"
    training = (f"import signal, sys, time\n"
                f"def on_term(*_):\n    open({str(marker)!r}, 'w').close()\n    sys.exit(0)\n"
                f"signal.signal(signal.SIGTERM, on_term)\nprint('ready', flush=True)\n"
                f"time.sleep(60)\n")
    p = subprocess.Popen(_run_argv(trial, "--json", code=training),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Under --json the training's stdout goes to stderr (stdout holds only the JSON summary).
    while (line := p.stderr.readline()) and line.strip() != "ready":
        pass
    assert line.strip() == "ready"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert marker.exists(), err
    summary = _summary(out)
    assert summary["training_exit_code"] == 0 and p.returncode == 0


def test_status_of_a_folder_that_is_not_a_trial():
    p = subprocess.run([CLI, "status", "/nonexistent/trial"], capture_output=True, text=True)
    assert p.returncode == 1
    assert "/nonexistent/trial is not a folder" in p.stderr


# ---- the hook configuration: what the rules need, overridden by the user's -------------------

TINY_TRAINING = """
import torch
import trainscope.pytorch as ts
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
hook = ts.Hook.create_from_json_file()
hook.register_module(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(12):
    opt.zero_grad()
    model(torch.randn(16, 4)).pow(2).mean().backward()
    opt.step()
hook.close()
"""


def test_hook_config_overrides_what_the_rules_ask_for(tmp_path):
    user = tmp_path / "hook.json"
    user.write_text(json.dumps({
        "HookParameters": {"save_interval": "6"},
        "CollectionConfigurations": [
            {"CollectionName": "weights", "CollectionParameters": {"save_interval": "3"}},
        ],
    }))
    trial = tmp_path / "hooked"
    p = subprocess.run(_run_argv(trial, "--json", "--rule", "VanishingGradient", "--hook-config",
                                 str(user), code=TINY_TRAINING),
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    written = json.loads((trial / ".trainscope" / "hook_config.json").read_text())
    assert written["HookParameters"]["save_interval"] == "6"
    assert written["HookParameters"]["include_workers"] == "all"  # run's, not overridden
    colls = {c["CollectionName"]: c["CollectionParameters"]
             for c in written["CollectionConfigurations"]}
    assert colls["weights"] == {"save_interval": "3"}  # the user's entry
    assert colls["gradients"]["save_interval"] == "10"  # VanishingGradient's, kept

    import trainscope

    tr = trainscope.create_trial(str(trial))
    assert tr.tensor("Sequential_0.weight").steps() == [0, 3, 6, 9]
    assert tr.tensor("gradient/Sequential_0.weight").steps() == [0, 10]
    assert _summary(p.stdout)["rules"][0]["status"] == "NoIssuesFound"


@pytest.mark.parametrize("content,message", [
    ("{\"HookParameter\": {}}", 'unexpected key "HookParameter"'),
    ("[1, 2]", "not a JSON object"),
    ('{"CollectionConfigurations": [{"CollectionParameters": {}}]}', 'needs a "CollectionName"'),
    ("{\"HookParameters\": {\"save_interval\": \"-2\"}}", "save_interval"),
])
def test_a_bad_hook_config_stops_run_before_the_training(tmp_path, content, message):
    user = tmp_path / "hook.json"
    user.write_text(content)
    marker = tmp_path / "training_ran"
    p = subprocess.run(_run_argv(tmp_path / "t", "--hook-config", str(user),
                                 code=f"open({str(marker)!r}, 'w')"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert f"--hook-config {user}" in p.stderr and message in p.stderr, p.stderr
    assert not marker.exists()


def test_a_hook_writing_outside_the_watched_trial_is_named(tmp_path):
    """The README's Hook(out_dir=...) under `trainscope run --out` elsewhere: the training says,
    at the hook's creation, that the rules watch another folder and how to fix it; a hook on
    the watched folder says nothing."""
    other = tmp_path / "elsewhere"
    script = TINY_TRAINING.replace("ts.Hook.create_from_json_file()",
                                   f"ts.Hook(out_dir={str(other)!r})")
    trial = tmp_path / "watched"
    p = subprocess.run(_run_argv(trial, "--rule", "VanishingGradient", code=script),
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert f"this hook writes its trial to {other}, but `trainscope run` watches {trial}" in \
        p.stderr, p.stderr[-3000:]
    assert f"trainscope run --out {other}" in p.stderr
    assert other.is_dir()  # the hook still writes where it was told

    same = TINY_TRAINING.replace("ts.Hook.create_from_json_file()",
                                 f"ts.Hook(out_dir={str(tmp_path / 'same')!r})")
    p = subprocess.run(_run_argv(tmp_path / "same", "--rule", "VanishingGradient", code=same),
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert "this hook writes its trial to" not in p.stderr, p.stderr[-3000:]


def test_findings_of_one_problem_are_one_diagnosis_led_by_its_root_cause(tmp_path):
    """The main job's problem without the stop action: dead ReLUs after a too-high learning rate,
    then a loss that no longer learns and weights that no longer move. The summary, `status` and
    both JSON outputs lead with the dead units (the upstream signal, first seen) and list the
    other findings under it as following from it, not as three problems in alphabetical order.
    With the system sampler, as a user runs it: on a machine whose cores other jobs hold,
    StepOutlier tells their stalls from the training's by its samples (without them it counted
    them and added a second diagnosis, once, under three test suites at once)."""
    trial = tmp_path / "t"
    summary = tmp_path / "summary.json"
    p = subprocess.run(
        [CLI, "run", "--out", str(trial), "--rules", "default",
         "--json-out", str(summary), "--", sys.executable,
         str(REPO / "examples" / "pytorch" / "digits_mlp.py"), "--lr", "1.0", "--epochs", "8"],
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600)
    assert p.returncode == 3, (p.stdout[-3000:], p.stderr[-3000:])
    code, status = _status_json(trial)
    found = sorted(r["rule"] for r in status["rules"] if r["status"] == "IssuesFound")
    assert "DeadRelu" in found and len(found) >= 2, found  # one problem, several rules
    for d in (status["diagnosis"], json.loads(summary.read_text())["diagnosis"]):
        assert len(d) == 1, d
        assert d[0]["cause"] == "DeadRelu" and d[0]["stage"] == "units", d
        assert sorted([d[0]["cause"]] + [e["rule"] for e in d[0]["evidence"]]) == found
        assert d[0]["recommendation"]
    out = p.stdout[p.stdout.index("trainscope: training finished"):]
    lead = out.index("DeadRelu at step")
    assert "the likely root cause of the" in out[lead:lead + 200], out
    evidence = [line for line in out.splitlines() if line.startswith("  follows from it: ")]
    assert len(evidence) == len(found) - 1, out
    assert all(out.index(line) > lead for line in evidence)
    text = subprocess.run([CLI, "status", str(trial)], capture_output=True, text=True,
                          env=_env()).stdout
    assert text.index("DeadRelu at step") < text.index("follows from it: "), text


def test_a_killed_training_s_handed_over_steps_are_recovered_by_run(tmp_path):
    """The durability contract under the supervisor (docs/formats/journal.md): a training that
    saves 4 MiB a step through one lagging I/O thread kills itself with SIGKILL right after its
    20th step was handed over; `trainscope run` publishes what the training left in the journal
    as soon as it ended, so the trial holds steps 0-19, whole, and no journal."""
    trial = tmp_path / "t"
    code = (
        "import os, signal, torch\n"
        "import trainscope.pytorch as ts\n"
        f"hook = ts.Hook(out_dir={str(trial)!r}, include_regex=['big'],\n"
        "               save_config=ts.SaveConfig(save_interval=1), quiet=True)\n"
        "x = torch.zeros(1024 * 1024)\n"
        "for step in range(21):\n"
        "    hook.step()\n"
        "    if step == 20:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)  # steps 0-19 handed over\n"
        "    x[0] = step\n"
        "    hook.record_tensor_value('big', x)\n")
    env = _env()
    env["TRAINSCOPE_THREADS"] = "1"
    env["TRAINSCOPE_JOURNAL"] = "1"  # the journal is opt-in (docs/formats/journal.md)
    p = subprocess.run(_run_argv(trial, code=code), capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 5, p.stderr[-3000:]  # the training failed (killed)
    import trainscope

    t = trainscope.create_trial(str(trial))
    assert t.steps() == list(range(20)), (t.steps(), p.stderr[-3000:])
    for s in (0, 19):
        assert t.tensor("big_output_0").value(s)[0] == s
    assert not (trial / ".trainscope" / "journal").exists()


def test_rules_all_starts_and_says_what_the_label_rules_need(tmp_path):
    """`--rules all` starts every rule but SimilarAcrossRuns; Confusion and ClassImbalance on a
    script that saves no labels end NoIssuesFound saying there was nothing to judge and what to
    save, instead of refusing the run or passing in silence."""
    trial = tmp_path / "all"
    argv = [CLI, "run", "--out", str(trial), "--rules", "all", "--no-system", "--json", "--",
            sys.executable, "-c", TINY_TRAINING]
    p = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    rules = {r["rule"]: r for r in _summary(p.stdout)["rules"]}
    assert "SimilarAcrossRuns" not in rules and {"Confusion", "ClassImbalance"} <= set(rules)
    for name in ("Confusion", "ClassImbalance"):
        assert rules[name]["status"] == "NoIssuesFound", rules[name]
        assert "nothing to judge" in rules[name]["message"], rules[name]
        assert "hook.save_tensor(" in rules[name]["message"], rules[name]


def _run_default_rules(tmp_path, code):
    """Runs the script `code` under `trainscope run --rules default` (no system sampler); it must
    exit 0 (no rule found anything). The trial's path."""
    script = tmp_path / "train.py"
    script.write_text(code)
    trial = tmp_path / "t"
    p = subprocess.run([CLI, "run", "--out", str(trial), "--rules", "default", "--no-system",
                        "--", sys.executable, str(script)],
                       capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600)
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    return trial


_SPARSE_EMBEDDING = """
import torch
from torch import nn

torch.manual_seed(0)
# A language model's shape: a vocabulary far larger than a batch, so the embedding's gradient is
# zero but for the rows of the batch's tokens; a small head, kept fixed (a frozen pretrained
# head), so those rows are small too.
model = nn.Sequential(nn.Embedding(100000, 8), nn.Flatten(), nn.Linear(64, 2))
nn.init.normal_(model[2].weight, std=1e-3)
model[2].requires_grad_(False)
opt = torch.optim.SGD(model[0].parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
for step in range(40):
    x = torch.randint(0, 100000, (4, 8))
    y = (x[:, 0] % 2)
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
"""


def test_a_large_vocabulary_s_sparse_embedding_gradient_is_not_vanishing(tmp_path):
    """An embedding's gradient is zero for every token not in the batch: its mean |gradient|
    over all 800 000 elements is about 1e-8, over the 32 rows the batch used about 1e-4.
    VanishingGradient judges it on its non-zero part, which needs its zero share at the steps
    whose gradients are saved as reductions only (from step 10 on, under --rules default): a
    41 559-word language model was called vanishing at step 20 without it."""
    trial = _run_default_rules(tmp_path, _SPARSE_EMBEDDING)
    _, status = _status_json(trial)
    rules = {r["rule"]: r for r in status["rules"]}
    assert rules["VanishingGradient"]["status"] == "NoIssuesFound", rules["VanishingGradient"]
    assert rules["VanishingGradient"]["steps_evaluated"] >= 4, rules["VanishingGradient"]
    # The condition the rule would have fired on is there: from step 10 on the trial holds the
    # embedding's gradient as reductions only, its mean |gradient| over all of it below 1e-7.
    import trainscope

    t = trainscope.create_trial(str(trial))
    g = t.tensor("gradient/Sequential_0.weight")
    assert g.reduction_value(20, "mean", abs=True) < 1e-7
    assert g.reduction_value(20, "zero_fraction") > 0.999


_TRAIN_THEN_EVAL = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.CrossEntropyLoss()
x, y = torch.randn(64, 16), torch.randint(0, 2, (64,))
for epoch in range(2):
    model.train()
    for i in range(0, 64 * 15, 64):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        for i in range(15):
            loss_fn(model(x), y)
"""


def test_weights_are_saved_in_training_steps_only(tmp_path):
    """The default rules read weights in training steps only (they do not move in an evaluation
    pass): under --rules default the trial holds them at TRAIN steps and not at EVAL steps,
    where the losses are still saved (Overfit compares them)."""
    from trainscope import modes

    trial = _run_default_rules(tmp_path, _TRAIN_THEN_EVAL)
    import trainscope

    t = trainscope.create_trial(str(trial))
    assert t.steps(mode=modes.EVAL), t.steps()
    w = t.tensor("Sequential_0.weight")
    assert w.steps(mode=modes.TRAIN) == [0, 10, 20]
    assert w.steps(mode=modes.EVAL) == []
    losses = t.tensor_names(collection="losses")
    assert losses and t.tensor(losses[0]).steps(mode=modes.EVAL), losses
