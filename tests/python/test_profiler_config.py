"""The profiler's configuration: the SageMaker SDK's classes become smdebug's JSON, which the C++
parser reads the same way as TRAINSCOPE_PROFILER_CONFIG; the hook picks it up from its argument,
its JSON file or the environment; with no configuration nothing is installed."""

import json

import pytest
import torch

import trainscope.pytorch as ts
from trainscope.profiler import (DataloaderProfilingConfig, DetailedProfilingConfig,
                                 FrameworkProfile, ProfilerConfig, PythonProfiler,
                                 PythonProfilingConfig, cProfileTimer)
from trainscope.profiler import config as pconfig


@pytest.fixture(autouse=True)
def no_env_config(monkeypatch):
    for k in ("TRAINSCOPE_PROFILER_CONFIG", "SMPROFILER_CONFIG_PATH", "TRAINSCOPE_CONFIG",
              "SMDEBUG_CONFIG_FILE_PATH"):
        monkeypatch.delenv(k, raising=False)


def test_framework_profile_range_applies_to_detailed_and_python():
    cfg = ProfilerConfig(system_monitor_interval_millis=200,
                         framework_profile_params=FrameworkProfile(start_step=5, num_steps=2))
    doc = cfg.to_json_dict()["ProfilingParameters"]
    assert json.loads(doc["DetailedProfilingConfig"]) == {"StartStep": 5, "NumSteps": 2}
    assert json.loads(doc["PythonProfilingConfig"]) == {
        "StartStep": 5, "NumSteps": 2, "ProfilerName": "cprofile", "cProfileTimer": "total_time"}
    assert "DataloaderProfilingConfig" not in doc
    r = pconfig.resolve(cfg)
    assert r.enabled and not r.explicit_local_path
    assert r.parsed["system_monitor_interval_millis"] == 200
    assert r.range("detailed_profiling")["start_step"] == 5
    assert r.range("python_profiling")["num_steps"] == 2
    assert r.range("python_profiling")["profiler_name"] == "cprofile"


def test_explicit_sub_configs_and_time_windows():
    profile = FrameworkProfile(
        local_path="/tmp/somewhere",
        detailed_profiling_config=DetailedProfilingConfig(start_unix_time=1.7e9, duration=30),
        dataloader_profiling_config=DataloaderProfilingConfig(start_step=1, num_steps=3,
                                                              metrics_regex="GetNext"),
        python_profiling_config=PythonProfilingConfig(
            start_step=7, python_profiler=PythonProfiler.PYINSTRUMENT))
    r = pconfig.resolve(ProfilerConfig(framework_profile_params=profile,
                                       start_system_monitor=False))
    assert r.explicit_local_path and r.local_path == "/tmp/somewhere"
    d = r.range("detailed_profiling")
    assert d["enabled"] and d["start_time_s"] == 1.7e9 and d["duration_s"] == 30
    dl = r.range("dataloader_profiling")
    assert dl["metrics_regex"] == "GetNext" and dl["num_steps"] == 3
    assert r.range("python_profiling")["profiler_name"] == "pyinstrument"
    assert r.start_system_monitor is False
    assert cProfileTimer("cpu_time") is cProfileTimer.CPU_TIME


def test_smdebug_json_text_and_bad_values():
    smdebug_doc = {"ProfilingParameters": {
        "ProfilerEnabled": True, "LocalPath": "/tmp/p",
        "DetailedProfilingConfig": "{\"StartStep\": 2, \"NumSteps\": 1}",
        "start_system_monitor": "auto"}}
    r = pconfig.resolve(json.dumps(smdebug_doc))
    assert r.enabled and r.range("detailed_profiling")["start_step"] == 2
    assert r.start_system_monitor == "auto"
    assert not pconfig.resolve({"ProfilingParameters": {"ProfilerEnabled": False}}).enabled
    with pytest.raises(ValueError, match="100"):
        pconfig.resolve({"ProfilingParameters": {"SystemMonitorIntervalMillis": 5}})


def test_hook_without_profiler_installs_nothing(tmp_path):
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    before = _BaseDataLoaderIter.__next__
    hook = ts.Hook(out_dir=str(tmp_path / "trial"))
    try:
        model = torch.nn.Linear(3, 2)
        hook.register_module(model)
        n_pre = len(model._forward_pre_hooks)
        assert hook._prof is None
        assert hook.get_profiler_data() is None
        assert _BaseDataLoaderIter.__next__ is before
        with hook.profile("nothing"):
            model(torch.ones(1, 3)).sum().backward()
        # No pre-hook at all: the step boundary runs in front of the call (_pre_call.py).
        assert n_pre == 0 and model._compiled_call_impl is not None
    finally:
        hook.close()
    assert not (tmp_path / "trial" / "framework").exists()


def test_hook_reads_env_and_hook_json(tmp_path, monkeypatch):
    prof_file = tmp_path / "profiler.json"
    prof_file.write_text(ProfilerConfig(start_system_monitor=False).to_json())
    monkeypatch.setenv("TRAINSCOPE_PROFILER_CONFIG", str(prof_file))
    hook = ts.Hook(out_dir=str(tmp_path / "a"))
    try:
        assert hook._prof is not None and hook._prof.sampler is None
        with hook.profile("outside a step"):
            pass
        data = hook.get_profiler_data(system=False)
        assert [(s.phase, s.name, s.step) for s in data.spans] == [
            ("UserSpan", "outside a step", -1)]
    finally:
        hook.close()
    monkeypatch.delenv("TRAINSCOPE_PROFILER_CONFIG")
    # ProfilingParameters inside the hook's own JSON file
    hook_json = tmp_path / "hook.json"
    hook_json.write_text(json.dumps({
        "LocalPath": str(tmp_path / "b"),
        "ProfilingParameters": {"ProfilerEnabled": True, "StartSystemMonitor": False}}))
    hook = ts.Hook.create_from_json_file(str(hook_json))
    try:
        assert hook._prof is not None and hook._prof.base_dir == str(tmp_path / "b")
    finally:
        hook.close()


def test_bad_profiler_config_argument_raises(tmp_path):
    from trainscope.exceptions import SMDebugValueError

    with pytest.raises(SMDebugValueError, match="profiler_config"):
        ts.Hook(out_dir=str(tmp_path / "t"),
                profiler_config={"ProfilingParameters": {"SystemMonitorIntervalMillis": 1}})
