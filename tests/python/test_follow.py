"""Reading a trial while another process writes it, and create_trial's waiting rules."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import REPO

import trainscope
from trainscope import _core, modes
from trainscope.collection import Collection, collections_file_json
from trainscope.exceptions import (MissingCollectionFiles, NoMoreData, StepNotYetAvailable,
                                   TrialNotReady)
from trainscope.modes import StepState

WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from trainscope import _core
    out, steps = sys.argv[1], int(sys.argv[2])
    w = _core.TrialWriter(out)
    w.begin_step(0, 1, 0)
    w.add_tensor("x", np.float32(0))
    w.end_step()
    w.write_collections('{"collections": {"all": {"name": "all", "include_regex": [".*"], '
                        '"tensor_names": ["x"]}}, "_meta": {"num_workers": 1}}')
    w.flush()
    print("ready", flush=True)
    for line in sys.stdin:              # one step per line from the test
        step = int(line)
        if step < 0:
            break
        w.begin_step(step, 1, step)
        w.add_tensor("x", np.float32(step))
        w.end_step()
        w.flush()
        print("wrote", step, flush=True)
    w.close()
    print("closed", flush=True)
    """
)


def spawn_writer(path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(trainscope.__file__)),
                    env.get("PYTHONPATH")] if p
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "3"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc


def send(proc, step):
    proc.stdin.write(f"{step}\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def test_reader_follows_a_writer_in_another_process(trial_dir):
    proc = spawn_writer(trial_dir)
    try:
        trial = trainscope.create_trial(str(trial_dir), timeout=30)
        assert trial.steps() == [0]
        assert not trial.loaded_all_steps
        assert trial.has_passed_step(5) == StepState.NOT_YET_AVAILABLE
        with pytest.raises(StepNotYetAvailable):
            trial.tensor("x").value(5)
        for step in (1, 5):
            assert send(proc, step) == f"wrote {step}"
            assert step in trial.steps()  # seen without reopening
            assert float(trial.tensor("x").value(step)) == step
        # skipped: a later step is complete
        assert trial.has_passed_step(3) == StepState.UNAVAILABLE
        assert send(proc, -1) == "closed"
        proc.wait(timeout=30)
        trial.wait_for_steps([5])
        with pytest.raises(NoMoreData):
            trial.wait_for_steps([9], mode=modes.TRAIN)
        assert trial.loaded_all_steps and trial.steps() == [0, 1, 5]
    finally:
        proc.kill()
        proc.wait()


def test_create_trial_waits_for_collections(trial_dir):
    w = _core.TrialWriter(str(trial_dir))
    w.begin_step(0, 1, 0)
    w.add_tensor("x", np.ones(2))
    w.end_step()
    w.flush()
    with pytest.raises(TrialNotReady):
        trainscope.create_trial(str(trial_dir), timeout=0.3)
    w.write_collections(collections_file_json([Collection("all", tensor_names=["x"])]))
    trial = trainscope.create_trial(str(trial_dir), timeout=5)
    assert trial.tensor_names() == ["x"]
    w.close()


def test_missing_collection_files(trial_dir):
    w = _core.TrialWriter(str(trial_dir))
    w.begin_step(0, 1, 0)
    w.add_tensor("x", np.ones(2))
    w.end_step()
    w.close()  # end marker, no collections file
    with pytest.raises(MissingCollectionFiles):  # not TrialNotReady: the end marker decides
        trainscope.create_trial(str(trial_dir), timeout=30)


def test_create_trial_waits_for_the_folder(tmp_path):
    with pytest.raises(TrialNotReady):
        trainscope.create_trial(str(tmp_path / "not-yet"), timeout=0.2)


EXIT_WITHOUT_CLOSE = textwrap.dedent(
    """
    import sys
    import numpy as np
    from trainscope import _core
    w = _core.TrialWriter(sys.argv[1])
    w.write_collections('{"collections": {}, "_meta": {"num_workers": 1}}')
    kept = np.arange(1 << 20, dtype=np.float64)  # 8 MiB borrowed without a copy
    for step in range(3):
        w.begin_step(step, 1, step)
        w.add_tensor_nocopy("kept", kept)
        w.add_tensor("copied", np.full(3, step))
        w.end_step() if step < 2 else None   # step 2 left open
    # no close(): the atexit hook must drain the queue, end step 2 and write the end marker,
    # releasing the borrowed array from the writer thread while Python is still alive
    """
)


def test_interpreter_exit_closes_open_writers(trial_dir):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(trainscope.__file__)),
                    env.get("PYTHONPATH")] if p
    )
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_WITHOUT_CLOSE, str(trial_dir)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (trial_dir / "training_job_end.ts").exists()
    trial = trainscope.create_trial(str(trial_dir), timeout=10)
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor("kept").value(2)[-1] == (1 << 20) - 1
    assert trial.tensor("copied").value(1).tolist() == [1, 1, 1]
