"""The on-device statistics of trainscope.pytorch (_device.py) come from C++ (src/torch's
TorchStatsOnDevice, through the extension trainscope._torch_stats); when the extension cannot be
used (missing, or built against another torch), the hook copies the tensors to the host, the
core's CPU statistics give the same reductions, and one warning says why and how to fix it.

CPU tensors stand in for a GPU's: the device is only where the tensor lives (test_cuda_capture.py
runs the same path on a GPU where there is one)."""

import pathlib
import sys
import warnings

import numpy as np
import pytest
import torch

import trainscope
import trainscope.pytorch as ts
from trainscope import _core
from trainscope.pytorch import _device
from trainscope.pytorch._device import DeviceStepBuffer


@pytest.fixture
def fresh_extension(monkeypatch):
    """_device.py loads the extension again (and may warn again) in this test only."""
    monkeypatch.setattr(_device, "_extension", None)


def _cases():
    g = torch.Generator().manual_seed(11)
    specials = torch.randn(6, 5, generator=g)
    specials[2, 3] = float("-inf")
    specials[4, 1] = 0.0
    nan = torch.randn(8, generator=g)
    nan[3] = float("nan")
    return {
        "float32": torch.randn(21, 13, generator=g),
        "strided": torch.randn(5, 7, generator=g).t(),
        "specials": specials,
        "nan": nan,
        "int64": torch.randint(-4, 4, (30,), generator=g),
        "bool": torch.randn(9, generator=g).gt(0),
        "bfloat16": torch.randn(10, generator=g).bfloat16(),
        "complex64": torch.randn(3, 3, generator=g, dtype=torch.complex64),
    }


def _save_through_buffer(out, cases, save_raw=False):
    """Every case through DeviceStepBuffer at step 0 with every reduction: (the trial, what was
    queued on the device, the C++ hook's stats)."""
    ops = list(_core.reduction_names())
    plain = [op for op in ops if op not in ("l1", "l2")]
    rc = ts.ReductionConfig(reductions=plain, abs_reductions=plain, norms=["l1", "l2"],
                            abs_norms=["l1", "l2"], save_raw_tensor=save_raw)
    hook = ts.Hook(out_dir=str(out), save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights"], reduction_config=rc, quiet=True)
    hook._prepare()
    hook._c.step()
    buf = DeviceStepBuffer(_core.STATS_FIELDS)
    for case, t in cases.items():
        buf.add(f"Net_{case}.weight", t, hook._c.plan(f"Net_{case}.weight"))
    queued = list(buf.stats)
    buf.flush(hook._c)
    hook.close()
    return trainscope.create_trial(str(out)), queued, hook._c.stats()


def _assert_reductions_are_the_cores(trial, cases):
    n_ops = len(_core.reduction_names())
    for case, t in cases.items():
        saved = trial.tensor(f"Net_{case}.weight").reduction_values(0)
        assert len(saved) == 2 * n_ops, (case, sorted(saved))
        rel = 1e-2 if t.dtype in (torch.float16, torch.bfloat16) else 1e-9
        for (op, is_abs), got in saved.items():
            want = _core.reduction(t, op, is_abs)
            if np.isnan(want):
                assert np.isnan(got), (case, op, is_abs)
            else:
                assert got == pytest.approx(want, rel=rel, abs=1e-9), (case, op, is_abs)


def test_the_extension_is_installed_beside_core_and_built_against_this_torch():
    from trainscope import _torch_stats

    package = pathlib.Path(trainscope.__file__).parent
    assert pathlib.Path(_torch_stats.__file__).parent == package
    assert pathlib.Path(_core.__file__).parent == package
    assert _torch_stats.TORCH_VERSION == torch.__version__


def test_stats_on_device_returns_one_float64_vector_in_stats_fields_order():
    from trainscope import _torch_stats

    t = torch.randn(7, 3, requires_grad=True)
    # The order given does not matter: the values come in STATS_FIELDS order, count left out.
    got = _torch_stats.stats_on_device(t, ["sum_sq", "count", "max", "nan_count"])
    assert isinstance(got, torch.Tensor) and got.device == t.device
    assert got.dtype == torch.float64 and got.shape == (3,) and not got.requires_grad
    x = t.detach().double()
    assert got.tolist() == pytest.approx([0.0, x.max().item(), (x * x).sum().item()], rel=1e-12)
    assert _torch_stats.stats_on_device(t, []).shape == (0,)
    with pytest.raises(ValueError, match="unknown statistic 'median'"):
        _torch_stats.stats_on_device(t, ["median"])


def test_the_hook_computes_device_statistics_through_the_extension(tmp_path, monkeypatch,
                                                                     fresh_extension):
    """Every queued statistic is one call of the C++ function, whose result stays where the
    tensor lives until the step's flush; the reductions saved are the core's."""
    from trainscope import _torch_stats

    calls = []
    real = _torch_stats.stats_on_device

    def counting(t, fields):
        calls.append(tuple(fields))
        return real(t, fields)

    monkeypatch.setattr(_torch_stats, "stats_on_device", counting)
    cases = _cases()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning
        trial, queued, _ = _save_through_buffer(tmp_path / "t", cases)
    assert len(calls) == len(cases)
    assert all(fields == calls[0] and "count" not in fields for fields in calls)
    assert len(queued) == len(cases)
    for (name, _, _, fields, values), t in zip(queued, cases.values()):
        assert isinstance(values, torch.Tensor) and values.device == t.device
        assert values.shape == (len(fields),)
    _assert_reductions_are_the_cores(trial, cases)


def test_raw_values_take_the_host_copy_and_reductions_are_written_once(tmp_path,
                                                                         fresh_extension):
    """When a raw value is due the core computes everything from the host copy (as TorchHook
    does): no device statistics, and each reduction is in the step once."""
    cases = _cases()
    trial, queued, stats = _save_through_buffer(tmp_path / "t", cases, save_raw=True)
    assert queued == []
    assert stats["reductions_saved"] == len(cases) * 2 * len(_core.reduction_names())
    _assert_reductions_are_the_cores(trial, cases)
    for case, t in cases.items():
        if t.dtype != torch.bfloat16:  # (numpy has no bfloat16)
            np.testing.assert_array_equal(trial.tensor(f"Net_{case}.weight").value(0), t.numpy())


def test_without_the_extension_tensors_go_to_the_host_and_one_warning_says_why(
        tmp_path, monkeypatch, fresh_extension):
    # The import fails, as it does when the extension's torch ABI no longer matches.
    monkeypatch.setitem(sys.modules, "trainscope._torch_stats", None)
    cases = _cases()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trial, queued, _ = _save_through_buffer(tmp_path / "t", cases)
        _save_through_buffer(tmp_path / "t2", cases)  # warned once, not again
    assert queued == []  # nothing computed on the device: all went through the host copy
    ours = [w for w in caught if "trainscope._torch_stats" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    assert ours[0].category is RuntimeWarning
    text = str(ours[0].message)
    assert "import of trainscope._torch_stats halted" in text  # the cause, from the ImportError
    assert "copied to the host" in text
    assert "reinstall trainscope against the current torch" in text
    assert "--no-build-isolation" in text
    _assert_reductions_are_the_cores(trial, cases)


def test_an_extension_built_against_another_torch_is_not_used(tmp_path, monkeypatch,
                                                               fresh_extension):
    from trainscope import _torch_stats

    monkeypatch.setattr(_torch_stats, "TORCH_VERSION", "2.0.0+old")
    cases = {"float32": _cases()["float32"]}
    with pytest.warns(RuntimeWarning) as caught:
        trial, queued, _ = _save_through_buffer(tmp_path / "t", cases)
    assert queued == []
    text = str(caught[0].message)
    assert f"built against torch 2.0.0+old, but torch {torch.__version__} is running" in text
    _assert_reductions_are_the_cores(trial, cases)
