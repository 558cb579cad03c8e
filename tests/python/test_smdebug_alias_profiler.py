"""A SageMaker profiler-analysis notebook flow, written for smdebug, run unmodified with the alias
on a real profiled training: PandasFrame's system and framework DataFrames, a step-duration
histogram and a timeline of a system metric. The real smdebug's PandasFrame on the same trial is
the oracle."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import trainscope
from profiler_util import train
from trainscope.smdebug import _finder

NOTEBOOK = """
    import json, sys
    import numpy as np
    from smdebug.profiler.analysis.utils.profiler_data_to_pandas import PandasFrame
    from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader
    from smdebug.profiler.utils import TimeUnits

    path = sys.argv[1]
    pf = PandasFrame(path)
    system_df = pf.get_all_system_metrics()
    framework_df = pf.get_all_framework_metrics()

    # The notebook's step-duration histogram.
    steps = framework_df[framework_df["framework_metric"].str.startswith("Step:ModeKeys.TRAIN")]
    durations_ms = ((steps["end_time_us"] - steps["start_time_us"]) / 1000).tolist()
    counts, _ = np.histogram(durations_ms, bins=5)
    # The notebook's timeline: one system metric over time.
    cpu = system_df[system_df["dimension"] == "CPUUtilization"]
    sys_by_step, fw_by_step = pf.get_profiler_data_by_step(1, 2)

    reader = LocalSystemMetricsReader(path)
    first = reader.get_timestamp_of_first_available_file()
    in_s = reader.get_events(first / 1e6, (first + 10 ** 9) / 1e6, unit=TimeUnits.SECONDS)
    fw_events = LocalAlgorithmMetricsReader(path).get_events(0, 2 ** 62)
    import smdebug
    print(json.dumps({
        "smdebug_file": smdebug.__file__,
        "system_columns": list(system_df.columns),
        "framework_columns": list(framework_df.columns),
        "system_rows": len(system_df),
        "dimensions": sorted(set(system_df["dimension"])),
        "train_steps": sorted(set(steps["step"].tolist())),
        "histogram_total": int(counts.sum()),
        "cpu_points": len(cpu),
        "cpu_monotonic": bool(cpu["timestamp_us"].is_monotonic_increasing),
        "by_step_steps": sorted(set(fw_by_step["step"].tolist())),
        "by_step_system_rows": len(sys_by_step),
        "events_in_seconds_query": len(in_s),
        "framework_events": len(fw_events),
    }))
"""


def test_profiler_notebook_flow_runs_unmodified(tmp_path):
    trial = tmp_path / "trial"
    train(str(trial), steps=5, eval_steps=1, sleep_ms=30, system=True, interval_ms=100)
    script = tmp_path / "notebook.py"
    script.write_text(textwrap.dedent(NOTEBOOK))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(trainscope.__file__)))
    p = subprocess.run([sys.executable, "-m", "trainscope.smdebug", "--force", str(script),
                        str(trial)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["smdebug_file"].startswith(_finder.ALIAS_DIR)
    assert out["system_columns"] == ["timestamp", "timestamp_us", "value", "system_metric",
                                     "dimension", "nodeID", "type"]
    assert out["framework_columns"] == ["start_time", "end_time", "start_time_us", "end_time_us",
                                        "tid", "pid", "framework_metric", "step", "bytes",
                                        "process", "nodeID"]
    assert out["train_steps"] == [0, 1, 2, 3, 4]
    assert out["histogram_total"] == 5
    assert out["cpu_points"] > 0 and out["cpu_monotonic"]
    assert "CPUUtilization" in out["dimensions"]
    assert out["by_step_steps"] == [1, 2]
    assert out["events_in_seconds_query"] == out["system_rows"]
    assert out["framework_events"] > 0

    # The real smdebug reads the same trial to the same frames.
    smdebug = pytest.importorskip("smdebug")  # noqa: F841
    from smdebug.profiler.analysis.utils.profiler_data_to_pandas import PandasFrame as SmFrame

    sm = SmFrame(str(trial))
    sm_sys, sm_fw = sm.get_all_system_metrics(), sm.get_all_framework_metrics()
    assert list(sm_sys.columns) == out["system_columns"]
    assert list(sm_fw.columns) == out["framework_columns"]
    assert len(sm_sys) == out["system_rows"]
    assert sorted(set(sm_sys["dimension"])) == out["dimensions"]
    sm_steps = sm_fw[sm_fw["framework_metric"].str.startswith("Step:ModeKeys.TRAIN")]
    assert sorted(set(sm_steps["step"].tolist())) == out["train_steps"]


def test_profiler_config_parser_reads_the_hooks_configuration(tmp_path, monkeypatch):
    from trainscope.profiler.config import MetricsCategory, ProfilerConfigParser

    monkeypatch.delenv("TRAINSCOPE_PROFILER_CONFIG", raising=False)
    monkeypatch.delenv("SMPROFILER_CONFIG_PATH", raising=False)
    assert not ProfilerConfigParser().profiling_enabled
    path = tmp_path / "profiler.json"
    path.write_text(json.dumps({"ProfilingParameters": {
        "ProfilerEnabled": True, "LocalPath": str(tmp_path / "out"),
        "PythonProfilingConfig": '{"StartStep": 2, "NumSteps": 1}'}}))
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(path))
    parser = ProfilerConfigParser()
    assert parser.profiling_enabled and parser.error is None
    assert parser.local_path == str(tmp_path / "out")
    assert parser.is_python_profiling_enabled()
    assert parser.metrics_config(MetricsCategory.DETAILED_PROFILING) == {}
    path.write_text(json.dumps({"ProfilingParameters": {"SystemMonitorIntervalMillis": 5}}))
    parser = ProfilerConfigParser()
    assert not parser.profiling_enabled and "SystemMonitorIntervalMillis" in parser.error
