"""Readers read every file of a trial bounded (issue 17; found by fuzz/trial_damage_fuzz.py): a
huge file in the trial (a 4 GiB sparse file, as a damaged or hostile trial can hold) is refused by
its size with an error or a warning naming it, never read into memory. Each case runs the real
reader (the Python trial, the `trainscope` command) under an address-space limit of 2 GiB, which
reading the file whole would exceed. The trials are written by a real hook; the system and
timeline files are the profiler fixture's."""

import os
import resource
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import trainscope.pytorch as ts
from profiler_util import trainscope_cli

CLI = trainscope_cli()
HERE = os.path.dirname(os.path.abspath(__file__))
PROFILER_TRIAL = os.path.join(os.path.dirname(HERE), "profiler", "data", "smdebug_trial")
HUGE = 4 << 30


def _trial(out_dir):
    torch.manual_seed(0)
    model, crit = nn.Linear(4, 2), nn.MSELoss()
    hook = ts.Hook(out_dir=str(out_dir), quiet=True, include_collections=["weights", "losses"],
                   save_config=ts.SaveConfig(save_interval=1))
    hook.register_module(model)
    hook.register_loss(crit)
    for _ in range(3):
        crit(model(torch.randn(3, 4)), torch.randn(3, 2)).backward()
    hook.close()
    return str(out_dir)


def _limited(argv, limit=2 << 30, timeout=60):
    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec)


_READ = """
import sys
from trainscope import create_trial
from trainscope.exceptions import TrainscopeError
try:
    t = create_trial(sys.argv[1], timeout=2)
    print("opened", t.steps())
except TrainscopeError as e:
    print("TrainscopeError", type(e).__name__, e)
"""


def test_a_huge_collections_file_is_a_named_trainscope_error(tmp_path):
    trial = _trial(tmp_path / "t")
    path = os.path.join(trial, "collections", "000000000", "worker_0_collections.json")
    os.truncate(path, HUGE)
    p = _limited([sys.executable, "-c", _READ, trial], limit=4 << 30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("TrainscopeError TrialCorruptionError"), p.stdout + p.stderr
    assert "worker_0_collections.json" in p.stdout and "4294967296 bytes" in p.stdout, p.stdout


@pytest.mark.skipif(CLI is None, reason="no trainscope command: build it or pip install .")
def test_ls_names_a_huge_collections_file(tmp_path):
    trial = _trial(tmp_path / "t")
    path = os.path.join(trial, "collections", "000000000", "worker_0_collections.json")
    os.truncate(path, HUGE)
    p = _limited([CLI, "ls", trial])
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "worker_0_collections.json" in p.stderr and "4294967296 bytes" in p.stderr, p.stderr


@pytest.mark.skipif(CLI is None, reason="no trainscope command: build it or pip install .")
def test_timeline_skips_huge_inputs_with_a_warning_naming_each(tmp_path):
    trial = str(tmp_path / "t")
    shutil.copytree(PROFILER_TRIAL, trial)
    events = os.path.join(trial, "rule-output", "LossNotDecreasing", "events.jsonl")
    os.makedirs(os.path.dirname(events))
    with open(events, "w") as f:
        f.write('{"kind":"finding","rule":"LossNotDecreasing","status":"IssuesFound"}\n')
    os.truncate(events, HUGE)
    system = os.path.join(trial, "system", "incremental", "2026112122", "1795301700.algo-1.json")
    os.truncate(system, HUGE)
    out = str(tmp_path / "merged.json")
    p = _limited([CLI, "timeline", trial, "-o", out])
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    text = p.stdout + p.stderr
    for path in (events, system):
        assert os.path.basename(path) in text, text
    assert "4294967296 bytes" in text, text
    assert os.path.getsize(out) < 1 << 20
