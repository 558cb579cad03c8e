"""The command line at its edges (issues 14 and 17): bad flags refused before the training starts,
tables that keep the whole message, `--json` that parses, folders that are not trials, status files
that are damaged, trial data that carries terminal escapes, the stop message, and two runs on one
output folder.

Every test runs the real `trainscope` command (the build's, else the installed one); trainings are
`python -c` scripts of a few steps.
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from profiler_util import trainscope_cli

CLI = trainscope_cli()
pytestmark = pytest.mark.skipif(
    CLI is None, reason="no trainscope command: build it or pip install .")


def _run_argv(trial, *options, code):
    """`trainscope run` with no rules but OPTIONS and no system sampler, on `python -c CODE`."""
    return [CLI, "run", "--out", str(trial), "--rules", "none", "--no-system", *options, "--",
            sys.executable, "-c", code]


def _cli(*args, timeout=60):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def _flat(text):
    """Text with runs of whitespace (line breaks of a wrapped cell included) made one space."""
    return " ".join(text.split())


# ---- 1. every flag checked before the training starts -----------------------------------------


@pytest.mark.parametrize("flag,value,allowed", [
    ("--save-interval", "-1", "at least 1"),
    ("--save-interval", "0", "at least 1"),
    ("--metrics-port", "70000", "0 to 65535"),
    ("--metrics-port", "-1", "0 to 65535"),
    ("--rules-timeout", "-5", "more than 0"),
    ("--rules-nice", "20", "0 to 19"),
    ("--rules-nice", "-1", "0 to 19"),
    ("--stop-grace", "-5", "0 or more"),
    ("--system-interval-ms", "5", "100 to 60000"),
])
def test_a_bad_flag_value_is_refused_before_the_training(tmp_path, flag, value, allowed):
    marker = tmp_path / "training_ran"
    p = subprocess.run(_run_argv(tmp_path / "t", f"{flag}={value}",
                                 code=f"open({str(marker)!r}, 'w')"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert f"{flag} {value}" in p.stderr and allowed in p.stderr, p.stderr
    assert not marker.exists()
    assert "metrics at" not in p.stderr


def test_a_webhook_without_a_url_is_refused_at_start(tmp_path):
    marker = tmp_path / "training_ran"
    p = subprocess.run(_run_argv(tmp_path / "t", "--action", "webhook",
                                 code=f"open({str(marker)!r}, 'w')"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "--action webhook" in p.stderr and "url" in p.stderr, p.stderr
    assert not marker.exists()


def test_a_hook_config_json_error_gives_line_and_column(tmp_path):
    user = tmp_path / "hook.json"
    user.write_text('{\n  "HookParameters": {\n    "save_interval": "5",\n  }\n}\n')
    p = subprocess.run(_run_argv(tmp_path / "t", "--hook-config", str(user), code="pass"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert f"--hook-config {user}" in p.stderr, p.stderr
    assert re.search(r"line 4, column \d+", p.stderr), p.stderr
    assert not (tmp_path / "t").exists()  # refused before anything was made under --out


# ---- 2, 3, 6, 7: one real run that stops, read by the summary, --json and status ---------------

# A training whose loss turns NaN at step 5, under a tensor name that carries a terminal escape;
# it goes on stepping (slowly) until the stop request reaches it.
NAN_TRAINING = r"""
import time, torch
import trainscope.pytorch as ts
hook = ts.Hook.create_from_json_file()
print("training says hello", flush=True)
for step in range(400):
    hook.step()
    value = float("nan") if step >= 5 else 1.0 / (step + 1)
    hook.save_tensor("loss\x1b[2J", torch.tensor([value]), "losses")
    time.sleep(0.02)
hook.close()
"""


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    trial = tmp_path_factory.mktemp("stopped") / "trial"
    p = subprocess.run([CLI, "run", "--out", str(trial), "--rules", "none", "--no-system",
                        "--rule", "ExplodingTensor", "--action", "stop", "--",
                        sys.executable, "-c", NAN_TRAINING],
                       capture_output=True, text=True, timeout=300)
    return trial, p


def test_the_stop_message_says_where_the_training_stopped_and_why_later(stopped_run):
    trial, p = stopped_run
    assert p.returncode == 4, (p.returncode, p.stdout[-3000:], p.stderr[-3000:])
    stop = json.loads((trial / "rule-output" / "stop_training.json").read_text())
    import trainscope

    last = trainscope.create_trial(str(trial)).steps()[-1]
    assert last > stop["step"], (last, stop)  # it ran on while the rule caught up
    m = re.search(r"training was STOPPED by ExplodingTensor at step (\d+).*?"
                  r"the training stopped at step (\d+)", _flat(p.stdout))
    assert m, p.stdout
    assert int(m.group(1)) == stop["step"] and int(m.group(2)) == last
    assert "checks for the stop request" in _flat(p.stdout)
    # Scripts get it too.
    st = json.loads(_cli("status", trial, "--json").stdout)
    assert st["last_saved_step"] == last and st["stop_request"]["step"] == stop["step"]


def test_trial_data_reaches_the_terminal_escaped(stopped_run, tmp_path):
    trial, p = stopped_run
    # The summary names the tensor; its escape is shown, not sent.
    assert "\x1b" not in p.stdout, repr(p.stdout[-2000:])
    assert "loss\\x1b[2J" in p.stdout, p.stdout
    ls = _cli("ls", trial)
    assert ls.returncode == 0, ls.stderr
    assert "\x1b" not in ls.stdout and "loss\\x1b[2J" in ls.stdout, repr(ls.stdout)
    st = _cli("status", trial)
    assert "\x1b" not in st.stdout and "loss\\x1b[2J" in _flat(st.stdout), repr(st.stdout)
    # JSON keeps the name as it is (escaped the JSON way).
    lsj = json.loads(_cli("ls", trial, "--json").stdout)
    assert "loss\x1b[2J" in [t["name"] for t in lsj["tensors"]]


def test_a_status_message_with_escapes_is_shown_escaped(tmp_path):
    rule = tmp_path / "rule-output" / "Evil"
    rule.mkdir(parents=True)
    (rule / "status.json").write_text(json.dumps(
        {"version": 1, "rule": "Evil", "status": "Error", "finished": True,
         "message": "boom\x1b]0;owned\x07\x1b[2J done \u009b2J ünïcode"}))
    p = _cli("status", tmp_path)
    assert "\x1b" not in p.stdout and "\x07" not in p.stdout, repr(p.stdout)
    assert "\u009b" not in p.stdout, repr(p.stdout)  # a C1 CSI
    assert "boom\\x1b]0;owned\\x07\\x1b[2J done \\u009b2J ünïcode" in p.stdout, p.stdout
    assert p.returncode == 6


def test_the_table_keeps_the_whole_message(tmp_path):
    """A rule with no data ends in Error with a long message whose end says what to do: the
    table shows all of it (wrapped), in `run`'s summary and in `status`."""
    trial = tmp_path / "nodata"
    p = subprocess.run(_run_argv(trial, "--rule", "VanishingGradient", code="pass"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 6, (p.returncode, p.stderr)
    message = json.loads((trial / "rule-output" / "VanishingGradient" / "status.json")
                         .read_text())["message"]
    assert len(message) > 150, message  # a real long message
    for out in (p.stdout, _cli("status", trial).stdout):
        assert "…" not in out, out
        assert _flat(message) in _flat(out), out
        table = out[out.index("rule "):]
        table = table.split("\n\n")[0]
        assert max(len(line) for line in table.splitlines()) <= 100, out  # wrapped, not wide


def test_json_stays_parseable_when_the_training_prints(tmp_path):
    trial = tmp_path / "json"
    p = subprocess.run(_run_argv(trial, "--json", "--rule", "ExplodingTensor",
                                 "--rule", "LossNotDecreasing:num_steps=7",
                                 code="print('hello from the training'); print('{not json')"),
                       capture_output=True, text=True, timeout=120)
    summary = json.loads(p.stdout)  # nothing but the JSON on stdout
    assert "hello from the training" in p.stderr
    assert summary["training_exit_code"] == 0
    assert summary["last_saved_step"] is None  # the training saved nothing
    params = {r["rule"]: r["parameters"] for r in summary["rules"]}
    assert params["ExplodingTensor"]["only_nan"] is False
    assert params["ExplodingTensor"]["collection_names"] is None
    assert params["LossNotDecreasing"]["num_steps"] == 7
    assert params["LossNotDecreasing"]["diff_percent"] == 0.1
    # `status --json` types them the same way.
    st = json.loads(_cli("status", trial, "--json").stdout)
    assert {r["rule"]: r["parameters"] for r in st["rules"]} == params
    # --json-out writes the same summary to a file; stdout stays the training's.
    out_file = tmp_path / "summary.json"
    p2 = subprocess.run(_run_argv(tmp_path / "json2", "--json-out", str(out_file),
                                  code="print('hello again')"),
                        capture_output=True, text=True, timeout=120)
    assert p2.returncode == 0, p2.stderr
    assert "hello again" in p2.stdout
    assert json.loads(out_file.read_text())["training_exit_code"] == 0


def test_rules_json_gives_typed_defaults():
    (rule,) = json.loads(_cli("rules", "LossNotDecreasing", "--json").stdout)
    params = {p["name"]: p for p in rule["parameters"]}
    assert params["num_steps"]["default"] == 10 and params["num_steps"]["type"] == "integer"
    assert params["diff_percent"]["default"] == 0.1
    assert params["use_losses_collection"]["default"] is True
    assert params["collection_names"]["default"] is None
    assert params["mode"]["default"] is None and params["mode"]["type"] == "string"


# ---- 4. folders that are not trials ------------------------------------------------------------


@pytest.mark.parametrize("command", ["status", "ls", "timeline"])
def test_a_folder_that_is_not_a_trial_is_named_so(tmp_path, command):
    (tmp_path / "notes.txt").write_text("just a folder\n")
    p = _cli(command, tmp_path)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert f"{tmp_path} is not a trial" in p.stderr, p.stderr
    assert "collections/" in p.stderr  # what a trial holds
    assert "OpenWhenReady" not in p.stderr + p.stdout
    assert not (tmp_path / "merged_timeline.json").exists()
    if command == "ls":
        assert "--wait" in p.stderr


TINY_HOOKED = """
import sys, time, torch
import trainscope.pytorch as ts
time.sleep(1.0)
hook = ts.Hook(out_dir=sys.argv[1], save_config=ts.SaveConfig(save_interval=1))
for step in range(3):
    hook.save_tensor("x", torch.tensor([float(step)]), "default")
    hook.step()
hook.close()
"""


def test_ls_wait_waits_for_a_trial_to_appear(tmp_path):
    trial = tmp_path / "later"
    ls = subprocess.Popen([CLI, "ls", str(trial), "--wait", "60"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    subprocess.run([sys.executable, "-c", TINY_HOOKED, str(trial)], check=True, timeout=120)
    out, err = ls.communicate(timeout=90)
    assert ls.returncode == 0, err
    assert re.search(r"^x\s", out, re.M), out


# ---- 5. damaged status files -------------------------------------------------------------------


@pytest.mark.parametrize("content,problem", [
    ('{"version": 1, "status": "NoIssu', "not valid JSON"),
    ("", "empty"),
    ("garbage\x00\x01", "not valid JSON"),
    ("[]", "not a JSON object"),
    ('{"status": 123}', '"status"'),
    ('"str"', "not a JSON object"),
])
def test_a_damaged_status_file_is_named_not_shown_in_progress(tmp_path, content, problem):
    rule = tmp_path / "rule-output" / "VanishingGradient"
    rule.mkdir(parents=True)
    path = rule / "status.json"
    path.write_text(content)
    for args in ([], ["--json"]):
        p = _cli("status", tmp_path, *args)
        assert p.returncode == 7, (args, p.returncode, p.stdout, p.stderr)
        assert str(path) in p.stderr and problem in p.stderr, p.stderr
        assert "InProgress" not in p.stdout and "Traceback" not in p.stderr
        if args:
            (r,) = json.loads(p.stdout)["rules"]
            assert r["status"] == "Unreadable" and str(path) in r["error"]


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_status_file_that_is_not_a_regular_file_is_refused_not_read(tmp_path, kind):
    # A FIFO would block a read for ever; /dev/zero would fill memory.
    rule = tmp_path / "rule-output" / "ExplodingTensor"
    rule.mkdir(parents=True)
    path = rule / "status.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    p = _cli("status", tmp_path, timeout=30)
    assert p.returncode == 7, (p.returncode, p.stderr)
    assert str(path) in p.stderr and "not a regular file" in p.stderr, p.stderr


def test_ls_on_a_hostile_collections_file_fails_with_a_message_not_an_abort(tmp_path):
    # A collections file that is a link to /dev/zero, read under a 2 GB address-space limit:
    # an error on stderr and exit 1 (from the reader, or the command's last resort), never
    # std::terminate.
    import resource

    coll = tmp_path / "collections" / "000000000"
    coll.mkdir(parents=True)
    (coll / "worker_0_collections.json").symlink_to("/dev/zero")

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    p = subprocess.run([CLI, "ls", str(tmp_path)], capture_output=True, text=True, timeout=120,
                       preexec_fn=limit)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "terminate called" not in p.stderr and p.stderr.startswith("trainscope"), p.stderr


# ---- 8. one run per output folder --------------------------------------------------------------


def test_a_second_run_on_an_owned_output_folder_is_refused(tmp_path):
    trial = tmp_path / "shared"
    first = subprocess.Popen(_run_argv(trial, "--json", code="import time; time.sleep(3)"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = trial / ".trainscope" / "run.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    marker = tmp_path / "second_ran"
    p = subprocess.run(_run_argv(trial, code=f"open({str(marker)!r}, 'w')"),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert f"pid {first.pid}" in p.stderr and str(trial) in p.stderr, p.stderr
    assert not marker.exists()
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert json.loads(out)["training_exit_code"] == 0


# ---- the rule workers yield the cores to the training -------------------------------------------

_READ_WORKER_NICE = r"""
import os, sys, time
out, parent = sys.argv[1], os.getppid()
found = {}
for _ in range(100):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if b"rule-worker" in cmd and int(fields[1]) == parent:
            found[pid] = int(fields[16])  # field 19 of stat: nice
    if found:
        break
    time.sleep(0.05)
mine = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[16])
open(out, "w").write(repr((mine, sorted(found.values()))))
"""


@pytest.mark.parametrize("option,added", [((), 10), (("--rules-nice", "0"), 0),
                                           (("--rules-nice", "5"), 5)])
def test_rule_workers_run_nicer_than_the_training(tmp_path, option, added):
    """Each rule worker (here the debugging rules' and the profiler rules') is started `added`
    steps nicer than the training: on busy cores it takes what the training leaves."""
    out = tmp_path / "nice.txt"
    argv = [CLI, "run", "--out", str(tmp_path / "t"), "--rules", "none", "--rule",
            "LossNotDecreasing", "--rule", "StepOutlier", "--no-system", *option, "--",
            sys.executable, "-c", _READ_WORKER_NICE, str(out)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    # 6: LossNotDecreasing ends in Error on a trial with no tensors; the workers ran all the same
    assert p.returncode in (0, 6), p.stderr
    mine, workers = eval(out.read_text())
    assert len(workers) == 2, (workers, p.stderr)
    assert workers == [min(19, mine + added)] * 2, (mine, workers)
