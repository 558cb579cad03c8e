"""Our profiler files, checked from Python: strict Chrome-trace rules with the json module, and
smdebug's own readers on our system metrics and framework timeline.

The files come from the C++ test ExportTrialTest (tests/profiler/export_trial_test.cc), run with
TRAINSCOPE_PROFILER_EXPORT_DIR so it leaves its trial behind. The test binary is looked up in
$TRAINSCOPE_BUILD_DIR, else <repo>/build; without it these tests are skipped.
"""
import json
import math
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
T0_US = 1704110400 * 10**6  # the trial's start, 2024-01-01 12:00:00 UTC

PHASES = set("X B E i I C M s t f b n e P O N D R".split())
METADATA = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
            "thread_sort_index": "sort_index", "process_labels": "labels"}


def _binary():
    build = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
    path = build / "tests" / "profiler_tests"
    return path if path.exists() else None


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    binary = _binary()
    if binary is None:
        pytest.skip("profiler_tests not built (set TRAINSCOPE_BUILD_DIR)")
    out = tmp_path_factory.mktemp("profiler") / "trial"
    env = dict(os.environ, TRAINSCOPE_PROFILER_EXPORT_DIR=str(out))
    run = subprocess.run([str(binary), "--gtest_filter=ExportTrialTest.*"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def strict_check(doc):
    """The rules of ValidateTraceEvents (docs/formats/timeline.md), in Python."""
    if isinstance(doc, dict):
        assert isinstance(doc.get("traceEvents"), list)
        assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
        events = doc["traceEvents"]
    else:
        assert isinstance(doc, list)
        events = doc
    stacks = {}
    for i, e in enumerate(events):
        where = "event %d: %r" % (i, e)
        assert isinstance(e, dict), where
        ph = e.get("ph")
        assert ph in PHASES, where
        assert is_num(e.get("ts")), where
        assert is_int(e.get("pid")) and is_int(e.get("tid")), where
        if ph != "E":
            assert isinstance(e.get("name"), str), where
        args = e.get("args", {})
        assert isinstance(args, dict), where
        if ph == "X":
            assert is_num(e.get("dur")) and e["dur"] >= 0, where
        elif ph == "C":
            assert args and all(is_num(v) for v in args.values()), where
        elif ph == "M":
            key = METADATA.get(e["name"])
            assert key is not None, where
            check = is_int if key == "sort_index" else lambda v: isinstance(v, str)
            assert check(args.get(key)), where
        elif ph in ("i", "I"):
            assert e.get("s", "t") in ("g", "p", "t"), where
        elif ph in ("s", "t", "f"):
            assert "id" in e, where
        if ph in ("B", "E"):
            stacks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], i, 1 if ph == "B" else -1))
    for marks in stacks.values():
        depth = 0
        for _, _, d in sorted(marks, key=lambda m: m[0]):
            depth += d
            assert depth >= 0
        assert depth == 0
    return events


def test_merged_trace_is_strict_json(trial):
    with open(trial / "merged_trace.json") as f:
        doc = json.load(f)
    events = strict_check(doc)
    assert doc["otherData"]["start_time_since_epoch_in_micros"] == T0_US
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"rules", "system algo-1", "Step:ModeKeys.TRAIN (4242-algo-1)"} <= names
    assert min(e["ts"] for e in events if e["ph"] != "M") == 0
    kinds = {e["ph"] for e in events}
    assert {"C", "X", "i", "M"} <= kinds


def test_timeline_files_are_json_arrays(trial):
    files = sorted((trial / "framework" / "pevents").rglob("*.json"))
    assert len(files) > 3
    total = 0
    for path in files:
        with open(path) as f:
            events = strict_check(json.load(f))  # a valid array: the closing "]" is there
        assert events[0]["args"]["start_time_since_epoch_in_micros"] == T0_US
        ends = [T0_US + e["ts"] + e.get("dur", 0) for e in events if e["ph"] != "M"]
        assert int(path.name.split("_")[0]) == max(ends)  # named by its last event
        assert path.parent.name == "2024010112"
        total += len(ends)
    assert total == 41


def test_smdebug_reads_our_system_metrics(trial):
    from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader

    lines = []
    for path in (trial / "system").rglob("*.json"):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    events = LocalSystemMetricsReader(str(trial)).get_events(T0_US, T0_US + 2 * 10**6)
    assert len(events) == len(lines) > 0
    dims = {e.dimension for e in events}
    assert {"CPUUtilization", "I/OWaitPercentage", "GPUUtilization", "GPUMemoryUtilization",
            "MemoryUsedPercent"} <= dims
    for e in events:
        assert e.node_id == "algo-1"
        if e.dimension in ("CPUUtilization", "GPUUtilization", "I/OWaitPercentage"):
            assert 0 <= e.value <= 100
            assert e.name.startswith(e.type)  # cpu0 / gpu1, as smdebug's rules expect
    assert {e.name for e in events if e.dimension == "GPUUtilization"} == {"gpu0", "gpu1"}
    assert all(isinstance(line["Value"], float) for line in lines)


def test_smdebug_reads_our_framework_timeline(trial):
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader

    reader = LocalAlgorithmMetricsReader(str(trial))
    events = reader.get_events(T0_US, T0_US + 2 * 10**6)
    assert len(events) == 40  # smdebug's reader keeps X events; the instant is ours only
    assert {e.event_phase for e in events} == {"Step:ModeKeys.TRAIN", "Forward",
                                               "Backward(post-forward)", "DataLoaderIter"}
    steps = [e for e in events if e.event_phase == "Step:ModeKeys.TRAIN"]
    assert sorted(int(e.event_args["step_num"]) for e in steps) == list(range(10))
    assert all(e.duration == 80000 for e in steps)
    assert min(e.start_time for e in events) == T0_US
    by_step = reader.get_events_by_step(3, 5)
    assert sorted({e.event_args["step_num"] for e in by_step}) == ["3", "4"]
