"""A trial that lost steps says so (issue 17): `trainscope run` and `trainscope status` name the
worker, the steps lost and the first error, in the table and in --json, and exit 8
(kExitIncomplete) where the rules found nothing; Trial.incomplete() returns the markers, read
bounded. Also: the hook's stop message is escaped, and a symlink planted in the output folder is
not followed out of it.

The trainings are real (a 1 MiB MLP, a few steps); the write failures come from RLIMIT_FSIZE set
inside the training (anywhere) or a full 3 MiB tmpfs (where the test may mount one).
"""

import json
import os
import subprocess
import sys

import pytest

import trainscope.pytorch as ts
from hook_util import env
from profiler_util import trainscope_cli

CLI = trainscope_cli()
needs_cli = pytest.mark.skipif(CLI is None,
                               reason="no trainscope command: build it or pip install .")

STEPS = 12
EXIT_INCOMPLETE = 8

# The training `trainscope run` starts: its hook from the run's configuration; with a file-size
# limit (argv[1] bytes), the steps that save the 1 MiB of weights fail with EFBIG.
TRAIN = r'''
import resource, signal, sys
import torch, torch.nn as nn
import trainscope.pytorch as ts

fsize = int(sys.argv[1])
if fsize:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2))
crit = nn.CrossEntropyLoss()
hook = ts.Hook.create_from_json_file()
hook.register_module(model)
hook.register_loss(crit)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(%d):
    opt.zero_grad()
    crit(model(torch.randn(4, 512)), torch.randint(0, 2, (4,))).backward()
    opt.step()
hook.close()
''' % STEPS


def _run(tmp_path, out, fsize, *options):
    script = tmp_path / "train_incomplete.py"
    script.write_text(TRAIN)
    config = tmp_path / "hook_config.json"
    config.write_text(json.dumps({
        "HookParameters": {"save_interval": "1"},
        "CollectionConfigurations": [{"CollectionName": "weights"},
                                     {"CollectionName": "losses"}]}))
    argv = [CLI, "run", "--out", str(out), "--rules", "none", "--no-system",
            "--hook-config", str(config), *options, "--",
            sys.executable, str(script), str(fsize)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env())


def _flat(text):
    return " ".join(text.split())


@needs_cli
def test_run_and_status_say_the_trial_is_incomplete(tmp_path):
    out = tmp_path / "t"
    p = _run(tmp_path, out, 128 * 1024, "--json")
    assert p.returncode == EXIT_INCOMPLETE, (p.returncode, p.stderr[-2000:])
    summary = json.loads(p.stdout)
    assert summary["training_exit_code"] == 0 and summary["exit_code"] == EXIT_INCOMPLETE
    inc = summary["incomplete"]
    assert inc is not None and inc["steps_lost"] > 0, inc
    (w,) = inc["workers"]
    assert w["worker"] == "worker_0" and w["readable"] and w["final"]
    assert w["steps_failed"] == inc["steps_lost"] and w["first_lost_step"] == 0
    assert "File too large" in w["first_error"]
    assert w["path"] == os.path.join(str(out), "incomplete_worker_0.json")
    # The reader agrees with the disk: the steps written are the steps it lists.
    trial = ts.create_trial(str(out))
    assert w["steps_written"] == len(trial.steps())
    assert w["steps_written"] + w["steps_failed"] + w["steps_dropped"] == STEPS
    assert trial.incomplete() == [{k: w[k] for k in w}]

    # status: the same, in JSON and in words.
    s = subprocess.run([CLI, "status", str(out), "--json"], capture_output=True, text=True)
    assert s.returncode == EXIT_INCOMPLETE, s.stderr
    assert json.loads(s.stdout)["incomplete"] == inc
    s = subprocess.run([CLI, "status", str(out)], capture_output=True, text=True)
    assert s.returncode == EXIT_INCOMPLETE
    text = _flat(s.stdout)
    assert "INCOMPLETE: worker worker_0 lost %d steps" % inc["steps_lost"] in text, text
    assert "File too large" in text and "incomplete_worker_0.json" in text


@needs_cli
def test_run_table_names_the_worker_the_loss_and_the_error(tmp_path):
    out = tmp_path / "t"
    p = _run(tmp_path, out, 128 * 1024)
    assert p.returncode == EXIT_INCOMPLETE, (p.returncode, p.stderr[-2000:])
    text = _flat(p.stdout)
    m = json.loads((out / "incomplete_worker_0.json").read_text())
    lost = m["steps_failed"] + m["steps_dropped"]
    assert lost > 0
    assert f"INCOMPLETE: worker worker_0 lost {lost} steps" in text, text
    assert "first error:" in text and "File too large" in text


@needs_cli
def test_a_complete_run_exits_0_with_no_incomplete(tmp_path):
    out = tmp_path / "t"
    p = _run(tmp_path, out, 0, "--json")
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["incomplete"] is None
    assert ts.create_trial(str(out)).incomplete() == []


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@needs_cli
def test_full_tmpfs_run_is_incomplete(tmp_path, small_tmpfs):
    out = small_tmpfs / "t"
    p = _run(tmp_path, out, 0, "--json")
    assert p.returncode == EXIT_INCOMPLETE, (p.returncode, p.stderr[-2000:])
    inc = json.loads(p.stdout)["incomplete"]
    (w,) = inc["workers"]
    assert w["worker"] == "worker_0"
    if w["readable"]:  # empty when the disk had no room for its content
        assert "No space left on device" in w["first_error"] and inc["steps_lost"] > 0
    else:
        assert w["problem"].startswith("empty")


def test_marker_read_is_bounded_and_refuses_special_files(tmp_path):
    out = tmp_path / "t"
    hook = ts.Hook(out_dir=str(out), include_collections=["losses"])
    hook.close()
    trial = ts.create_trial(str(out))
    assert trial.incomplete() == []
    (out / "incomplete_worker_0.json").write_text("")  # a full disk: no room for the content
    os.symlink("/dev/zero", out / "incomplete_worker_1.json")
    os.mkfifo(out / "incomplete_worker_2.json")
    (out / "incomplete_worker_3.json").write_text(" " * (1 << 20))
    (out / "incomplete_worker_4.json").write_text('{"worker": "worker_4", "final": true, '
                                                  '"steps_written": 3, "steps_failed": 2, '
                                                  '"steps_dropped": 1, "first_lost_step": 3, '
                                                  '"first_error": null}')
    got = {m["worker"]: m for m in trial.incomplete()}  # returns: no hang on the FIFO
    assert sorted(got) == ["worker_%d" % i for i in range(5)]
    assert got["worker_0"]["problem"].startswith("empty")
    assert "symbolic link" in got["worker_1"]["problem"]
    assert "not a regular file" in got["worker_2"]["problem"]
    assert "larger than" in got["worker_3"]["problem"]
    for i in range(4):
        assert not got[f"worker_{i}"]["readable"] and got[f"worker_{i}"]["steps_failed"] is None
    w4 = got["worker_4"]
    assert w4["readable"] and w4["problem"] is None and w4["first_error"] is None
    assert (w4["steps_written"], w4["steps_failed"], w4["steps_dropped"]) == (3, 2, 1)


# ---- the hook's stop message is escaped -------------------------------------------------------

STOP = r'''
import json, os, sys, time
import torch, torch.nn as nn
import trainscope.pytorch as ts

out = sys.argv[1]
model = nn.Linear(4, 2)
crit = nn.MSELoss()
hook = ts.Hook(out_dir=out, include_collections=["losses"],
               save_config=ts.SaveConfig(save_interval=1))
hook.register_module(model)
hook.register_loss(crit)
for step in range(6):
    if step == 3:  # a rule asks the training to stop, with an explanation that carries escapes
        os.makedirs(os.path.join(out, "rule-output"), exist_ok=True)
        with open(os.path.join(out, "rule-output", "stop_training.json"), "w") as f:
            json.dump({"rule": "Evil\x1b]0;title\x07", "step": 2,
                       "explanation": "bad\x1b[2J\x1b[31m red\nline"}, f)
        time.sleep(0.011)  # the hook looks at most every 10 ms: this boundary looks
    crit(model(torch.randn(3, 4)), torch.randn(3, 2)).backward()
hook.close()
'''


def test_the_hook_stop_message_is_escaped(tmp_path):
    script = tmp_path / "stop.py"
    script.write_text(STOP)
    p = subprocess.run([sys.executable, str(script), str(tmp_path / "t")], capture_output=True,
                       text=True, timeout=120, env=env())
    assert p.returncode == 0, p.stderr[-2000:]
    line = [x for x in p.stderr.splitlines() if "training stopped on request of" in x]
    assert line, p.stderr
    assert "\x1b" not in p.stderr and "\x07" not in p.stderr, repr(p.stderr)
    assert "Evil\\x1b]0;title\\x07 at step 2: bad\\x1b[2J\\x1b[31m red\\nline" in line[0], line


# ---- no write through a symlink planted in the output folder ----------------------------------

PLANTED = r'''
import sys
import torch, torch.nn as nn
import trainscope.pytorch as ts

out = sys.argv[1]
model = nn.Linear(4, 2)
crit = nn.MSELoss()
hook = ts.Hook(out_dir=out, include_collections=["weights", "losses"],
               save_config=ts.SaveConfig(save_interval=1))
hook.register_module(model)
hook.register_loss(crit)
for step in range(5):
    crit(model(torch.randn(3, 4)), torch.randn(3, 2)).backward()
hook.close()
print("steps run", step + 1)
'''


@pytest.mark.parametrize("planted", ["events", "index", "collections"])
def test_a_planted_symlink_is_not_followed_out_of_the_trial(tmp_path, planted):
    out = tmp_path / "t"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, out / planted)
    script = tmp_path / "planted.py"
    script.write_text(PLANTED)
    p = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True,
                       timeout=120, env=env())
    assert p.returncode == 0 and "steps run 5" in p.stdout, p.stderr[-2000:]  # training went on
    assert list(os.walk(elsewhere)) == [(str(elsewhere), [], [])]  # nothing written there
    link = os.path.join(str(out), planted)
    assert f"{link} is a symbolic link" in p.stderr, p.stderr  # named ...
    assert p.stderr.count("writing the trial") == 1, p.stderr  # ... once
    assert os.path.islink(link)  # refused, not replaced
    if planted != "collections":  # no step whole: the trial says it is incomplete
        assert ts.create_trial(str(out)).incomplete()[0]["steps_failed"] == 5


def test_a_symlink_planted_at_a_temporary_name_is_not_written_through(tmp_path):
    """Files appear by a rename from "<name>.tmp": a link planted at that name (pointing at a
    file outside the trial) is refused, not truncated and written through, and the training
    goes on."""
    out = tmp_path / "t"
    coll = out / "collections" / "000000000"
    coll.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    tmp_name = coll / "worker_0_collections.json.tmp"
    os.symlink(victim, tmp_name)
    script = tmp_path / "planted.py"
    script.write_text(PLANTED)
    p = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True,
                       timeout=120, env=env())
    assert p.returncode == 0 and "steps run 5" in p.stdout, p.stderr[-2000:]
    assert victim.read_text() == "keep me"  # not truncated, not written
    assert f"{tmp_name} is a symbolic link" in p.stderr, p.stderr[-2000:]
