"""A hook owns its out_dir for one run (issue 17; docs/formats/run_lock.md, "A hook without
trainscope run"): real trainings in real processes, two writing one folder at the same time.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from hook_util import SCRIPTS, env
from profiler_util import trainscope_cli

CLI = trainscope_cli()
WRITER = os.path.join(SCRIPTS, "lock_writer.py")


def _start(out, tag, tmp_path, name, **extra):
    """Starts lock_writer.py; returns (Popen, ready_file, go_file)."""
    ready, go = tmp_path / f"{name}.ready", tmp_path / f"{name}.go"
    p = subprocess.Popen([sys.executable, WRITER, str(out), str(tag), str(ready), str(go)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env(**extra))
    return p, ready, go


def _wait_ready(p, ready):
    deadline = time.monotonic() + 180
    while not ready.exists():
        if p.poll() is not None:
            raise AssertionError(f"the writer ended early:\n{p.stdout.read()}\n{p.stderr.read()}")
        assert time.monotonic() < deadline, "the writer did not get ready"
        time.sleep(0.05)
    return json.loads(ready.read_text())["pid"]


def _finish(p, go):
    go.write_text("go")
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, (p.returncode, out, err)
    return json.loads(out.strip().splitlines()[-1]), err


def _run_alone(out, tag, tmp_path, name, **extra):
    p, ready, go = _start(out, tag, tmp_path, name, **extra)
    go.write_text("go")
    return _finish(p, go)


def _tags(out):
    import trainscope

    tr = trainscope.create_trial(str(out))
    t = tr.tensor("tag")
    return {float(t.value(s).reshape(-1)[0]) for s in t.steps()}, tr.workers()


def test_a_second_training_on_the_same_out_dir_is_refused_and_runs_on(tmp_path):
    out = tmp_path / "trial"
    first, ready, go = _start(out, 1.0, tmp_path, "first")
    pid = _wait_ready(first, ready)
    # The second training runs to its end (exit 0), saves nothing and says why, once.
    stats, err = _run_alone(out, 2.0, tmp_path, "second")
    assert stats["out_dir_refused"] is True and stats["steps_saved"] == 0, stats
    assert f"is being written by another training (pid {pid} on " in err, err
    assert "writing worker_0" in err and "lock_writer.py" in err  # the owner's command
    assert "this hook saves nothing (the training goes on)" in err
    assert "TRAINSCOPE_LOCK=0" in err  # what to do
    assert err.count("is being written by another training") == 1
    if CLI is not None:
        # A `trainscope run` on the folder is refused too, naming the bare training.
        r = subprocess.run([CLI, "run", "--out", str(out), "--rules", "none", "--no-system",
                            "--", sys.executable, "-c", "print('ran')"],
                           capture_output=True, text=True, timeout=120, env=env())
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert "started without `trainscope run`" in r.stderr and f"pid {pid} on " in r.stderr
        assert "ran" not in r.stdout
    stats, _ = _finish(first, go)
    assert stats["out_dir_refused"] is False and stats["steps_saved"] == 10, stats
    # Every step is the first training's: nothing was overwritten.
    tags, workers = _tags(out)
    assert tags == {1.0} and workers == ["worker_0"]


def test_the_lock_is_released_at_close(tmp_path):
    out = tmp_path / "trial"
    stats, _ = _run_alone(out, 1.0, tmp_path, "first")
    assert stats["steps_saved"] == 10
    # The finished trial refuses a new hook for its own reason (its end marker); once it is
    # removed, the folder is free again: no stale lock.
    (out / "training_job_end.ts").unlink()
    stats, err = _run_alone(out, 2.0, tmp_path, "second")
    assert stats["out_dir_refused"] is False, err


def test_the_ranks_of_one_job_share_the_trial_and_a_second_job_is_refused(tmp_path):
    out = tmp_path / "trial"
    ranks = [_start(out, 10.0 + r, tmp_path, f"rank{r}", RANK=r, WORLD_SIZE=2) for r in (0, 1)]
    for p, ready, _ in ranks:
        _wait_ready(p, ready)
    # Both ranks hold their worker's lock at once; a second job's rank 0 is refused.
    stats, err = _run_alone(out, 99.0, tmp_path, "other", RANK=0, WORLD_SIZE=2)
    assert stats["out_dir_refused"] is True, err
    assert "writing worker_0" in err
    results = [_finish(p, go) for p, _, go in ranks]
    for stats, err in results:
        assert stats["out_dir_refused"] is False and stats["steps_saved"] == 10, (stats, err)
    tags, workers = _tags(out)
    assert workers == ["worker_0", "worker_1"]
    assert 99.0 not in tags


def test_trainscope_lock_0_gives_smdebugs_behaviour(tmp_path):
    out = tmp_path / "trial"
    first, ready, go = _start(out, 1.0, tmp_path, "first")
    _wait_ready(first, ready)
    stats, err = _run_alone(out, 2.0, tmp_path, "second", TRAINSCOPE_LOCK="0")
    assert stats["out_dir_refused"] is False and stats["steps_saved"] == 10, err
    _finish(first, go)


@pytest.mark.skipif(CLI is None, reason="no trainscope command: build it or pip install .")
def test_under_trainscope_run_the_runs_own_hook_writes_and_a_bare_one_is_refused(tmp_path):
    out = tmp_path / "trial"
    ready, go = tmp_path / "run.ready", tmp_path / "run.go"
    run = subprocess.Popen([CLI, "run", "--out", str(out), "--rules", "none", "--no-system",
                            "--json", "--", sys.executable, WRITER, "-", "1.0", str(ready),
                            str(go)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    _wait_ready(run, ready)
    stats, err = _run_alone(out, 2.0, tmp_path, "bare")
    assert stats["out_dir_refused"] is True, err
    assert "is the trial of a running `trainscope run` (pid " in err, err
    go.write_text("go")
    stdout, stderr = run.communicate(timeout=180)
    assert run.returncode == 0, (run.returncode, stderr[-3000:])
    # The run's training held no lock of its own (its run owns the folder) and saved every step.
    assert "is being written" not in stderr and "out_dir_refused\": true" not in stderr
    tags, _ = _tags(out)
    assert tags == {1.0}


def test_hooks_of_one_process_share_the_folder(tmp_path):
    """A notebook cell run twice: the second hook is created before the first is closed."""
    code = (
        "import json, sys, torch\n"
        "import trainscope.pytorch as ts\n"
        "hooks = [ts.Hook(out_dir=sys.argv[1], include_collections=['losses']) for _ in range(2)]\n"
        "print(json.dumps([h.stats()['out_dir_refused'] for h in hooks]))\n"
    )
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "trial")], capture_output=True,
                       text=True, timeout=120, env=env())
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [False, False], p.stderr
