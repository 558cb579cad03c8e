"""compute_stats / reduction / histogram against numpy, TensorBoardWriter read back by
TensorBoard's own reader, crc32c against the standard check value."""

import math

import numpy as np
import pytest

from trainscope import _core, modes


def test_compute_stats_matches_numpy():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((31, 17)).astype(np.float32)
    x[0, :3] = [0.0, -0.0, 0.0]
    s = _core.compute_stats(x)
    d = x.astype(np.float64).ravel()
    want = {
        "min": d.min(), "max": d.max(), "mean": d.mean(), "std": d.std(), "variance": d.var(),
        "sum": d.sum(), "l1": np.abs(d).sum(), "l2": math.sqrt((d * d).sum()),
        "abs_min": np.abs(d).min(), "abs_max": np.abs(d).max(), "abs_mean": np.abs(d).mean(),
        "nan_count": 0, "inf_count": 0, "zero_fraction": 3 / d.size,
    }
    for k, v in want.items():
        assert s[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
    assert s["count"] == d.size
    assert set(_core.reduction_names()) <= set(s)
    assert _core.reduction(x, "abs_mean") == pytest.approx(np.abs(d).mean(), rel=1e-12)
    assert _core.reduction(x, "mean", abs=True) == pytest.approx(np.abs(d).mean(), rel=1e-12)
    assert _core.reduction(x, "l2_norm") == pytest.approx(math.sqrt((d * d).sum()), rel=1e-12)
    with pytest.raises(ValueError):
        _core.reduction(x, "median")


def test_stats_of_torch_bf16_and_strided():
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.bfloat16).reshape(4, 6).t()[::2]
    s = _core.compute_stats(t)
    ref = t.float().numpy().astype(np.float64)
    assert s["sum"] == ref.sum() and s["max"] == ref.max() and s["count"] == ref.size


def test_nan_and_empty_follow_the_definitions():
    s = _core.compute_stats(np.array([1.0, np.nan, np.inf]))
    assert math.isnan(s["mean"]) and s["nan_count"] == 1 and s["inf_count"] == 1
    e = _core.compute_stats(np.zeros(0, np.float32))
    assert math.isnan(e["min"]) and e["sum"] == 0 and e["prod"] == 1 and e["count"] == 0


def test_histogram():
    x = np.array([0.0, 1.0, 1.0, 2.0, 3.0, np.nan, np.inf])
    h = _core.histogram(x, bins=3)
    assert len(h["edges"]) == 4 and len(h["counts"]) == 3
    assert h["edges"][0] == 0.0 and h["edges"][-1] == 3.0
    assert h["counts"].sum() == 5 and h["num"] == 5  # NaN and inf not counted
    assert h["sum"] == 7.0 and h["sum_squares"] == 15.0
    assert h["min"] == 0.0 and h["max"] == 3.0


def test_crc32c():
    assert _core.crc32c(b"123456789") == 0xE3069283
    assert _core.crc32c(b"6789", _core.crc32c(b"12345")) == 0xE3069283
    assert _core.crc32c(bytearray(b"")) == 0
    assert _core.crc32c(memoryview(b"123456789")) == 0xE3069283
    assert _core.masked_crc32c(b"0x12345678") == 0x062DC0B3  # smdebug's magic footer


def test_tensorboard_writer_is_readable_by_tensorboard(tmp_path):
    loader = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader")
    from tensorboard.compat.proto import event_pb2

    tb_dir = tmp_path / "tensorboard"
    w = _core.TensorBoardWriter(str(tb_dir))
    for step in range(3):
        w.add_scalar(modes.TRAIN, "loss value!", step, 1.0 / (step + 1))
    w.add_scalar(modes.EVAL, "acc", 7, 0.5)
    w.add_histogram(modes.TRAIN, "weights/w", 2, np.arange(10, dtype=np.float32), bins=5)
    w.add_histogram(modes.TRAIN, "weights/h", 3, _core.histogram(np.ones(4), bins=2))
    w.flush()
    train_file = w.file_path(modes.TRAIN)
    w.close()
    assert train_file.startswith(str(tb_dir / "TRAIN"))

    def events(path):
        return [event_pb2.Event.FromString(r) for r in loader.RawEventFileLoader(path).Load()]

    train = events(train_file)
    assert train[0].file_version.startswith("brain.Event")
    scalars, histos = {}, {}
    for ev in train[1:]:
        for v in ev.summary.value:
            if v.HasField("histo"):
                histos[(v.tag, ev.step)] = v.histo
            else:
                scalars[(v.tag, ev.step)] = v.simple_value
    assert scalars == {("loss_value_", s): pytest.approx(1.0 / (s + 1)) for s in range(3)}
    h = histos[("weights/w", 2)]
    assert h.num == 10 and h.min == 0 and h.max == 9 and sum(h.bucket) == 10
    assert histos[("weights/h", 3)].num == 4
    (eval_file,) = (tb_dir / "EVAL").iterdir()
    eval_events = events(str(eval_file))[1:]
    assert [(v.tag, v.simple_value) for ev in eval_events for v in ev.summary.value] == [
        ("acc", 0.5)
    ]
