"""smdebug's hook members that scripts and smdebug's own tests call, on a real CPU training:
record_trace_events (events the script timed itself, in the framework timeline),
_get_worker_name and _cleanup; and save_scalar's timestamp and save_tensor before the first
step, read back through smdebug's FileReader (trainscope.smdebug.files) and the trial."""

import glob
import os
import time

import pytest
import torch
import torch.nn as nn

import trainscope.pytorch as ts
from profiler_util import raw_events
from trainscope import create_trial
from trainscope.exceptions import SMDebugNotImplementedError, SMDebugTypeError
from trainscope.profiler import ProfilerConfig
from trainscope.smdebug.files import FileReader


def _train(hook, steps=3):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.rand(5, 4)).sum().backward()
        opt.step()


def test_record_trace_events_in_the_timeline(tmp_path):
    out = tmp_path / "trial"
    hook = ts.Hook(out_dir=str(out), profiler_config=ProfilerConfig(start_system_monitor=False))
    t0 = time.time()
    hook.record_trace_events(training_phase="Training", op_name="EpochStart", phase="B",
                             timestamp=t0, epoch=0)
    _train(hook)
    # a complete event of 0.25 s, an "E" without a "B", an instant, and a "B" never closed
    hook.record_trace_events(t0 + 1, training_phase="Eval", op_name="Validate", duration=0.25,
                             rank=3)
    hook.record_trace_events(training_phase="Training", op_name="EpochEnd", phase="E",
                             timestamp=t0 + 2, duration=2.0, epoch=0, loss=0.5)
    hook.record_trace_events(t0 + 3, training_phase="Other", op_name="Lonely", phase="E",
                             duration=0.5)
    hook.record_trace_events(t0 + 4, training_phase="Marks", op_name="Checkpoint", phase="i")
    hook.record_trace_events(t0 + 5, training_phase="Open", op_name="NeverClosed", phase="B")
    assert hook._get_worker_name() == "worker_0"
    hook._cleanup()
    hook._cleanup()  # idempotent, as close()
    hook.record_trace_events(t0 + 6, training_phase="Late", op_name="AfterClose")  # a no-op

    got = {e["name"]: e for e in raw_events(out)
           if e["phase"] in ("Training", "Eval", "Other", "Marks", "Open", "Late")}
    us = int(t0 * 1e6)
    # B ... E on one row is one complete event named after the B, with the args of both
    epoch = got["EpochStart"]
    assert (epoch["phase"], epoch["ph"]) == ("Training", "X")
    assert abs(epoch["start_us"] - us) <= 1 and abs(epoch["dur_us"] - 2_000_000) <= 1
    assert epoch["args"]["epoch"] == 0 and epoch["args"]["loss"] == 0.5
    assert "EpochEnd" not in got
    val = got["Validate"]
    assert (val["phase"], val["ph"]) == ("Eval", "X") and val["args"]["rank"] == 3
    assert abs(val["start_us"] - (us + 1_000_000)) <= 1 and abs(val["dur_us"] - 250_000) <= 1
    lonely = got["Lonely"]  # an E alone ends at its timestamp, `duration` long
    assert abs(lonely["start_us"] - (us + 2_500_000)) <= 1
    assert abs(lonely["dur_us"] - 500_000) <= 1
    assert got["Checkpoint"]["ph"] == "i"
    assert got["NeverClosed"]["ph"] == "i"  # kept at close, not lost
    assert "AfterClose" not in got


def test_record_trace_events_without_profiler_writes_nothing(tmp_path):
    out = tmp_path / "trial"
    hook = ts.Hook(out_dir=str(out), save_config=ts.SaveConfig(save_interval=1),
                   include_collections=["weights"])
    hook.record_trace_events(time.time(), training_phase="Training", op_name="X")
    _train(hook, steps=1)
    hook._cleanup()
    assert not os.path.exists(out / "framework")
    assert create_trial(str(out)).steps() == [0]


def test_save_scalar_timestamp_and_early_custom_tensors(tmp_path):
    out = tmp_path / "trial"
    hook = ts.Hook(out_dir=str(out), save_config=ts.SaveConfig(save_steps=[0, 2]),
                   include_collections=["weights"], export_tensorboard=True)
    when = 1_600_000_000.25
    hook.save_scalar("before", 7, timestamp=when)
    hook.save_tensor("early", torch.tensor([[1.0, -1.0]]))
    hook.save_tensor("early", torch.tensor([[2.0, -2.0]]))  # the last value before step 0 wins
    with pytest.raises(SMDebugTypeError, match="timestamp"):
        hook.save_scalar("bad", 1, timestamp="yesterday")
    _train(hook)
    hook.close()

    trial = create_trial(str(out))
    assert trial.tensor_names(collection="default") == ["early"]
    assert trial.tensor("early").steps() == [0]
    assert trial.tensor("early").value(0).tolist() == [[2.0, -2.0]]
    assert trial.tensor("scalar/before").steps() == [0]

    files = sorted(glob.glob(str(out / "events" / "*" / "*.tfevents")))
    events = [e for f in files for e in FileReader(f).read_events(regex_list=["^scalar/"])]
    assert [(e["name"], e["step"], e["timestamp"], e["value"].tolist()) for e in events] == [
        ("scalar/before", 0, when, [7.0])]
    tensors = list(FileReader(files[0]).read_tensors())
    names = {name for name, *_ in tensors}
    assert {"early", "scalar/before", "Sequential_0.weight"} <= names
    name, step, value, mode, mode_step = next(t for t in tensors if t[0] == "early")
    assert (step, value.tolist(), mode, mode_step) == (0, [[2.0, -2.0]], ts.modes.GLOBAL, 0)
    # the TensorBoard scalar carries the same wall time
    tb = glob.glob(str(out / "tensorboard" / "**" / "*tfevents*"), recursive=True)
    tb_scalars = [e for f in tb for e in FileReader(f).read_events(regex_list=["before"])]
    assert [e["timestamp"] for e in tb_scalars] == [when]


def test_file_reader_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no event file"):
        FileReader(str(tmp_path / "missing.tfevents")).read_events()
    bad = tmp_path / "bad.tfevents"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00garbage-garbage-garbage")
    from trainscope import _core
    with pytest.raises(_core.CorruptionError, match="bad.tfevents"):
        FileReader(str(bad)).read_events()
    with pytest.raises(SMDebugNotImplementedError, match="tfevent"):
        FileReader(str(bad), wtype="json")


def test_file_reader_reads_what_smdebugs_reads(tmp_path):
    """The oracle: smdebug's own FileReader over the same files gives the same events."""
    real = pytest.importorskip("smdebug.core.reader")
    out = tmp_path / "trial"
    hook = ts.Hook(out_dir=str(out), save_config=ts.SaveConfig(save_interval=2),
                   include_collections=["weights", "gradients"])
    hook.save_scalar("lr", 0.5, timestamp=1_700_000_000.5)
    _train(hook, steps=4)
    hook.save_scalar("after", 3)
    hook.close()
    files = sorted(glob.glob(str(out / "events" / "*" / "*.tfevents")))
    assert len(files) == 3  # steps 0 and 2, and step 3 for the scalar saved after it
    for f in files:
        ours = FileReader(f).read_events()
        theirs = real.FileReader(f).read_events()
        assert [(e["name"], e["step"], e["timestamp"]) for e in ours] == [
            (e["name"], e["step"], e["timestamp"]) for e in theirs]
        for a, b in zip(ours, theirs):
            assert a["value"].dtype == b["value"].dtype and (a["value"] == b["value"]).all()
        assert ([(n, s, m.name, ms) for n, s, _, m, ms in FileReader(f).read_tensors()] ==
                [(n, s, m.name, ms) for n, s, _, m, ms in real.FileReader(f).read_tensors()])


def test_out_dir_check_and_temp_path(tmp_path, monkeypatch):
    from trainscope.exceptions import SMDebugRuntimeError
    from trainscope.smdebug.helpers import get_temp_path, verify_and_get_out_dir

    monkeypatch.setenv("HOME", str(tmp_path))
    assert verify_and_get_out_dir("~/run") == str(tmp_path / "run")
    out = tmp_path / "done"
    hook = ts.Hook(out_dir=str(out), include_collections=["weights"])
    _train(hook, steps=1)
    hook.close()  # a finished trial: the hook and verify_and_get_out_dir refuse it alike
    with pytest.raises(SMDebugRuntimeError, match="already holds a finished trial"):
        verify_and_get_out_dir(str(out))
    with pytest.raises(Exception, match="already holds a finished trial"):
        ts.Hook(out_dir=str(out))
    assert get_temp_path("/a/b.json") == "/a/b.json.tmp"


def test_timeline_file_writer(tmp_path, monkeypatch):
    """smdebug's TimelineFileWriter: events timed by the caller, in the configured LocalPath."""
    from trainscope.profiler.config import ProfilerConfigParser
    from trainscope.profiler.trace_events import TimelineFileWriter

    out = tmp_path / "prof"
    cfg = tmp_path / "profiler.json"
    cfg.write_text('{"ProfilingParameters": {"ProfilerEnabled": true, "LocalPath": "%s"}}' % out)
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(cfg))
    w = TimelineFileWriter(profiler_config_parser=ProfilerConfigParser())
    t0 = 1_700_000_000.0
    for i in range(3):
        w.write_trace_events(training_phase="Epochs", op_name=f"epoch{i}", phase="B",
                             timestamp=t0 + i, step_num=i)
        w.write_trace_events(training_phase="Epochs", op_name=f"end{i}", phase="E",
                             timestamp=t0 + i + 0.5)
    w.write_trace_events(t0 + 10, training_phase="Eval", op_name="val", duration=2)
    w.flush()
    w.close()
    got = [(e["phase"], e["name"], e["start_us"], e["dur_us"], e["args"].get("step_num"))
           for e in raw_events(out) if e["phase"] in ("Epochs", "Eval")]
    us = int(t0 * 1e6)
    assert got == [("Epochs", f"epoch{i}", us + i * 1_000_000, 500_000, i) for i in range(3)] + [
        ("Eval", "val", us + 10_000_000, 2_000_000, None)]

    cfg.write_text('{"ProfilingParameters": {"ProfilerEnabled": false, "LocalPath": "%s"}}'
                   % (tmp_path / "off"))
    off = TimelineFileWriter(profiler_config_parser=ProfilerConfigParser())
    off.write_trace_events(t0, training_phase="Epochs", op_name="x")
    off.close()
    assert not (tmp_path / "off").exists()


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def test_prepared_collections(tmp_path):
    """smdebug's flag: False until the first step judges the collections to save, True after;
    set to False, the next step judges them again, with the collections defined since."""
    out = tmp_path / "trial"
    hook = ts.Hook(out_dir=str(out), include_collections=["relu_act", "late"],
                   save_config=ts.SaveConfig(save_interval=1))
    assert hook.prepared_collections is False
    hook.get_collection("relu_act").include("relu")  # defined after the hook, as smdebug's docs
    model = _Net()
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        opt.zero_grad()
        model(torch.rand(5, 4)).sum().backward()
        opt.step()

    step()  # "late" is still undefined: skipped, with a warning
    assert hook.prepared_collections is True
    step()
    hook.get_collection("late").include("fc2")
    hook.prepared_collections = False
    step()
    step()
    assert hook.prepared_collections is True
    hook.close()
    trial = create_trial(str(out))
    relu = {n: trial.tensor(n).steps() for n in trial.tensor_names(collection="relu_act")}
    late = {n: trial.tensor(n).steps() for n in trial.tensor_names(collection="late")}
    assert relu and all(s == [0, 1, 2, 3] for s in relu.values())
    assert late and all("fc2" in n and s == [2, 3] for n, s in late.items())


def test_prepare_collections_as_smdebug_code_does(tmp_path):
    """smdebug's idiom (its hook, and framework forks that read the hook):
    `if not hook.prepared_collections: hook._prepare_collections()`, then set the flag."""
    hook = ts.Hook(out_dir=str(tmp_path / "trial"))
    if not hook.prepared_collections:
        hook._prepare_collections()
        hook.prepared_collections = True
    assert hook.prepared_collections is True
    assert hook.has_default_hook_configuration()
    _train(hook, steps=1)
    hook.close()
    other = ts.Hook(out_dir=str(tmp_path / "other"), include_collections=["weights"])
    other.prepared_collections = True  # judges them now
    assert other.prepared_collections and not other.has_default_hook_configuration()
    other.close()
