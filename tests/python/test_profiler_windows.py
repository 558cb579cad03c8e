"""Detailed profiling windows from a real CPU training run: torch.profiler records operators only
for the DetailedProfilingConfig steps (its Chrome trace lands under
framework/pytorch/detailed_profiling/), and cProfile saves one stats folder per
PythonProfilingConfig step where smdebug saves them
(framework/pytorch/cprofile/<node>/<mode>-<step>-stepstart-<us>_<mode>-<step>-<phase>-<us>/
python_stats)."""

import glob
import json
import os
import pstats

import pytest

from profiler_util import raw_events, step_of, train

DETAILED = (3, 2)  # steps 3 and 4
PYTHON = (1, 2)  # steps 1 and 2


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof-windows") / "trial"
    summary = train(str(out), steps=7, eval_steps=1, sleep_ms=10, detailed=list(DETAILED),
                    python=list(PYTHON), via_env=True)
    return out, summary


def step_spans(trial):
    return {step_of(e): e for e in raw_events(trial) if e["phase"] == "Step:ModeKeys.TRAIN"}


def test_one_trace_for_the_window(run):
    trial, summary = run
    files = glob.glob(os.path.join(str(trial), "framework", "pytorch", "detailed_profiling", "*",
                                   "*", "*.json"))
    assert len(files) == 1 and summary["detailed"] == files
    assert files[0].split(os.sep)[-2] == f"{DETAILED[0]:09d}"


def test_operators_only_in_window_steps(run):
    trial, summary = run
    with open(summary["detailed"][0]) as f:
        trace = json.load(f)
    base_us = trace["baseTimeNanoseconds"] / 1000
    ops = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    assert ops
    steps = step_spans(trial)
    first, last = steps[DETAILED[0]], steps[DETAILED[0] + DETAILED[1] - 1]
    lo, hi = first["start_us"], last["start_us"] + last["dur_us"]
    for e in ops:
        start = base_us + e["ts"]
        # 2 us of slack: the trace's float times against our whole microseconds
        assert lo - 2 <= start and start + e["dur"] <= hi + 2, (e["name"], start, lo, hi)
    # two Linear layers: one addmm each per forward, so exactly the window's forwards
    assert sum(e["name"] == "aten::addmm" for e in ops) == 2 * DETAILED[1]
    # and the backward and optimizer of those steps are there too
    names = {e["name"] for e in ops}
    assert any("backward" in n.lower() or n == "aten::mm" for n in names)
    assert any(n.startswith("Optimizer.step#SGD") or n == "aten::add_" for n in names)


def test_cprofile_stats_per_window_step(run):
    trial, summary = run
    root = os.path.join(str(trial), "framework", "pytorch", "cprofile", summary["node_id"])
    dirs = sorted(os.listdir(root), key=lambda d: int(d.split("-")[3].split("_")[0]))
    assert [os.path.join(root, d) for d in dirs] == summary["python_stats"]
    assert len(dirs) == PYTHON[1]
    for k, d in zip(range(PYTHON[0], PYTHON[0] + PYTHON[1]), dirs):
        start, end = d.split("_")
        s_mode, s_step, s_phase, s_us = start.split("-")
        e_mode, e_step, e_phase, e_us = end.split("-")
        assert (s_mode, int(s_step), s_phase) == ("train", k, "stepstart")
        assert (e_mode, int(e_step), e_phase) == ("train", k + 1, "stepstart")
        assert int(s_us) < int(e_us)
        stats = pstats.Stats(os.path.join(root, d, "python_stats"))
        funcs = {name for (_, _, name) in stats.stats}
        # the step's own Python: the data loader's collate (sleeping) and the optimizer step
        assert "slow_collate" in funcs
        assert "<built-in method time.sleep>" in funcs
        assert "step" in funcs


def test_windows_leave_other_steps_alone(run):
    trial, _ = run
    # spans are still recorded for every step, in and out of the windows
    assert sorted(step_spans(trial)) == list(range(7))


def test_operators_also_in_timeline_as_smdebug_writes_them(run):
    trial, summary = run
    events = raw_events(trial)
    cpu = [e for e in events if e["phase"] == "cpu_functions"]
    with open(summary["detailed"][0]) as f:
        ops = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "cpu_op"]
    assert len(cpu) == len(ops)
    window = set(range(DETAILED[0], DETAILED[0] + DETAILED[1]))
    assert {step_of(e) for e in cpu} == window
    assert sum(e["name"] == "aten::addmm" for e in cpu) == 2 * DETAILED[1]
