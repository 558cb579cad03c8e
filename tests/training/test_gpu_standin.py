"""The GPU path of the profiler without a GPU: `trainscope run` loads a stand-in NVML driver.

tests/profiler/nvml_standin/nvml_standin.c exports the NVML functions the sampler resolves, with
NVML's C signatures, and reports GPUs whose readings the environment sets. Compiled here into a
folder named by LD_LIBRARY_PATH, it is what the supervisor's dlopen("libnvidia-ml.so.1") finds: the
same code path as on a machine with an NVIDIA driver (dlopen, dlsym, nvmlInit_v2, per-GPU reads,
system/ JSON lines, the GPU rules). On a real GPU machine, tests/python/test_cuda_capture.py and
the benchmark notes cover the hardware itself.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_profiler_rules import CLI, PROGRAMS, _findings, _status, run_under_trainscope

HERE = Path(__file__).resolve().parent
STANDIN = HERE.parent / "profiler" / "nvml_standin" / "nvml_standin.c"
CC = shutil.which("cc") or shutil.which("gcc")

pytestmark = [
    pytest.mark.skipif(CLI is None, reason="the native trainscope command is not built "
                                           "(cmake --build build --target trainscope_cli)"),
    pytest.mark.skipif(CC is None, reason="no C compiler to build the stand-in NVML driver"),
]


@pytest.fixture(scope="module")
def driver_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("nvml")
    subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", str(d / "libnvidia-ml.so.1"),
                    str(STANDIN)], check=True)
    return d


def _run(trial, driver_dir, program, rules, **standin):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVML_STANDIN_")}
    env["LD_LIBRARY_PATH"] = str(driver_dir) + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    env.update({f"NVML_STANDIN_{k.upper()}": str(v) for k, v in standin.items()})
    return run_under_trainscope(trial, rules, program, env=env,
                                options=["--system-interval-ms", "100"])[0]


def _gpu_metrics(trial):
    """{(gpu name, dimension): [values]} from the trial's system/ JSON lines."""
    out = {}
    for f in sorted((trial / "system").rglob("*.json")):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if rec["Type"] == "gpu":
                out.setdefault((rec["Name"], rec["Dimension"]), []).append(rec["Value"])
    return out


RULES = ["LowGPUUtilization:patience=5,window=10", "GPUMemoryIncrease:patience=5,window=5"]


def test_an_idle_gpu_with_growing_memory_is_caught(tmp_path, driver_dir):
    trial = tmp_path / "trial"
    _run(trial, driver_dir, [str(PROGRAMS / "healthy_mlp.py")], RULES,
         gpus=2, util=3, mem_mb=1000, mem_grow_mb=300)
    m = _gpu_metrics(trial)
    # Every reading the stand-in gives arrives, per GPU, under smdebug's names.
    for gpu, temp, watts in (("gpu0", 40, 70), ("gpu1", 41, 71)):
        assert set(m[(gpu, "GPUUtilization")]) == {3.0}
        assert set(m[(gpu, "GPUTemperatureCelsius")]) == {temp}
        assert set(m[(gpu, "GPUPowerWatts")]) == {watts}
        used = m[(gpu, "GPUMemoryUsedBytes")]
        assert used[0] >= 1000 * 2**20 and used[-1] > used[0], used[:3]
        assert len(used) >= 10
    assert ("gpu2", "GPUUtilization") not in m

    low = _findings(trial, "LowGPUUtilization")
    assert _status(trial, "LowGPUUtilization")["status"] == "IssuesFound"
    assert {f["tensor"] for f in low} == {"algo-1/gpu0", "algo-1/gpu1"}
    assert all(f["value"] == 3.0 and f["threshold"] == 70.0 for f in low), low
    assert "under-used" in low[0]["explanation"]

    grow = _findings(trial, "GPUMemoryIncrease")
    assert _status(trial, "GPUMemoryIncrease")["status"] == "IssuesFound", grow
    assert grow and grow[0]["value"] > grow[0]["threshold"] == 5.0, grow[:1]


def test_a_busy_gpu_with_steady_memory_raises_nothing(tmp_path, driver_dir):
    trial = tmp_path / "trial"
    _run(trial, driver_dir, [str(PROGRAMS / "healthy_mlp.py")], RULES,
         gpus=1, util=96, mem_mb=4000, mem_grow_mb=0)
    m = _gpu_metrics(trial)
    assert set(m[("gpu0", "GPUUtilization")]) == {96.0}
    for rule in ("LowGPUUtilization", "GPUMemoryIncrease"):
        status = _status(trial, rule)
        assert status["status"] == "NoIssuesFound", status
        # It judged real GPU data, not the "no GPU" case.
        assert "no GPU metrics" not in status["message"], status["message"]
        assert not _findings(trial, rule)


def test_a_driver_that_fails_to_initialise_is_one_clear_line(tmp_path, driver_dir):
    trial = tmp_path / "trial"
    p = _run(trial, driver_dir, ["-c", "import time; time.sleep(1.5)"], RULES, fail_init=1)
    lines = [line for line in p.stderr.splitlines() if "nvml" in line.lower()]
    assert lines == ["trainscope: nvmlInit_v2 failed: NVML error 9 (Driver Not Loaded): "
                     "GPU metrics off"], p.stderr
    assert not _gpu_metrics(trial)
    for rule in ("LowGPUUtilization", "GPUMemoryIncrease"):
        status = _status(trial, rule)
        assert status["status"] == "NoIssuesFound", status
        assert "no GPU metrics" in status["message"]
