"""smdebug's stop file (docs/formats/stop_signal.md, "smdebug's convention"): when
SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE names a file (joined to the trial folder, as smdebug's
os.path.join does), its appearance stops a real PyTorch training at the next step boundary, as
trainscope's own stop file does; without the variable the file means nothing.

The trainings are real (a tiny linear model, six steps); the script itself writes the file, with
an epoch-seconds timestamp as a SageMaker rule job does, after its step 3.
"""

import os
import subprocess
import sys

import trainscope
from hook_util import env

TRAIN = r'''
import os, sys, time
import torch, torch.nn as nn
import trainscope.pytorch as ts

out, stop_file = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = nn.Linear(4, 2)
crit = nn.MSELoss()
hook = ts.Hook(out_dir=out, include_collections=["losses"],
               save_config=ts.SaveConfig(save_interval=1))
hook.register_module(model)
hook.register_loss(crit)
for step in range(6):
    crit(model(torch.randn(3, 4)), torch.randn(3, 2)).backward()
    print("ran", step, flush=True)
    if step == 3:  # a SageMaker rule job asks to stop: the file holds epoch seconds
        with open(stop_file, "w") as f:
            f.write(str(int(time.time())))
        time.sleep(0.011)  # the hook looks at most every 10 ms: the next boundary looks
hook.close()
print("finished", flush=True)
'''


def run(tmp_path, variable):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    out = tmp_path / "trial"
    extra = {"SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE": variable} if variable else {}
    e = env(**extra)
    if not variable:
        e.pop("SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE", None)
    p = subprocess.run([sys.executable, str(script), str(out), str(out / "rule_stop")],
                       capture_output=True, text=True, timeout=120, env=e)
    assert p.returncode == 0, p.stderr[-3000:]
    return p, str(out)


def test_the_smdebug_stop_file_stops_a_real_training(tmp_path):
    p, out = run(tmp_path, "rule_stop")  # a name relative to the trial, as SageMaker sets it
    ran = [line for line in p.stdout.splitlines() if line.startswith("ran")]
    assert ran == ["ran 0", "ran 1", "ran 2", "ran 3"], p.stdout
    assert "finished" not in p.stdout  # TrainingStopped ended the process at step 4's boundary
    line = [x for x in p.stderr.splitlines() if "training stopped on request of" in x]
    assert len(line) == 1, p.stderr
    assert "SAGEMAKER_ENV_RULE_STOP_SIGNAL_FILE" in line[0] and "rule_stop" in line[0], line

    # The trial was closed first: every step before the stop reads back, and it is complete.
    trial = trainscope.create_trial(out)
    assert trial.steps() == [0, 1, 2, 3]
    assert os.path.exists(os.path.join(out, "training_job_end.ts"))
    # trainscope's own stop file was not written: the request stays smdebug's.
    assert not os.path.exists(os.path.join(out, "rule-output", "stop_training.json"))


def test_without_the_variable_the_file_means_nothing(tmp_path):
    p, out = run(tmp_path, None)
    assert "finished" in p.stdout and "ran 5" in p.stdout, p.stdout
    assert "training stopped" not in p.stderr
    assert trainscope.create_trial(out).steps() == [0, 1, 2, 3, 4, 5]
    assert os.path.exists(os.path.join(out, "rule_stop"))  # the file was there all the same
