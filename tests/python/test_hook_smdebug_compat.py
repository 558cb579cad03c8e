"""A script written for smdebug.pytorch runs unchanged but for the import and produces the same
trial: same steps per mode, same tensor names with the same steps, the same values. Each trial is
read by its own library's reader (smdebug's reader on smdebug's trial, ours on ours)."""

import math

import pytest

from hook_util import read_trial, run_script

pytest.importorskip("smdebug")


def _both(tmp_path, scenario):
    out = {}
    for lib in ("smdebug", "trainscope"):
        path = tmp_path / lib
        run_script("train_smdebug_style.py", f"{lib}.pytorch", path, scenario)
        out[lib] = read_trial(lib, str(path))
    return out["smdebug"], out["trainscope"]


def _assert_close(a, b, where):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert b == pytest.approx(a, rel=1e-5, abs=1e-7), where


def _compare(sm, ts):
    assert ts["steps"] == sm["steps"]
    assert sorted(ts["tensors"]) == sorted(sm["tensors"])
    for name, s in sm["tensors"].items():
        t = ts["tensors"][name]
        assert t["steps"] == s["steps"], name
        for step, value in s["values"].items():
            _assert_close(value, t["values"][step], f"{name} step {step}")
            for red in ("min", "max", "mean", "abs_min", "abs_max", "abs_mean"):
                if red in s["reductions"][step]:
                    _assert_close(s["reductions"][step][red], t["reductions"][step][red],
                                  f"{name} step {step} {red}")


def test_mlp_same_names_steps_and_values(tmp_path):
    sm, ts = _both(tmp_path, "mlp")
    # What smdebug produced, spelled out, so a change of both would still be seen.
    assert sm["steps"]["GLOBAL"] == [0, 2, 3, 4, 6, 7, 8, 9, 10]
    assert sm["steps"]["EVAL"] == [0, 1, 2]
    assert "gradient/Net_fc1.weight" in sm["tensors"]
    assert "relu_output_0" in sm["tensors"]
    assert "CrossEntropyLoss_output_0" in sm["tensors"]
    assert "scalar/loss_value" in sm["tensors"]
    _compare(sm, ts)
    # The relus collection saved l2 next to the raw value; smdebug and trainscope both write the
    # vector norm of the flattened tensor.
    s = sm["tensors"]["relu_output_0"]["reductions"]["0"]["l2"]
    t = ts["tensors"]["relu_output_0"]["reductions"]["0"]["l2"]
    assert t == pytest.approx(s, rel=1e-5)


def test_sequential_save_all_with_a_frozen_layer(tmp_path):
    sm, ts = _both(tmp_path, "sequential")
    names = set(sm["tensors"])
    assert {"Sequential_0.weight", "Sequential_2.weight", "gradient/Sequential_2.weight",
            "1_output_0", "4_input_0", "MSELoss_output_0"} <= names
    assert "gradient/Sequential_0.weight" not in names  # frozen: no gradient
    _compare(sm, ts)
