"""smdebug's own reader reads what trainscope writes, and trainscope raises the exception classes
smdebug raises in the same situations."""

import numpy as np
import pytest
from conftest import write_trial

import trainscope
from trainscope import exceptions as ts_ex
from trainscope import modes

smdebug_trials = pytest.importorskip("smdebug.trials")
from smdebug.core.modes import ModeKeys as SmdModes  # noqa: E402

# dtypes smdebug's reader decodes correctly (see tests/data/smdebug/README.md).
SMDEBUG_READABLE = [
    "float16", "float32", "float64", "int32", "int64", "uint8", "bool", "complex128"]


@pytest.fixture(autouse=True)
def _no_end_delay(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def make_trial(path):
    rng = np.random.default_rng(3)
    steps = []
    for g, (m, ms) in enumerate([(1, 0), (1, 1), (2, 0), (1, 2)]):
        g *= 2  # global steps 0, 2, 4, 6
        tensors = {f"{dt}/vec": (rng.standard_normal(5) * 50).astype(dt) for dt in SMDEBUG_READABLE}
        tensors["w"] = rng.standard_normal((3, 4)).astype(np.float32)
        tensors["loss"] = np.float32(1.0 / (g + 1))
        tensors["smdebug/reductions/mean/w"] = np.float32(tensors["w"].mean())
        tensors["words"] = ["a", "bc"]
        if m == 1:
            tensors["gradient/w"] = np.ones((3, 4), np.float32) * g
        steps.append((g, m, ms, tensors))
    write_trial(path, steps)
    return steps


def test_smdebug_reads_our_trial(trial_dir):
    steps = make_trial(trial_dir)
    smd = smdebug_trials.create_trial(str(trial_dir))
    ours = trainscope.create_trial(str(trial_dir))
    assert smd.steps() == ours.steps() == [0, 2, 4, 6]
    assert smd.steps(mode=SmdModes.TRAIN) == ours.steps(mode=modes.TRAIN) == [0, 1, 2]
    assert smd.steps(mode=SmdModes.EVAL) == [0]
    assert smd.tensor_names() == ours.tensor_names()
    assert smd.workers() == ["worker_0"]
    for g, m, ms, tensors in steps:
        assert smd.mode(g).value == m and smd.mode_step(g) == ms
        for name, want in tensors.items():
            if name.startswith("smdebug/reductions/"):
                continue
            got = smd.tensor(name).value(g)
            want = np.asarray(want)
            if want.dtype.kind == "U":
                assert got.tolist() == want.tolist()
            else:
                assert got.dtype == want.dtype and got.shape == want.shape, name
                assert got.tobytes() == want.tobytes(), name
        # the saved reduction folds onto its tensor in smdebug's reader too
        reductions = smd.tensor("w").reduction_values(g)
        assert list(reductions) == [("mean", False)]
        assert float(reductions[("mean", False)]) == float(np.float32(tensors["w"].mean()))
    assert smd.tensor("gradient/w").steps() == [0, 2, 6]


def situations(trial, mode_keys):
    """(label, callable) pairs that raise in both readers."""
    train, evaluation = mode_keys.TRAIN, mode_keys.EVAL
    return [
        ("missing tensor", lambda: trial.tensor("nope")),
        ("unsaved step", lambda: trial.tensor("w").value(1)),
        ("beyond the end", lambda: trial.tensor("w").value(100)),
        ("unsaved mode step", lambda: trial.tensor("w").value(7, mode=train)),
        ("tensor absent at saved step", lambda: trial.tensor("gradient/w").value(4)),
        ("tensor absent in mode", lambda: trial.tensor("gradient/w").value(0, mode=evaluation)),
        ("invalid worker", lambda: trial.tensor("w").value(0, worker="worker_9")),
        ("shape of absent", lambda: trial.tensor("gradient/w").shape(4)),
        ("workers of absent", lambda: trial.tensor("gradient/w").workers(4)),
        ("reductions of unsaved step", lambda: trial.tensor("w").reduction_values(3)),
        ("wait for skipped", lambda: trial.wait_for_steps([1])),
        ("wait past end", lambda: trial.wait_for_steps([50])),
    ]


def test_exception_classes_match_smdebug(trial_dir):
    make_trial(trial_dir)
    smd = smdebug_trials.create_trial(str(trial_dir))
    ours = trainscope.create_trial(str(trial_dir))
    import smdebug.exceptions as smd_ex

    for (label, smd_call), (_, our_call) in zip(situations(smd, SmdModes), situations(ours, modes)):
        with pytest.raises(smd_ex.SMDebugError) as smd_info:
            smd_call()
        with pytest.raises(ts_ex.TrainscopeError) as our_info:
            our_call()
        assert type(our_info.value).__name__ == type(smd_info.value).__name__, label
        assert isinstance(our_info.value, ts_ex.SMDebugError)


def test_exception_signatures_match_smdebug():
    import inspect

    import smdebug.exceptions as smd_ex

    names = [n for n, o in vars(smd_ex).items() if isinstance(o, type) and issubclass(o, Exception)]
    assert len(names) > 10
    for name in names:
        ours = getattr(ts_ex, name)
        theirs = getattr(smd_ex, name)
        assert issubclass(ours, ts_ex.TrainscopeError), name
        for builtin in (TypeError, ValueError, RuntimeError, NotImplementedError):
            assert issubclass(ours, builtin) == issubclass(theirs, builtin), (name, builtin)
        if "__init__" in vars(theirs):
            assert (str(inspect.signature(ours.__init__))
                    == str(inspect.signature(theirs.__init__))), name
    # Same messages for the same arguments.
    assert (str(ts_ex.StepUnavailable(3, modes.TRAIN))
            == str(smd_ex.StepUnavailable(3, SmdModes.TRAIN)))
    assert str(ts_ex.TensorUnavailable("x")) == str(smd_ex.TensorUnavailable("x"))
    assert str(ts_ex.NoMoreData(5, modes.EVAL, 4)) == str(smd_ex.NoMoreData(5, SmdModes.EVAL, 4))


def test_our_api_accepts_smdebug_modes(trial_dir):
    make_trial(trial_dir)
    ours = trainscope.create_trial(str(trial_dir))
    assert ours.steps(mode=SmdModes.TRAIN) == [0, 1, 2]
    assert float(ours.tensor("loss").value(0, mode=SmdModes.EVAL)) == pytest.approx(1 / 5)
