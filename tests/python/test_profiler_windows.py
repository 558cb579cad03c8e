"""Detailed profiling windows from a real CPU training run: torch.profiler records operators only
for the DetailedProfilingConfig steps (its Chrome trace lands under
framework/pytorch/detailed_profiling/), and cProfile saves one stats folder per
PythonProfilingConfig step where smdebug saves them
(framework/pytorch/cprofile/<node>/<mode>-<step>-stepstart-<us>_<mode>-<step>-stepend-<us>/
python_stats)."""

import glob
import json
import os
import pstats

import pytest

from profiler_util import raw_events, step_of, train

DETAILED = (3, 2)  # steps 3 and 4
PYTHON = (1, 2)  # steps 1 and 2
COLLATE_MS = 20  # the pyinstrument run's data loader sleeps this long per batch


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof-windows") / "trial"
    summary = train(str(out), steps=7, eval_steps=1, sleep_ms=10, detailed=list(DETAILED),
                    python=list(PYTHON), via_env=True)
    return out, summary


def window_step_folders(root):
    """The stats folders of the Python profiling window under `root` (framework/pytorch/<profiler>/
    <node>), one per window step as smdebug names them (train-<k>-stepstart-<us>_train-<k>-
    stepend-<us>): [(folder, start_us, end_us)] by step."""
    dirs = sorted(os.listdir(root), key=lambda d: int(d.split("-")[3].split("_")[0]))
    assert len(dirs) == PYTHON[1]
    out = []
    for k, d in zip(range(PYTHON[0], PYTHON[0] + PYTHON[1]), dirs):
        start, end = d.split("_")
        s_mode, s_step, s_phase, s_us = start.split("-")
        e_mode, e_step, e_phase, e_us = end.split("-")
        assert (s_mode, int(s_step), s_phase) == ("train", k, "stepstart")
        assert (e_mode, int(e_step), e_phase) == ("train", k, "stepend")
        assert int(s_us) < int(e_us)
        out.append((os.path.join(root, d), int(s_us), int(e_us)))
    return out


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
    windows = window_step_folders(root)
    assert [w[0] for w in windows] == summary["python_stats"]
    for folder, _, _ in windows:
        stats = pstats.Stats(os.path.join(folder, "python_stats"))
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


@pytest.fixture(scope="module")
def pyinstrument_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof-pyinstrument") / "trial"
    summary = train(str(out), steps=5, eval_steps=1, sleep_ms=COLLATE_MS, python=list(PYTHON),
                    python_profiler="pyinstrument", via_env=True)
    return out, summary


def frames(frame, parents=()):
    """(function, file, seconds, parent functions) of a pyinstrument frame tree, depth first."""
    yield frame["function"], frame["file_path_short"], frame["time"], parents
    for child in frame.get("children", []):
        yield from frames(child, parents + (frame["function"],))


def test_pyinstrument_reports_per_window_step(pyinstrument_run):
    trial, summary = pyinstrument_run
    prof_root = os.path.join(str(trial), "framework", "pytorch")
    assert sorted(os.listdir(prof_root)) == ["pyinstrument"]  # and no cProfile
    windows = window_step_folders(os.path.join(prof_root, "pyinstrument", summary["node_id"]))
    # hook.get_profiler_data() listed them while the training ran
    assert summary["data_python_stats"] == summary["python_stats"] == [w[0] for w in windows]
    for folder, s_us, e_us in windows:
        assert sorted(os.listdir(folder)) == ["python_stats.html", "python_stats.json"]
        with open(os.path.join(folder, "python_stats.json")) as f:
            session = json.load(f)
        # the session is the step the folder names: it began then and fits in it
        assert s_us - 1000 <= session["start_time"] * 1e6 <= e_us
        assert COLLATE_MS / 1000 <= session["duration"] <= (e_us - s_us) / 1e6 + 1e-3
        assert session["sample_count"] > 0
        assert "train_profiled.py" in session["program"]
        # the step's own Python: the training loop waiting in the data loader's collate, which
        # sleeps (pyinstrument samples wall time, so the sleep shows)
        tree = list(frames(session["root_frame"]))
        collate = [f for f in tree if f[0] == "slow_collate"]
        assert collate and all(f[1].endswith("train_profiled.py") for f in collate)
        assert sum(f[2] for f in collate) >= 0.8 * COLLATE_MS / 1000
        assert any(f[0] == "sleep" and f[3][-1] == "slow_collate" for f in tree)
        assert any(f[0] == "__next__" and f[1].endswith("trainscope/profiler/recorder.py")
                   for f in tree)  # trainscope's data-loader timing, the caller of the wait
        with open(os.path.join(folder, "python_stats.html")) as f:
            html = f.read()
        assert html.lstrip().startswith("<!DOCTYPE html>") and "slow_collate" in html


def test_smdebug_reads_our_pyinstrument_reports(pyinstrument_run):
    from smdebug.profiler.analysis.python_stats_reader import LocalPythonStatsReader

    trial, summary = pyinstrument_run
    reader = LocalPythonStatsReader(os.path.join(str(trial), "framework", "pytorch",
                                                 "pyinstrument"))
    stats = reader.load_python_profile_stats()
    assert len(stats) == 2 * PYTHON[1]  # the JSON and the HTML of each step
    assert {s.profiler_name for s in stats} == {"pyinstrument"}
    assert {s.framework for s in stats} == {"pytorch"}
    assert {s.node_id for s in stats} == {summary["node_id"]}
    assert sorted({(s.start_step, s.end_step) for s in stats}) == [
        (k, k) for k in range(PYTHON[0], PYTHON[0] + PYTHON[1])]
    assert {os.path.basename(s.stats_path) for s in stats} == {"python_stats.json",
                                                                "python_stats.html"}
