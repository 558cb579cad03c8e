"""The durability contract (docs/formats/trial.md, Durability; docs/formats/journal.md): a
training killed with SIGKILL loses no step the hook had handed over, however far the disk lags,
kills during close() included. After `trainscope recover`, trainscope's reader and smdebug's see
the same steps, a prefix without gaps, with every value intact. Seeded random kill points; one I/O
thread (TRAINSCOPE_THREADS=1) and 4 MiB a step make the writer lag behind the training.
bench/kill_stress.py runs the same check 200 and more times."""

import json
import os
import random
import signal
import subprocess
import sys
import time

from hook_util import SCRIPTS, env as _env
from profiler_util import trainscope_cli

CLI = trainscope_cli()
TENSOR = "big_output_0"

# Prints "<k>" once hook.step() has returned for step k (steps 0 .. k-1 handed over), then
# "closing" once every step is handed over (the final hook.step() begins an empty step) and
# "closed" after close().
TRAIN = r'''
import sys, torch
import trainscope.pytorch as ts
out, steps, floats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
hook = ts.Hook(out_dir=out, include_regex=["big"],
               save_config=ts.SaveConfig(save_interval=1), quiet=True)
x = torch.zeros(floats)
for step in range(steps):
    hook.step()  # ends step - 1: the hook hands it over and returns
    print(step, flush=True)
    x[0] = step
    x[-1] = -step
    hook.record_tensor_value("big", x)
hook.step()
print("closing", flush=True)
hook.close()
print("closed", flush=True)
'''


def launch(tmp_path, out, steps, floats, threads):
    script = tmp_path / "train_kill.py"
    script.write_text(TRAIN)
    return subprocess.Popen([sys.executable, str(script), out, str(steps), str(floats)],
                            stdout=subprocess.PIPE, text=True,
                            # the journal is opt-in (docs/formats/journal.md)
                            env=_env(TRAINSCOPE_THREADS=threads, TRAINSCOPE_JOURNAL=1))


def kill_after(p, k, close_delay_s=None):
    """Reads the training's lines until step k began (k handed over) or, with close_delay_s,
    until close() began and that many seconds more; kills it. Returns the steps handed over
    and where the kill fell ("mid-run", "close", or "after exit")."""
    handed, where = 0, "mid-run"
    try:
        for line in p.stdout:
            line = line.strip()
            if line == "closing":
                where = "close"
                handed = None  # all
                if close_delay_s is not None:
                    time.sleep(close_delay_s)
                break
            handed = int(line)
            if close_delay_s is None and handed >= k:
                break
        if p.poll() is not None:
            where = "after exit"
        p.send_signal(signal.SIGKILL)
    finally:
        p.kill()
        p.wait(timeout=60)
        p.stdout.close()
    return handed, where


def read_all(outs):
    """Each reader once (one process, the trials on its stdin): {reader: [result per trial]}."""
    res = {}
    for which in ("trainscope", "smdebug"):
        r = subprocess.run([sys.executable, "-c", "import runpy, sys; sys.argv = sys.argv[1:]; "
                            "import smdebug_numpy2_compat; smdebug_numpy2_compat.install(); "
                            "runpy.run_path(sys.argv[0], run_name='__main__')",
                            os.path.join(SCRIPTS, "read_steps.py"), which, "-", TENSOR],
                           input="".join(o + "\n" for o in outs), env=_env(),
                           capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, r.stderr
        res[which] = [json.loads(line) for line in r.stdout.strip().splitlines()]
        assert len(res[which]) == len(outs), r.stdout
    return res


def recover(out):
    r = subprocess.run([CLI, "recover", out, "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads(r.stdout)
    assert rec["steps_lost"] == 0 and not rec["workers_in_use"], rec
    assert not os.path.exists(os.path.join(out, ".trainscope", "journal"))
    return rec["steps_recovered"]


def check(ts_res, sm_res, handed, steps, floats):
    """Both readers' view of a recovered trial: every handed-over step, whole."""
    assert "error" not in ts_res and "error" not in sm_res, (ts_res, sm_res)
    assert ts_res == sm_res
    got = ts_res["steps"]
    want = steps if handed is None else handed
    assert got == list(range(len(got))), got  # a prefix, no gap
    assert len(got) >= want, (want, got)  # nothing handed over was lost
    for s in got:
        first, last, total, size = ts_res["values"][str(s)]
        assert (first, last, total, size) == (s, -s, 0.0, floats), (s, first, last, total, size)


def test_sigkill_loses_no_handed_over_step(tmp_path):
    assert CLI, "the trainscope command is needed (build it, or install the package)"
    rng = random.Random(17)
    steps, floats = 24, 1024 * 1024  # 4 MiB a step
    recovered = 0
    kills = [("mid", rng.randint(1, steps - 1)) for _ in range(3)] + \
            [("close", rng.uniform(0.0, 0.05)) for _ in range(2)]
    wheres, outs, handed_list = [], [], []
    for i, (kind, arg) in enumerate(kills):
        out = str(tmp_path / f"t{i}")
        p = launch(tmp_path, out, steps, floats, threads=1)
        if kind == "mid":
            handed, where = kill_after(p, arg)
        else:
            handed, where = kill_after(p, steps, close_delay_s=arg)
        wheres.append(where)
        assert not os.path.exists(os.path.join(out, "training_job_end.ts")) or where != "mid-run"
        recovered += recover(out)
        outs.append(out)
        handed_list.append(handed)
    res = read_all(outs)
    for i, handed in enumerate(handed_list):
        check(res["trainscope"][i], res["smdebug"][i], handed, steps, floats)
    assert wheres.count("mid-run") == 3, wheres
    # The writer lagged: some kills left steps in the journal that only recovery published
    # (without the journal these were lost).
    assert recovered > 0, wheres


def test_recover_end_marks_a_killed_training_ended_but_not_a_live_one(tmp_path):
    """`trainscope recover DIR --end`: after a SIGKILL nobody holds the folder's run.lock, so the
    end marker is written (readers and rules stop waiting); while the training still writes, its
    hook holds the lock and the marker is refused, naming the writer. `trainscope status` tells
    the two apart before: "no writer" (and what to do) against in progress."""
    end = "training_job_end.ts"
    out = str(tmp_path / "killed")
    p = launch(tmp_path, out, 40, 1024, 1)
    handed, _ = kill_after(p, 5)
    assert handed >= 5
    # `trainscope status` sees that nobody writes the folder any more, and says what to do.
    st = subprocess.run([CLI, "status", out, "--json"], capture_output=True, text=True,
                        timeout=60)
    st = json.loads(st.stdout)
    assert st["training_ended"] is False and st["writer_alive"] is False, st
    st = subprocess.run([CLI, "status", out], capture_output=True, text=True, timeout=60)
    assert "no writer" in st.stdout and "recover DIR --end" in st.stdout, st.stdout
    r = subprocess.run([CLI, "recover", out, "--end", "--json"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads(r.stdout)
    assert rec["ended"] is True and "end_refused" not in rec, rec
    assert os.path.exists(os.path.join(out, end))
    from trainscope import create_trial

    t = create_trial(out)
    assert t.loaded_all_steps, t.steps()  # the reader knows no step will come
    assert t.steps() == list(range(len(t.steps()))) and len(t.steps()) >= 5, t.steps()
    again = subprocess.run([CLI, "recover", out, "--end"], capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and "already marked ended" in again.stdout, again.stdout
    st = subprocess.run([CLI, "status", out, "--json"], capture_output=True, text=True,
                        timeout=60)
    st = json.loads(st.stdout)
    assert st["training_ended"] is True and st["writer_alive"] is None, st

    live = str(tmp_path / "live")
    p = launch(tmp_path, live, 100000, 16, 1)
    try:
        for line in p.stdout:
            if line.strip() == "3":
                break
        st = subprocess.run([CLI, "status", live, "--json"], capture_output=True, text=True,
                            timeout=60)
        assert json.loads(st.stdout)["writer_alive"] is True, st.stdout
        r = subprocess.run([CLI, "recover", live, "--end", "--json"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 1, r.stdout + r.stderr
        rec = json.loads(r.stdout)
        assert rec["ended"] is False and f"pid {p.pid}" in rec["end_refused"], rec
        assert "still being written" in r.stderr, r.stderr
        assert not os.path.exists(os.path.join(live, end))
    finally:
        p.kill()
        p.wait(timeout=60)
        p.stdout.close()
