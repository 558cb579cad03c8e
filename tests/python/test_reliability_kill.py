"""The durability bound (docs/formats/trial.md, Durability): a training killed with SIGKILL
loses at most 8 steps that the hook had handed over (plus the step in progress), however far the
disk lags, and what it leaves is a readable prefix of its steps. Seeded random kill points; one
I/O thread (TRAINSCOPE_THREADS=1) and 4 MiB a step make the writer lag behind the training (the
queue grew to 18 steps in 60 before the step bound)."""

import os
import random
import signal
import subprocess
import sys

import numpy as np

import trainscope.pytorch as ts
from hook_util import env as _env

TRAIN = r'''
import sys, torch
import trainscope.pytorch as ts
hook = ts.Hook(out_dir=sys.argv[1], include_regex=["big"],
               save_config=ts.SaveConfig(save_interval=1), quiet=True)
x = torch.zeros(1024 * 1024)  # 4 MiB a step
for step in range(100000):
    hook.step()  # ends step - 1: the hook hands it over and returns
    x[0] = step
    hook.record_tensor_value("big", x)
    print(step, flush=True)
'''

BOUND = 8  # WriterOptions::max_queue_steps' default


def _kill_at(tmp_path, out, k):
    script = tmp_path / "train_kill.py"
    script.write_text(TRAIN)
    p = subprocess.Popen([sys.executable, str(script), out], stdout=subprocess.PIPE,
                         env=_env(TRAINSCOPE_THREADS=1), text=True)
    try:
        for line in p.stdout:
            if int(line) >= k:  # steps 0 .. k-1 are handed over
                break
        p.send_signal(signal.SIGKILL)
    finally:
        p.kill()
        p.wait(timeout=60)
        p.stdout.close()


def test_sigkill_loses_at_most_the_bound(tmp_path):
    rng = random.Random(17)
    kills = sorted(rng.randint(BOUND + 12, 60) for _ in range(5))
    for i, k in enumerate(kills):
        out = str(tmp_path / f"t{i}")
        _kill_at(tmp_path, out, k)
        assert not os.path.exists(os.path.join(out, "training_job_end.ts"))
        steps = ts.create_trial(out).steps()
        assert steps == list(range(len(steps))), steps  # a prefix, no gap
        assert len(steps) >= k - BOUND, (k, len(steps))  # lost <= 8 handed-over steps
        t = ts.create_trial(out).tensor("big_output_0")
        for s in (steps[0], steps[-1]):
            v = np.asarray(t.value(s))
            assert v.shape == (1024 * 1024,) and v[0] == s
