"""Write failures are first-class (issue 17): on a full disk (a 3 MiB tmpfs, where the test may
mount one) or a file-size limit (RLIMIT_FSIZE, anywhere), a real training runs all its steps,
the hook reports the failure once (file and errno), hook.stats() counts only the steps that
reached the disk, and the trial records what it lost (incomplete_<worker>.json beside the end
marker)."""

import json
import os
import subprocess

import pytest

import trainscope.pytorch as ts
from hook_util import run_script

TRAIN = r'''
import json, resource, signal, sys
import torch, torch.nn as nn
import trainscope.pytorch as ts

out, steps, fsize = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if fsize:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2))  # 1 MiB of weights
crit = nn.CrossEntropyLoss()
hook = ts.Hook(out_dir=out, include_collections=["weights", "losses"],
               save_config=ts.SaveConfig(save_interval=1))
# Weights every other step (a large event file), the loss every step (a small one).
hook.get_collection("weights").save_config = ts.SaveConfig(save_interval=2)
hook.register_module(model)
hook.register_loss(crit)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(steps):
    opt.zero_grad()
    crit(model(torch.randn(4, 512)), torch.randint(0, 2, (4,))).backward()
    opt.step()
hook.close()
print(json.dumps({"steps_run": steps, "stats": hook.stats()}))
'''

STEPS = 24


def _train(tmp_path, out, fsize=0):
    script = tmp_path / "train_full.py"
    script.write_text(TRAIN)
    p = run_script(str(script), out, STEPS, fsize)
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def _check(out, result, stderr, errno_text):
    assert result["steps_run"] == STEPS  # the training ran to its end
    st = result["stats"]
    assert stderr.count("writing the trial") == 1, stderr  # reported once ...
    # The file and the errno: the step's event file, or its slot in the journal where the step
    # was being stored when the disk refused (docs/formats/journal.md).
    assert errno_text in stderr, stderr
    assert (os.path.join(out, "events") in stderr
            or os.path.join(out, ".trainscope", "journal") in stderr), stderr
    assert "incomplete" in stderr
    trial = ts.create_trial(out)
    steps = trial.steps()
    assert st["steps_saved"] == len(steps) > 0, (st, steps)  # stats tell the truth
    assert st["steps_failed"] > 0 and st["steps_pending"] == 0, st
    assert st["steps_saved"] + st["steps_failed"] + st["steps_dropped"] == STEPS, st
    for s in steps:  # every step the reader lists is whole
        assert trial.tensor("CrossEntropyLoss_output_0").value(s).size == 1
    # The trial records the loss: the end marker (the job ended) and the incomplete marker.
    assert os.path.exists(os.path.join(out, "training_job_end.ts"))
    marker = os.path.join(out, "incomplete_worker_0.json")
    assert os.path.exists(marker)
    text = open(marker).read()
    if text:  # empty when the full disk had no room for its content
        m = json.loads(text)
        assert m["worker"] == "worker_0"
        assert m["steps_failed"] == st["steps_failed"] and m["steps_written"] == len(steps)
        assert errno_text in m["first_error"]
    return steps, st


def test_file_size_limit_fails_the_large_steps_only(tmp_path):
    out = str(tmp_path / "t")
    result, stderr = _train(tmp_path, out, fsize=128 * 1024)
    steps, st = _check(out, result, stderr, "File too large")
    assert steps == list(range(1, STEPS, 2))  # the steps with weights did not fit
    assert st["steps_failed"] == STEPS // 2
    marker = json.loads(open(os.path.join(out, "incomplete_worker_0.json")).read())
    assert marker["first_lost_step"] == 0 and marker["final"] is True


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


def test_full_tmpfs(tmp_path, small_tmpfs):
    out = str(small_tmpfs / "t")
    result, stderr = _train(tmp_path, out)
    steps, st = _check(out, result, stderr, "No space left on device")
    assert steps[0] == 0 and len(steps) < STEPS
