"""smdebug's exception classes come from the Status's structured detail (ErrorDetail, carried by
the bindings as the _core error's `detail` and fields), never from the text of its message."""

import json
import os
import pathlib

import numpy as np
import pytest
from conftest import write_trial

import trainscope
from trainscope import _core
from trainscope import exceptions as ex
from trainscope.modes import ModeKeys


@pytest.fixture(autouse=True)
def _no_end_delay(monkeypatch):
    monkeypatch.setenv("SMDEBUG_TRAINING_END_DELAY_REFRESH", "0")


def two_steps(path):
    """w at global steps 0 (TRAIN 0) and 2 (TRAIN 1); b at step 2 only."""
    w = np.arange(6, dtype=np.float32)
    write_trial(path, [(0, 1, 0, {"w": w}), (2, 1, 1, {"w": w + 1, "b": np.float32(3)})])
    return trainscope.create_trial(str(path))


def test_core_errors_carry_the_detail_and_its_fields(trial_dir):
    trial = two_steps(trial_dir)
    with pytest.raises(_core.NotFoundError) as info:
        trial._core.value("b", 0, ModeKeys.GLOBAL.value, "")
    err = info.value
    assert err.detail == "TensorUnavailableForStep"
    assert (err.tensor, err.step, err.mode, err.has_reductions) == ("b", 0, 4, False)
    with pytest.raises(_core.NotFoundError) as info:
        trial._core.value("nope", 0, ModeKeys.GLOBAL.value, "")
    assert (info.value.detail, info.value.tensor) == ("TensorUnavailable", "nope")
    # A failure smdebug has no class for has no detail.
    with pytest.raises(_core.InvalidArgumentError) as info:
        trial._core.tensor_names(ModeKeys.GLOBAL.value, None, "w", "all")
    assert info.value.detail is None


def test_exception_fields_come_from_the_query(trial_dir):
    trial = two_steps(trial_dir)
    with pytest.raises(ex.TensorUnavailableForStep) as info:
        trial.tensor("b").value(0, mode=ModeKeys.TRAIN)
    assert (info.value.tname, info.value.step, info.value.mode) == ("b", 0, ModeKeys.TRAIN)
    assert info.value.has_reductions is False
    with pytest.raises(ex.StepUnavailable) as info:
        trial.tensor("w").value(1)
    assert (info.value.step, info.value.mode) == (1, ModeKeys.GLOBAL)
    with pytest.raises(ex.InvalidWorker) as info:
        trial.tensor("w").value(0, worker="worker_9")
    assert info.value.worker == "worker_9"


def test_a_message_that_looks_like_a_detail_does_not_choose_the_class(trial_dir):
    """A damaged event file whose name (from the index) starts like an smdebug class: the error
    is a corruption, whatever its message starts with (the old prefix parsing raised
    StepUnavailable here)."""
    two_steps(trial_dir)
    index_files = sorted(pathlib.Path(trial_dir, "index").rglob("*.json"))
    first = index_files[0]
    doc = json.loads(first.read_text())
    event_file = pathlib.Path(trial_dir, doc["meta"]["event_file_name"])
    fake = "StepUnavailable: moved.tfevents"
    data = event_file.read_bytes()
    pathlib.Path(trial_dir, fake).write_bytes(data[: len(data) // 2])  # truncated
    doc["meta"]["event_file_name"] = fake
    first.write_text(json.dumps(doc))
    trial = trainscope.create_trial(str(trial_dir))
    with pytest.raises(_core.CorruptionError) as info:
        trial._core.value("w", 0, ModeKeys.GLOBAL.value, "")
    assert info.value.message.startswith("StepUnavailable: ")  # the message is as it was
    assert info.value.detail is None
    with pytest.raises(ex.TrialCorruptionError):
        trial.tensor("w").value(0)


def test_a_message_that_mentions_has_reductions_does_not_set_it(tmp_path):
    """The message names the trial folder; a folder named like the old marker no longer turns
    has_reductions on."""
    trial = two_steps(tmp_path / "run (has_reductions=true)")
    with pytest.raises(ex.TensorUnavailableForStep) as info:
        trial.tensor("b").value(0)
    assert "has_reductions=true" in str(info.value.__cause__)
    assert info.value.has_reductions is False


def test_missing_collection_files_from_the_detail(trial_dir):
    os.makedirs(trial_dir)
    pathlib.Path(trial_dir, "training_job_end.ts").write_text("")
    with pytest.raises(ex.MissingCollectionFiles) as info:
        trainscope.create_trial(str(trial_dir))
    assert info.value.__cause__.detail == "MissingCollectionFiles"
