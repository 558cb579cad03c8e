"""A standalone profiled run (no `trainscope run`): the hook starts its own system sampler, whose
metrics read back through trial.system_metrics; `trainscope timeline` merges system counters,
framework spans and the torch.profiler window into one trace that passes the strict validator
and has the expected processes, threads and categories."""

import json
import subprocess

import pytest

from profiler_util import raw_events, step_of, train, trainscope_cli
from test_timeline_format import strict_check


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof-timeline") / "trial"
    summary = train(str(out), steps=10, eval_steps=1, sleep_ms=80, detailed=[2, 1],
                    system=True, interval_ms=100)
    return out, summary


@pytest.fixture(scope="module")
def cli():
    exe = trainscope_cli()
    if exe is None:
        pytest.skip("the trainscope command is not built (set TRAINSCOPE_BUILD_DIR)")
    return exe


def test_hook_sampler_metrics_read_back(run):
    from trainscope import create_trial

    trial_dir, summary = run
    assert summary["system_count"] > 0  # get_profiler_data() saw them while training
    trial = create_trial(str(trial_dir), timeout=30)
    events = trial.system_metrics()
    assert events
    types = {e.type for e in events}
    assert {"cpu", "memory", "process"} <= types
    cpu0 = trial.system_metrics(type="cpu", dimension="CPUUtilization")
    assert cpu0 and all(0 <= e.value <= 100 for e in cpu0)
    assert {e.node_id for e in events} == {"algo-1"}
    # the sampler watched this training process (the tree's resident memory is > 0)
    rss = trial.system_metrics(dimension="ProcessTreeResidentBytes")
    assert rss and all(e.value > 0 for e in rss)
    # by time and by step
    steps = {step_of(e): e for e in raw_events(trial_dir) if e["phase"] == "Step:ModeKeys.TRAIN"}
    lo, hi = steps[0]["start_us"], steps[9]["start_us"] + steps[9]["dur_us"]
    assert all(lo - 10_000_000 <= e.timestamp_us <= hi + 10_000_000 for e in events)
    in_steps = trial.system_metrics(start_step=3, end_step=8)
    assert in_steps and len(in_steps) < len(events)
    s_lo, s_hi = steps[3]["start_us"], steps[8]["start_us"]
    assert all(s_lo <= e.timestamp_us < s_hi for e in in_steps)
    seconds = trial.system_metrics(s_lo / 1e6, s_hi / 1e6, unit="s")
    assert {(e.timestamp_us, e.name, e.dimension) for e in seconds} == {
        (e.timestamp_us, e.name, e.dimension) for e in in_steps}
    assert abs(events[0].timestamp - events[0].timestamp_us / 1e6) < 1e-6


def merge(cli, trial_dir, out, *extra):
    p = subprocess.run([cli, "timeline", str(trial_dir), "-o", str(out), "--json", *extra],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout)


def test_timeline_merges_everything_and_is_valid(run, cli, tmp_path):
    from trainscope import _core

    trial_dir, summary = run
    out = tmp_path / "merged.json"
    res = merge(cli, trial_dir, out)
    assert res["valid"] is True and res["output"] == str(out)
    assert res["counter_events"] > 0 and res["framework_events"] > 0
    assert res["detailed_events"] > 0
    text = out.read_text()
    _core.validate_trace_events(text)  # raises ValueError naming the first bad event
    doc = json.loads(text)
    strict_check(doc)
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    node = summary["node_id"]
    framework_pids = {p for p, n in names.items() if p >= 10000 and p < 1000000}
    assert {names[p] for p in framework_pids} >= {
        f"Step:ModeKeys.TRAIN ({node})", f"Forward ({node})",
        f"Backward(post-forward) ({node})", f"Optimizer ({node})", f"DataLoaderIter ({node})"}
    assert names[100] == "system algo-1"
    assert any(p >= 1000000 and n.startswith("torch ") for p, n in names.items())
    cats = {e.get("cat") for e in events if e["ph"] != "M"}
    assert {"framework", "system", "cpu_op"} <= cats
    counters = [e for e in events if e["ph"] == "C"]
    assert len(counters) == res["counter_events"]
    assert all(e["pid"] == 100 for e in counters)
    fw = [e for e in events if e.get("cat") == "framework"]
    assert len(fw) == res["framework_events"] == len(raw_events(trial_dir))
    # the training thread recorded steps, forward, optimizer and the loader waits: one tid
    main_tids = {e["tid"] for e in fw if names[e["pid"]].split(" (")[0] in (
        "Step:ModeKeys.TRAIN", "Forward", "Optimizer", "DataLoaderIter")}
    assert len(main_tids) == 1
    # operators sit inside the window's step (step 2) on the common clock
    step2 = next(e for e in fw if names[e["pid"]].startswith("Step:ModeKeys.TRAIN")
                 and e["args"]["step_num"] == "2")
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    assert ops and all(step2["ts"] - 2 <= e["ts"] and e["ts"] + e["dur"] <= step2["ts"] + step2[
        "dur"] + 2 for e in ops)


def test_timeline_step_range_and_sources(run, cli, tmp_path):
    trial_dir, _ = run
    full = merge(cli, trial_dir, tmp_path / "all.json")
    part = merge(cli, trial_dir, tmp_path / "part.json", "--start-step", "4", "--end-step", "6")
    assert 0 < part["framework_events"] < full["framework_events"]
    doc = json.loads((tmp_path / "part.json").read_text())
    steps = [e for e in doc["traceEvents"] if e.get("cat") == "framework"
             and e["name"].startswith("Step:ModeKeys.TRAIN")]
    assert sorted(e["args"]["step_num"] for e in steps) == ["4", "5"]
    only_fw = merge(cli, trial_dir, tmp_path / "fw.json", "--no-system", "--no-detailed")
    assert only_fw["counter_events"] == 0 and only_fw["detailed_events"] == 0
    assert only_fw["framework_events"] == full["framework_events"]


def test_timeline_cli_errors(cli, tmp_path):
    p = subprocess.run([cli, "timeline", str(tmp_path / "missing")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1 and "not a folder" in p.stderr
    p = subprocess.run([cli, "timeline", str(tmp_path), "--start-us", "5", "--start-step", "1"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2


def test_timeline_of_a_trial_without_profiler_data_says_so(cli, tmp_path):
    # A trial with tensors only (no system/, framework/ or rule-output/): a valid, empty
    # timeline, and a warning saying why it is empty and what to do.
    import numpy as np
    from conftest import write_trial

    import trainscope

    trial = tmp_path / "tensors_only"
    write_trial(str(trial), [(s, trainscope.modes.TRAIN, s, {"w": np.ones(3, np.float32)})
                             for s in (0, 1)])
    r = merge(cli, trial, tmp_path / "empty.json")
    assert r["valid"] and r["framework_events"] == r["counter_events"] == 0
    assert len(r["warnings"]) == 1 and r["warnings"][0].startswith("nothing to merge: ")
    assert "trainscope run" in r["warnings"][0]
