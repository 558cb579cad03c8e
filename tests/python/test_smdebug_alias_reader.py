"""smdebug's reader-side API where trainscope matches it: index entries without an event file,
LocalTrial(dirname=), CollectionManager, training_has_ended, FileWriter and the path rules. Each
is checked against the real smdebug (the oracle installed in the venv) where it can read the
same files."""

import json
import os

import numpy as np
import pytest

import trainscope
from trainscope import exceptions as ex
from trainscope.collection import CollectionManager
from trainscope.modes import ModeKeys, StepState
from trainscope.smdebug import constants as C
from trainscope.smdebug.files import FileWriter, IndexFileLocationUtils, TensorFileLocation
from trainscope.trials import LocalTrial, has_training_ended, training_has_ended

smdebug = pytest.importorskip("smdebug")


def _bookkeeping_trial(path, steps, end=True):
    """What smdebug's analysis tests write: a collections file, and index files whose entries
    name no event file (event_file_name "")."""
    cm = CollectionManager()
    cm.add("default")
    cm.export(str(path), C.DEFAULT_COLLECTIONS_FILE_NAME)
    for global_step, mode, mode_step in steps:
        index = IndexFileLocationUtils.get_index_key_for_step(str(path), global_step, "worker_0")
        os.makedirs(os.path.dirname(index), exist_ok=True)
        with open(index, "w") as f:
            json.dump({"meta": {"mode": mode, "mode_step": mode_step, "event_file_name": ""},
                       "tensor_payload": [{"tensorname": "gradients/dummy:0", "start_idx": 0,
                                           "length": 1}]}, f)
    if end:
        training_has_ended(str(path))
    return str(path)


def test_index_entries_without_event_file_count_for_steps(tmp_path):
    path = _bookkeeping_trial(tmp_path / "t", [(0, "TRAIN", 0), (1, "TRAIN", 1), (2, "EVAL", 0),
                                               (4, "TRAIN", 2)])
    trial = trainscope.create_trial(path, timeout=10)
    assert trial.steps() == [0, 1, 2, 4]
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2]
    assert trial.has_passed_step(2, ModeKeys.TRAIN) == StepState.AVAILABLE
    assert trial.has_passed_step(3) == StepState.UNAVAILABLE
    assert trial.tensor_names() == ["gradients/dummy:0"]
    with pytest.raises(ex.TensorUnavailableForStep):
        trial.tensor("gradients/dummy:0").value(1)

    # smdebug reads the same folder to the same steps.
    from smdebug.trials import create_trial as sm_create_trial

    sm = sm_create_trial(path)
    assert sm.steps() == trial.steps()
    assert sm.steps(mode=smdebug.modes.TRAIN) == trial.steps(mode=ModeKeys.TRAIN)
    assert sm.has_passed_step(3).name == trial.has_passed_step(3).name


def test_index_without_event_file_while_training_runs(tmp_path):
    path = _bookkeeping_trial(tmp_path / "t", [(0, "TRAIN", 0), (1, "TRAIN", 1)], end=False)
    trial = trainscope.create_trial(path, timeout=10)
    assert trial.has_passed_step(1) == StepState.AVAILABLE
    assert trial.has_passed_step(5) == StepState.NOT_YET_AVAILABLE
    assert not trial.loaded_all_steps


def test_local_trial_takes_smdebug_keywords(tmp_path):
    path = _bookkeeping_trial(tmp_path / "t", [(0, "TRAIN", 0)])
    t = LocalTrial(name="mytrial", dirname=path, range_steps=(0, 10), parallel=False, check=True,
                   index_mode=True, cache=True)
    assert (t.name, t.path, t.steps()) == ("mytrial", path, [0])
    t = LocalTrial("positional", path)
    assert t.steps() == [0]
    with pytest.raises(TypeError, match="dirname"):
        LocalTrial(name="x")


def test_file_writer_trial_reads_back_in_trainscope_and_smdebug(tmp_path):
    path = str(tmp_path / "fw")
    for step in (0, 1, 2):
        with FileWriter(trial_dir=path, step=step, worker="worker_0") as fw:
            for i in range(3):
                fw.write_tensor(tdata=np.full((2, 3), step + i, dtype=np.float32), tname=f"foo_{i}",
                                mode=ModeKeys.TRAIN if step < 2 else ModeKeys.EVAL,
                                mode_step=step if step < 2 else 0)
            assert fw.name() == os.path.join(path, "events", f"{step:012d}",
                                             f"{step:012d}_worker_0.tfevents")
    assert os.path.exists(fw.name())
    assert not has_training_ended(path)
    cm = CollectionManager()
    cm.add("default")
    cm.get("default").tensor_names = [f"foo_{i}" for i in range(3)]
    cm.export(path, C.DEFAULT_COLLECTIONS_FILE_NAME)
    training_has_ended(path)
    assert has_training_ended(path)

    trial = trainscope.create_trial(path, timeout=10)
    assert trial.steps() == [0, 1, 2]
    assert trial.steps(mode=ModeKeys.EVAL) == [0]
    assert trial.tensor_names(collection="default") == ["foo_0", "foo_1", "foo_2"]
    np.testing.assert_array_equal(trial.tensor("foo_2").value(1), np.full((2, 3), 3.0))

    from smdebug.trials import create_trial as sm_create_trial

    sm = sm_create_trial(path)
    assert sm.steps() == [0, 1, 2]
    assert sorted(sm.tensor_names(collection="default")) == ["foo_0", "foo_1", "foo_2"]
    np.testing.assert_array_equal(sm.tensor("foo_2").value(1), np.full((2, 3), 3.0))


def test_collection_manager_file_round_trip_and_smdebug_reads_it(tmp_path):
    cm = CollectionManager()
    cm.add("weights")
    cm.get("weights").include("weight$")
    cm.get("default").tensor_names = ["a", "b"]  # get() creates
    cm.set_num_workers(2)
    cm.export(str(tmp_path), "worker_1_collections.json")
    path = tmp_path / "collections" / "000000000" / "worker_1_collections.json"
    back = CollectionManager.load(str(path))
    assert back == cm and back.get_num_workers() == 2
    with pytest.raises(ex.SMDebugValueError, match="only the keys"):
        CollectionManager.load_from_string('{"collections": {}, "extra": 1}')

    from smdebug.core.collection_manager import CollectionManager as SmCM

    sm = SmCM.load(str(path))
    assert sorted(sm.get_collections()) == ["default", "weights"]
    assert sm.get("weights").include_regex == ["weight$"]
    assert sm.get_num_workers() == 2


def test_path_rules_match_smdebug():
    from smdebug.core.locations import IndexFileLocationUtils as SmIndex
    from smdebug.core.locations import TensorFileLocation as SmTensorFile

    for step in (0, 7, 999, 1000, 123456):
        assert IndexFileLocationUtils.get_index_key_for_step("/t", step, "worker_3") == \
            SmIndex.get_index_key_for_step("/t", step, "worker_3")
        assert TensorFileLocation(step, "worker_0").get_file_location("/t") == \
            SmTensorFile(step, "worker_0").get_file_location("/t")
        key = SmIndex.get_index_key_for_step("/t", step, "worker_0")
        assert IndexFileLocationUtils.get_step_from_idx_filename(key) == step
        assert IndexFileLocationUtils.get_prefix_from_index_file(key) == \
            SmIndex.get_prefix_from_index_file(key)


def test_trial_collections_persist_and_last_index_token(tmp_path):
    path = str(tmp_path / "t")
    for step, worker in ((0, "worker_0"), (0, "worker_1"), (1, "worker_0"), (1, "worker_1"),
                         (2, "worker_0")):
        with FileWriter(trial_dir=path, step=step, worker=worker) as fw:
            for name in ("foo_0", "foo_1", "boo_0"):
                fw.write_tensor(tdata=np.ones(2, dtype=np.float32), tname=name)
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(2)
    for worker in ("worker_0", "worker_1"):
        cm.export(path, f"{worker}_collections.json")
    trial = trainscope.create_trial(path, timeout=10)
    # smdebug's pattern: change the trial's collection, then query by it.
    trial.collection("test").include("foo")
    trial.collection("test").add_tensor_name("boo_0")
    assert trial.tensor_names(collection="test") == ["boo_0", "foo_0", "foo_1"]
    assert trial.collection("test") is trial.collections()["test"]
    # The last complete step is 1 (worker_1 has not written 2); smdebug's token names the
    # index file of that step of the last worker.
    assert trial.last_complete_step == 1
    assert trial.last_index_token == os.path.join(path, "index", "000000000",
                                                  "000000000001_worker_1.json")
    assert os.path.exists(trial.last_index_token)
