"""Python arguments and hook configurations are checked before a training starts, with messages
that name the argument, the value and what is allowed (issue 17); a collection named but not
defined is reported once and skipped, the training goes on (issue 14)."""

import json

import pytest
import torch
import torch.nn as nn

import trainscope.pytorch as ts
from trainscope.exceptions import SMDebugValueError
from hook_util import run_script
from tiny_net import Net


@pytest.mark.parametrize("kwargs, words", [
    ({"save_interval": "abc"}, ["save_interval='abc'", "not a whole number", ">= 1"]),
    ({"save_interval": 10**30}, ["save_interval=" + str(10**30), "too large", str(2**63 - 1)]),
    ({"save_interval": 0}, ["save_interval=0", ">= 1"]),
    ({"save_interval": -1}, ["save_interval=-1", ">= 1"]),
    ({"save_interval": 2.5}, ["save_interval=2.5", "not a whole number"]),
    ({"start_step": -3}, ["start_step=-3", ">= 0"]),
    ({"end_step": "never"}, ["end_step='never'", "not a whole number"]),
    ({"save_steps": [1, "x"]}, ["save_steps", "'x'", "not a whole number"]),
    ({"save_steps": 5}, ["save_steps=5", "list"]),
])
def test_save_config_arguments_are_named_in_errors(kwargs, words):
    for make in (ts.SaveConfig, ts.SaveConfigMode):
        with pytest.raises(SMDebugValueError) as e:
            make(**kwargs)
        for w in words:
            assert w in str(e.value), (make, str(e.value))


def test_whole_numbers_in_other_forms_are_accepted():
    # smdebug's JSON gives strings; numpy and float forms of whole numbers are common too.
    import numpy as np

    m = ts.SaveConfigMode(save_interval="10", start_step=np.int64(2), end_step=20.0,
                          save_steps=["3", 4])
    assert (m.save_interval, m.start_step, m.end_step, m.save_steps) == (10, 2, 20, [3, 4])
    assert isinstance(m.save_interval, int) and isinstance(m.start_step, int)


def test_dict_save_configs_given_to_the_hook_are_checked_the_same_way(tmp_path):
    with pytest.raises(SMDebugValueError, match=r"save_interval=10{30}.*too large"):
        ts.Hook(out_dir=str(tmp_path / "t"),
                save_config={ts.modes.TRAIN: {"save_interval": 10**30}})
    hook = ts.Hook(out_dir=str(tmp_path / "t"), quiet=True)
    with pytest.raises(SMDebugValueError, match="save_interval='x'"):
        hook.get_collection("weights").save_config = {ts.modes.TRAIN: {"save_interval": "x"}}
    hook.close()


def test_empty_hook_configuration_is_refused_outside_sagemaker(tmp_path):
    cfg = tmp_path / "hook.json"
    cfg.write_text("{}")
    script = tmp_path / "make_hook.py"
    script.write_text(
        "import trainscope.pytorch as ts\n"
        "try:\n"
        "    ts.Hook.create_from_json_file()\n"
        "except ValueError as e:\n"
        "    print('REFUSED', e)\n"
        "else:\n"
        "    print('ACCEPTED')\n")
    p = run_script(str(script), extra_env={"TRAINSCOPE_CONFIG": str(cfg)})
    out = p.stdout
    assert "REFUSED" in out, out
    for w in ("LocalPath", str(cfg), "TRAINSCOPE_CONFIG", "/opt/ml/output/tensors",
              "TRAINING_JOB_NAME"):
        assert w in out, (w, out)


def _steps(hook, model, n):
    crit = nn.CrossEntropyLoss()
    hook.register_loss(crit)
    for _ in range(n):
        crit(model(torch.randn(3, 4)), torch.randint(0, 2, (3,))).backward()


def test_undefined_collection_is_reported_once_and_skipped(tmp_path, capfd):
    model = Net()
    hook = ts.Hook(out_dir=str(tmp_path / "t"), save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["relu_activations", "weights", "weight"])
    hook.register_module(model)
    _steps(hook, model, 3)  # no exception: the training goes on
    hook.close()
    err = capfd.readouterr().err
    assert err.count("collection 'relu_activations' is not defined") == 1, err
    assert err.count("collection 'weight' is not defined") == 1, err
    assert "did you mean 'weights'" in err
    assert "known:" in err and "gradients" in err
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor("Net_fc1.weight").steps() == [0, 1, 2]
    assert trial.tensor("CrossEntropyLoss_output_0").steps() == [0, 1, 2]


def test_collection_defined_after_the_hook_is_judged_at_the_first_step(tmp_path, capfd):
    # smdebug's pattern: name it in include_collections, define it on the next line.
    model = Net()
    hook = ts.Hook(out_dir=str(tmp_path / "t"), save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["ReluActivation"])
    hook.get_collection("ReluActivation").include("relu*")
    hook.register_module(model)
    _steps(hook, model, 2)
    hook.close()
    assert "ReluActivation" not in capfd.readouterr().err
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.tensor("relu_output_0").steps() == [0, 1]
    assert trial.tensor("relu_input_0").steps() == [0, 1]


def test_collection_defined_after_a_json_hook_is_judged_at_the_first_step(tmp_path, capfd):
    cfg = tmp_path / "hook.json"
    cfg.write_text(json.dumps({
        "LocalPath": str(tmp_path / "t"),
        "HookParameters": {"save_interval": "1"},
        "CollectionConfigurations": [{"CollectionName": "ReluActivation"},
                                     {"CollectionName": "empty_one"}]}))
    model = Net()
    hook = ts.Hook.create_from_json_file(str(cfg))
    hook.get_collection("ReluActivation").include("relu_output")
    hook.register_module(model)
    _steps(hook, model, 2)
    hook.close()
    err = capfd.readouterr().err
    assert "ReluActivation" not in err
    assert err.count("collection 'empty_one' has no include_regex and no tensor names") == 1, err
    trial = ts.create_trial(str(tmp_path / "t"))
    assert trial.tensor("relu_output_0").steps() == [0, 1]


def test_json_syntax_errors_name_the_line_and_column(tmp_path):
    cfg = tmp_path / "hook.json"
    cfg.write_text('{"LocalPath": "%s",\n "HookParameters": {"save_interval": 5,}}' %
                   (tmp_path / "t"))
    with pytest.raises(SMDebugValueError) as e:
        ts.Hook.create_from_json_file(str(cfg))
    assert f"{cfg}: not valid JSON at line 2, column 40" in str(e.value), str(e.value)


@pytest.mark.parametrize("kwargs, words", [
    ({"reductions": "mean"}, ["ReductionConfig: reductions='mean' is not a list", "['mean']"]),
    ({"norms": 5}, ["ReductionConfig: norms=5 is not a list", "'l1', 'l2'"]),
    ({"abs_reductions": ["max", "median"]}, ["abs_reductions", "'median'", "min, max"]),
])
def test_reduction_config_arguments_are_named_in_errors(kwargs, words):
    with pytest.raises(SMDebugValueError) as e:
        ts.ReductionConfig(**kwargs)
    for w in words:
        assert w in str(e.value), str(e.value)
