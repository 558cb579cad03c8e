"""A damaged index file does not make its step vanish without a word: the trial's steps() leaves
the step out and warns once, naming the file and what is wrong; damaged_index_files() lists it.
The trial is written by a real hook; one step's index file is then cut short."""

import glob
import os
import warnings

import pytest
import torch
import torch.nn as nn

import trainscope.pytorch as ts
from trainscope import create_trial


def _trial(out_dir, steps=4):
    torch.manual_seed(0)
    model, crit = nn.Linear(4, 2), nn.MSELoss()
    hook = ts.Hook(out_dir=str(out_dir), quiet=True, include_collections=["weights", "losses"],
                   save_config=ts.SaveConfig(save_interval=1))
    hook.register_module(model)
    hook.register_loss(crit)
    for _ in range(steps):
        crit(model(torch.randn(3, 4)), torch.randn(3, 2)).backward()
    hook.close()


def test_a_cut_index_file_is_named_once_and_its_step_left_out(tmp_path):
    _trial(tmp_path / "t")
    index = sorted(glob.glob(str(tmp_path / "t" / "index" / "*" / "*.json")))
    assert len(index) == 4, index
    damaged = index[2]
    with open(damaged, "rb") as f:
        text = f.read()
    with open(damaged, "wb") as f:
        f.write(text[: len(text) // 2])

    trial = create_trial(str(tmp_path / "t"))
    with pytest.warns(RuntimeWarning, match=os.path.basename(damaged)):
        steps = trial.steps()
    assert steps == [0, 1, 3]
    assert len(trial.damaged_index_files()) == 1
    assert damaged in trial.damaged_index_files()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: no second warning
        assert trial.steps() == [0, 1, 3]


def test_an_intact_trial_warns_nothing(tmp_path):
    _trial(tmp_path / "t")
    trial = create_trial(str(tmp_path / "t"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert trial.steps() == [0, 1, 2, 3]
    assert trial.damaged_index_files() == []
