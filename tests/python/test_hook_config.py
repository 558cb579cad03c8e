"""Configuring trainscope.pytorch's hook: JSON files named by environment variables, smdebug's
config objects, and configuration errors raised when the hook is made, with messages that say
what to change."""

import json

import pytest
import torch
import torch.nn as nn

import trainscope.pytorch as ts
from trainscope.exceptions import SMDebugValueError


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)


def _run(hook, steps, mode=None):
    net = Net()
    hook.register_module(net)
    if mode is not None:
        hook.set_mode(mode)
    for _ in range(steps):
        net(torch.randn(2, 3)).sum().backward()
    hook.close()


@pytest.mark.parametrize("var", ["TRAINSCOPE_CONFIG", "SMDEBUG_CONFIG_FILE_PATH"])
def test_json_config_from_environment(tmp_path, monkeypatch, var):
    out = tmp_path / "trial"
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(out),
        "HookParameters": {"save_interval": "4", "train.save_interval": "2",
                           "reductions": "mean,abs_max", "save_raw_tensor": "true"},
        "CollectionConfigurations": [
            {"CollectionName": "weights", "CollectionParameters": {"eval.save_steps": "1"}},
            {"CollectionName": "fc_out", "CollectionParameters": {"include_regex": "fc_output",
                                                                   "save_interval": "3"}},
        ],
    }))
    monkeypatch.delenv("TRAINSCOPE_CONFIG", raising=False)
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    monkeypatch.setenv(var, str(cfg))
    hook = ts.Hook.create_from_json_file()
    assert hook.out_dir == str(out)
    assert not hook.has_default_configuration()
    net = Net()
    hook.register_module(net)
    hook.set_mode(ts.modes.TRAIN)
    for _ in range(5):
        net(torch.randn(2, 3))
    hook.set_mode(ts.modes.EVAL)
    for _ in range(3):
        net(torch.randn(2, 3))
    hook.close()
    trial = ts.create_trial(str(out))
    w = trial.tensor("Net_fc.weight")
    assert w.steps(mode=ts.modes.TRAIN) == [0, 2, 4]  # train.save_interval beats save_interval
    assert w.steps(mode=ts.modes.EVAL) == [0, 1]  # interval 4 (step 0) + eval.save_steps
    assert w.reduction_value(0, "abs_max") == pytest.approx(
        float(w.value(0).__abs__().max()), rel=1e-6)
    assert trial.tensor("fc_output_0").steps(mode=ts.modes.TRAIN) == [0, 3]


def test_json_config_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINSCOPE_CONFIG", str(tmp_path / "none.json"))
    with pytest.raises(FileNotFoundError, match="TRAINSCOPE_CONFIG"):
        ts.Hook.create_from_json_file()
    ts.del_hook()
    assert ts.get_hook(create_if_not_exists=True) is None


def test_json_config_bad_value(tmp_path, monkeypatch):
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"LocalPath": str(tmp_path / "t"),
                               "HookParameters": {"save_interval": "every"}}))
    with pytest.raises(SMDebugValueError, match="save_interval: 'every' is not a whole number"):
        ts.Hook.create_from_json_file(str(cfg))


def test_get_hook_creates_from_json_once(tmp_path, monkeypatch):
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({"LocalPath": str(tmp_path / "t")}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    monkeypatch.delenv("TRAINSCOPE_CONFIG", raising=False)
    ts.del_hook()
    hook = ts.get_hook(create_if_not_exists=True)
    assert hook is not None and ts.get_hook() is hook
    assert hook.has_default_configuration()
    hook.close()
    ts.del_hook()


@pytest.mark.parametrize("kwargs, message", [
    (dict(include_regex=["fc[1"]), "collection 'default': include_regex 'fc\\[1' is not a valid"),
    (dict(reduction_config={"reductions": ["mean", "l3"]}), "unknown reduction .l3."),
    (dict(save_config={ts.modes.TRAIN: {"start_step": -2}}), "start_step=-2 is too small"),
    (dict(include_workers="some"), 'use "one"'),
])
def test_bad_configurations_raise_at_construction(tmp_path, kwargs, message):
    with pytest.raises((SMDebugValueError, ValueError), match=message):
        ts.Hook(out_dir=str(tmp_path / "t"), **kwargs)


def test_negative_interval_raises_when_the_config_is_made():
    with pytest.raises(ValueError, match="save_interval"):
        ts.SaveConfig(save_interval=-5)


def test_unknown_reduction_uses_the_core_message(tmp_path):
    with pytest.raises(ValueError, match="unknown reduction 'median'"):
        hook = ts.Hook(out_dir=str(tmp_path / "t"), quiet=True)
        hook.get_collection("weights").reduction_config = {"reductions": ["median"]}


def test_unknown_collection_is_skipped_at_the_first_step(tmp_path, capfd):
    hook = ts.Hook(out_dir=str(tmp_path / "t"), include_collections=["weight"])
    net = Net()
    hook.register_module(net)
    net(torch.randn(2, 3))  # the training goes on (test_reliability_validation.py has more)
    hook.close()
    assert "did you mean 'weights'" in capfd.readouterr().err


def test_out_dir_of_a_finished_trial_is_refused(tmp_path):
    hook = ts.Hook(out_dir=str(tmp_path / "t"), quiet=True)
    _run(hook, 1)
    with pytest.raises(SMDebugValueError, match="already holds a finished trial"):
        ts.Hook(out_dir=str(tmp_path / "t"))


def test_collection_objects_and_smdebug_style_mode_dicts(tmp_path):
    hook = ts.Hook(out_dir=str(tmp_path / "t"), include_collections=["mine"],
                   save_config={ts.modes.TRAIN: ts.SaveConfigMode(save_interval=2)}, quiet=True)
    c = ts.Collection("mine", include_regex=["^Net_fc.weight"],
                      reduction_config=ts.ReductionConfig(reductions=["mean"],
                                                          save_raw_tensor=True))
    hook.add_collection(c)
    assert hook.get_collection("mine") is c
    assert hook.get_collection("weights") is hook.get_collection("weights")
    c.save_config = ts.SaveConfig(save_interval=3)
    _run(hook, 7, mode=ts.modes.TRAIN)
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.tensor("Net_fc.weight").steps() == [0, 3, 6]
    coll = json.loads((tmp_path / "t/collections/000000000/worker_0_collections.json").read_text())
    assert coll["collections"]["mine"]["tensor_names"] == ["Net_fc.weight"]
    assert coll["collections"]["mine"]["reduction_config"]["reductions"] == "mean"
    assert coll["collections"]["losses"]["save_config"]["TRAIN"]["save_interval"] == 2
    assert coll["collections"]["losses"]["save_config"]["EVAL"]["save_interval"] == 500
