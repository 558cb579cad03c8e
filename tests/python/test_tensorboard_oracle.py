"""Checks TensorBoard files written by trainscope's C++ TensorBoardWriter with TensorBoard's own
readers (EventFileLoader verifies nothing; EventAccumulator is what the TensorBoard UI uses)."""

import numpy as np
import pytest

from sample_trial import STEPS, expected, write_sample

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import (  # noqa: E402
    RawEventFileLoader)
from tensorboard.compat.proto import event_pb2  # noqa: E402


@pytest.fixture(scope="module")
def tb_dir(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("tb") / "trial") / "tensorboard"


def steps_of(mode):
    return [s for s, m, _ in STEPS if m == mode]


def test_file_starts_with_file_version_and_crcs_verify(tb_dir):
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
    for mode in ("TRAIN", "EVAL"):
        (path,) = (tb_dir / mode).glob("events.out.tfevents.*")
        records = list(RawEventFileLoader(str(path)).Load())
        first = event_pb2.Event.FromString(records[0])
        assert first.file_version == "brain.Event:2"
        # The stub reader checks the length CRC; check the payload CRCs here too.
        data = path.read_bytes()
        off = 0
        for rec in records:
            n = int.from_bytes(data[off:off + 8], "little")
            assert data[off + 12:off + 12 + n] == rec
            footer = int.from_bytes(data[off + 12 + n:off + 16 + n], "little")
            assert footer == masked_crc32c(rec)
            off += n + 16
        assert off == len(data)


def test_event_accumulator_reads_scalars_and_histograms(tb_dir):
    for mode in ("TRAIN", "EVAL"):
        acc = EventAccumulator(str(tb_dir / mode), size_guidance={"scalars": 0, "histograms": 0})
        acc.Reload()
        tags = acc.Tags()
        assert tags["scalars"] == ["loss"]
        assert tags["histograms"] == ["histograms/t_float32"]
        scalars = acc.Scalars("loss")
        assert [e.step for e in scalars] == steps_of(mode)
        for e in scalars:
            assert e.value == pytest.approx(1.0 / (e.step + 1), rel=1e-6)
        for h in acc.Histograms("histograms/t_float32"):
            values = expected("float32", h.step).astype(np.float64).ravel()
            hv = h.histogram_value
            assert hv.min == values.min() and hv.max == values.max()
            assert hv.num == values.size
            assert hv.sum == pytest.approx(values.sum())
            assert hv.sum_squares == pytest.approx(values.dot(values))
            counts, edges = np.histogram(values, bins=8)
            np.testing.assert_allclose(hv.bucket_limit, edges)
            assert list(hv.bucket) == [0.0] + counts.astype(float).tolist()
