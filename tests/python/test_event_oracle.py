"""Checks trials written by trainscope's C++ writer with smdebug's own protobuf classes, record
reader and trial reader (the oracle for the wire format and the index JSON)."""

import json
import struct

import numpy as np
import pytest

from sample_trial import (NUMERIC, SHAPE, STEPS, decode_content, expected, strings,
                          write_sample)

pb = pytest.importorskip("smdebug.core.tfevent.proto.event_pb2")
from smdebug.core.tfevent.event_file_reader import EventFileReader, get_tensor_data  # noqa: E402
from smdebug.core.tfrecord._crc32c import crc32c  # noqa: E402
from smdebug.core.tfrecord.record_reader import masked_crc32c  # noqa: E402

MAGIC_FOOTER = 0x062DC0B3


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    return write_sample(tmp_path_factory.mktemp("oracle") / "trial")


def index_of(trial, step):
    path = trial / "index" / "000000000" / ("%012d_worker_0.json" % step)
    return json.loads(path.read_text(encoding="utf-8"))


def test_index_files_follow_smdebug_layout(trial):
    for step, mode, mode_step in STEPS:
        idx = index_of(trial, step)
        assert list(idx) == ["meta", "tensor_payload", "shape_payload"]
        assert idx["meta"] == {"mode": mode, "mode_step": mode_step,
                               "event_file_name": "events/%012d/%012d_worker_0.tfevents"
                               % (step, step)}
        assert idx["shape_payload"] == [{"tensorname": "shape_only",
                                         "originalname": "shape_only", "shape": [5, 6]}]
        names = [e["tensorname"] for e in idx["tensor_payload"]]
        assert sorted(names) == sorted(["t_" + d for d in NUMERIC] +
                                       ["scalar", "empty", "names",
                                        "smdebug/reductions/mean/t_float32"])


def test_every_record_parses_with_smdebug_protobuf(trial):
    for step, mode, mode_step in STEPS:
        idx = index_of(trial, step)
        data = (trial / idx["meta"]["event_file_name"]).read_bytes()
        end = 0
        for entry in idx["tensor_payload"]:
            start, length = entry["start_idx"], entry["length"]
            assert start == end  # back to back, nothing else in the file
            end = start + length
            rec = data[start:end]
            (n,) = struct.unpack("<Q", rec[:8])
            assert n + 16 == length
            assert struct.unpack("<I", rec[8:12])[0] == masked_crc32c(rec[:8])
            payload = rec[12:12 + n]
            assert struct.unpack("<I", rec[12 + n:])[0] == MAGIC_FOOTER
            assert entry["crc32c"] == crc32c(payload)

            ev = pb.Event()
            ev.ParseFromString(payload)
            assert ev.step == step
            assert ev.wall_time > 1.5e9
            assert len(ev.summary.value) == 1
            v = ev.summary.value[0]
            assert v.tag == entry["tensorname"]
            assert v.WhichOneof("value") == "tensor"
            plugins = {p.plugin_name: p.content for p in v.metadata.plugin_data}
            assert plugins == {"mode_step": str(mode_step),
                               "mode": {"TRAIN": "1", "EVAL": "2"}[mode]}
            t = v.tensor
            shape = tuple(d.size for d in t.tensor_shape.dim)
            name = v.tag
            if name == "names":
                assert t.dtype == 0 and shape == (3,)
                assert [s.decode("utf-8") for s in t.string_val] == strings()
            elif name == "empty":
                assert shape == (0, 3) and t.tensor_content == b""
            elif name == "scalar":
                assert shape == ()
                np.testing.assert_array_equal(decode_content(t.dtype, t.tensor_content, shape),
                                              expected("float32", step, ()))
            elif name.startswith("smdebug/reductions/mean/"):
                got = decode_content(t.dtype, t.tensor_content, shape)
                assert got == pytest.approx(expected("float32", step).mean())
            else:
                dtype = name[2:]
                assert shape == SHAPE
                got = decode_content(t.dtype, t.tensor_content, shape)
                np.testing.assert_array_equal(got, expected(dtype, step))
        assert end == len(data)


def test_smdebug_record_reader_accepts_our_files(trial):
    """smdebug's EventFileReader (length CRC + magic footer check) reads every record, and its
    get_tensor_data decodes every dtype it supports."""
    readable = {"float16", "float32", "float64", "int32", "int64", "uint8", "bool", "complex128"}
    for step, mode, mode_step in STEPS:
        path = trial / ("events/%012d/%012d_worker_0.tfevents" % (step, step))
        reader = EventFileReader(str(path))
        seen = 0
        for ev in reader.read_events(check="minimal"):
            seen += 1
            v = ev.summary.value[0]
            got_mode, got_mode_step = reader._get_mode_modestep(ev.step, v.metadata.plugin_data)
            assert (got_mode.name, got_mode_step) == (mode, mode_step)
            if v.tag.startswith("t_") and v.tag[2:] in readable:
                np.testing.assert_array_equal(get_tensor_data(v.tensor), expected(v.tag[2:], step))
            if v.tag == "names":
                assert list(get_tensor_data(v.tensor)) == strings()
        assert seen == len(NUMERIC) + 4


def test_smdebug_trial_reads_our_trial(trial, monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")
    from smdebug.core.modes import ModeKeys
    from smdebug.trials import create_trial

    tr = create_trial(str(trial))
    assert tr.steps() == [0, 2, 4, 6]
    assert tr.steps(mode=ModeKeys.TRAIN) == [0, 1, 2]
    assert tr.steps(mode=ModeKeys.EVAL) == [0]
    assert tr.workers() == ["worker_0"]
    for dtype in ["float16", "float32", "float64", "int32", "int64", "uint8", "bool",
                  "complex128"]:
        for step, _, _ in STEPS:
            np.testing.assert_array_equal(tr.tensor("t_" + dtype).value(step),
                                          expected(dtype, step))
    np.testing.assert_array_equal(tr.tensor("t_float32").value(1, mode=ModeKeys.TRAIN),
                                  expected("float32", 2))
    assert list(tr.tensor("names").value(6)) == strings()
    assert float(tr.tensor("scalar").value(4)) == float(expected("float32", 4, ()))
    assert tr.tensor("t_float32").reduction_value(2, "mean") == pytest.approx(
        expected("float32", 2).mean())
    assert tr.has_passed_step(6)
