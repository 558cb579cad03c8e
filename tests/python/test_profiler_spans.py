"""The hook's framework spans from real CPU training runs: steps per mode with forward, backward,
optimizer, data-loader wait and user spans nested inside, written as smdebug's framework
timeline (framework/pevents, Chrome trace JSON) and read back by smdebug, by our readers and
by hook.get_profiler_data()."""

import pytest

from profiler_util import inside, raw_events, step_of, timeline_files, train

SLEEP_MS = 40
TRAIN_STEPS = 6


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prof") / "trial"
    summary = train(str(out), steps=TRAIN_STEPS, eval_steps=2, sleep_ms=SLEEP_MS)
    return out, summary


@pytest.fixture(scope="module")
def events(run):
    return raw_events(run[0])


def by_phase(events, phase):
    return [e for e in events if e["phase"] == phase]


def test_one_step_event_per_step_and_mode(events):
    train_steps = by_phase(events, "Step:ModeKeys.TRAIN")
    eval_steps = by_phase(events, "Step:ModeKeys.EVAL")
    assert [step_of(e) for e in train_steps] == list(range(TRAIN_STEPS))
    assert [step_of(e) for e in eval_steps] == [0, 1]
    assert all(e["name"] == "Step:ModeKeys.TRAIN" for e in train_steps)
    # global steps go on across modes
    assert [e["args"]["global_step"] for e in train_steps + eval_steps] == list(range(8))
    # steps do not overlap and follow one another
    steps = sorted(train_steps + eval_steps, key=lambda e: e["start_us"])
    for a, b in zip(steps, steps[1:]):
        assert a["start_us"] + a["dur_us"] <= b["start_us"]


def test_forward_backward_optimizer_nest_in_their_step(events):
    steps = {step_of(e): e for e in by_phase(events, "Step:ModeKeys.TRAIN")}
    for phase, name in (("Forward", "Sequential"), ("Backward(post-forward)", "Sequential"),
                        ("Optimizer", "SGD.step"), ("UserSpan", "loss")):
        spans = [e for e in by_phase(events, phase) if e["start_us"] < steps[TRAIN_STEPS - 1][
            "start_us"] + steps[TRAIN_STEPS - 1]["dur_us"]]
        assert [step_of(e) for e in spans] == list(range(TRAIN_STEPS)), phase
        for e in spans:
            assert e["name"] == name
            assert inside(e, steps[step_of(e)]), (phase, e, steps[step_of(e)])
    # order inside a step: forward, then the loss (user span), backward, optimizer
    for k in range(TRAIN_STEPS):
        f, u, b, o = (next(e for e in by_phase(events, p) if step_of(e) == k)
                      for p in ("Forward", "UserSpan", "Backward(post-forward)", "Optimizer"))
        assert f["start_us"] + f["dur_us"] <= u["start_us"] + 1
        assert u["start_us"] + u["dur_us"] <= b["start_us"] + 1
        assert b["start_us"] + b["dur_us"] <= o["start_us"] + 1
    # user span args come through
    assert by_phase(events, "UserSpan")[0]["args"]["kind"] == "cross-entropy"


def test_eval_steps_have_forward_but_no_backward(events):
    evals = by_phase(events, "Step:ModeKeys.EVAL")
    for s in evals:
        kinds = {e["phase"] for e in events if inside(e, s) and e is not s}
        assert "Forward" in kinds
        assert "Backward(post-forward)" not in kinds and "Optimizer" not in kinds


def test_dataloader_wait_is_the_sleep(events):
    steps = {step_of(e): e for e in by_phase(events, "Step:ModeKeys.TRAIN")}
    waits = [e for e in by_phase(events, "DataLoaderIter")]
    assert waits and all(e["name"] == "_SingleProcessDataLoaderIter::GetNext" for e in waits)
    # the wait for batch k+1 happens inside step k (a step runs boundary to boundary)
    last = steps[TRAIN_STEPS - 1]
    in_steps = [e for e in waits
                if steps[0]["start_us"] <= e["start_us"] < last["start_us"] + last["dur_us"]]
    assert [step_of(e) for e in in_steps] == list(range(TRAIN_STEPS - 1))
    for e in in_steps:
        assert inside(e, steps[step_of(e)])
    # each wait holds the collate function's sleep, and nothing of the training around it: it
    # begins after its step's optimizer step has ended (no wall-clock upper bound: a loaded
    # machine may stretch anything)
    for e in waits:
        assert e["dur_us"] >= 0.9 * SLEEP_MS * 1000, e
    optimizer = by_phase(events, "Optimizer")
    for e in in_steps:
        step = steps[step_of(e)]
        opts = [o for o in optimizer if inside(o, step)]
        assert opts, step
        assert all(o["start_us"] + o["dur_us"] <= e["start_us"] for o in opts), (e, opts)
    # iter(loader) appears once per loader (train and eval)
    assert [e["name"] for e in by_phase(events, "DataLoaderIterInitialize")] == [
        "_SingleProcessDataLoaderIter.__init__"] * 2


def test_files_are_smdebug_layout(run):
    trial, summary = run
    files = timeline_files(trial)
    assert files
    for f in files:
        base = f.rsplit("/", 1)[1]
        end_us, node, suffix = base.split("_", 2)
        assert end_us.isdigit() and node == summary["node_id"]
        assert suffix == "pythontimeline.json"


def test_smdebug_reader_sees_our_steps(run):
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader

    trial, _ = run
    reader = LocalAlgorithmMetricsReader(str(trial))
    events = reader.get_events(0, 2 ** 62)
    names = [e.event_name for e in events]
    assert names.count("Step:ModeKeys.TRAIN") == TRAIN_STEPS
    assert names.count("Step:ModeKeys.EVAL") == 2
    phases = {e.event_phase for e in events}
    assert {"Forward", "Backward(post-forward)", "Optimizer", "DataLoaderIter"} <= phases


def test_get_profiler_data_matches_the_files(run, events):
    _, summary = run
    spans = summary["spans"]
    # captured before close: everything but the last EVAL step, whose span ends at close
    from_files = sorted((e["phase"], e["name"], e["start_us"], e["dur_us"]) for e in events)
    captured = sorted((p, n, s, d) for p, n, s, d, _ in spans)
    assert set(captured) <= set(from_files)
    assert len(from_files) - len(captured) == 1
    assert summary["base_dir"].endswith("trial")
    # summary(): user spans under their own name ("loss"), the framework's under their phase
    # (issue 14: they were summed under "UserSpan").
    rows = summary["summary"]
    assert "UserSpan" not in rows
    assert rows["loss"]["count"] == sum(1 for p, n, *_ in spans if p == "UserSpan" and n == "loss")
    assert rows["loss"]["count"] >= TRAIN_STEPS
    assert rows["Forward"]["count"] == sum(1 for p, *_ in spans if p == "Forward")


def test_trial_framework_metrics_by_time_and_step(run, events):
    from trainscope.profiler import MetricsReader

    trial, _ = run
    reader = MetricsReader(trial)
    everything = reader.framework_metrics()
    assert len(everything) == len(events)
    steps = {step_of(e): e for e in by_phase(events, "Step:ModeKeys.TRAIN")}
    s2 = steps[2]
    window = reader.framework_metrics(s2["start_us"], s2["start_us"] + s2["dur_us"])
    assert {e.event_phase for e in window} >= {"Step:ModeKeys.TRAIN", "Forward", "Optimizer"}
    assert all(e.end_time > s2["start_us"] and e.start_time < s2["start_us"] + s2["dur_us"]
               for e in window)
    in_ms = reader.framework_metrics(s2["start_us"] / 1000, (s2["start_us"] + s2["dur_us"]) / 1000,
                                     unit="ms")
    assert len(in_ms) == len(window)
    by_step = reader.framework_metrics(start_step=2, end_step=4, phase="Step:ModeKeys.TRAIN")
    assert [e.step for e in by_step] == [2, 3]
    fwd = reader.framework_metrics(phase="Forward")
    assert fwd and all(e.event_phase == "Forward" for e in fwd)
    assert fwd[0].event_args["pid"] > 0
    with pytest.raises(ValueError):
        reader.framework_metrics(0, 1, start_step=0)


def _phased_and_not(out, **opts):
    """(steps whose phases were recorded, steps marked "phases": false, events) of a run."""
    train(str(out), eval_steps=0, **opts)
    events = raw_events(out)
    steps = by_phase(events, "Step:ModeKeys.TRAIN")
    dropped = [s for s in steps if s["args"].get("phases") is False]
    return [s for s in steps if "phases" not in s["args"]], dropped, events


def test_phase_min_interval_samples_short_steps(tmp_path):
    # Phases at most once an hour (PhaseMinIntervalInMilliseconds; `trainscope run` sets 50 ms):
    # every step is recorded, the phases of the first step only, whatever the machine's speed,
    # and each step says which (the share of a phase is of the steps that recorded it).
    interval_ms = 3_600_000
    phased, dropped, events = _phased_and_not(tmp_path / "t", steps=40, sleep_ms=2,
                                              phase_min_interval_ms=interval_ms)
    assert len(phased) + len(dropped) == 40
    assert step_of(phased[0]) == 0 and dropped, (len(phased), len(dropped))
    for a, b in zip(phased, phased[1:]):
        assert b["start_us"] - a["start_us"] >= interval_ms * 1000
    for phase in ("Forward", "Backward(post-forward)", "Optimizer"):
        spans = by_phase(events, phase)
        assert sorted(step_of(e) for e in spans) == [step_of(s) for s in phased], phase
        for e in spans:
            assert any(inside(e, s) for s in phased), (phase, e)
    # the data-loader wait is recorded in every step all the same
    assert len(by_phase(events, "DataLoaderIter")) >= 40


def test_phase_min_interval_keeps_every_longer_step(tmp_path):
    phased, dropped, events = _phased_and_not(tmp_path / "t", steps=5, sleep_ms=30,
                                              phase_min_interval_ms=25)
    assert not dropped and len(phased) == 5
    assert [step_of(e) for e in by_phase(events, "Forward")] == list(range(5))


def test_phase_callbacks_come_and_go_with_the_steps_that_record_phases(tmp_path):
    # 2 ms steps, phases at most every 5 ms: they turn on and off many times. The forward and
    # optimizer callbacks are attached only for the steps that record phases, and each of those
    # steps gets its Forward (from the start of its forward call: it starts at the boundary that
    # attached the callbacks), Backward and Optimizer spans; the other steps get none.
    phased, dropped, events = _phased_and_not(tmp_path / "t", steps=40, sleep_ms=2,
                                              phase_min_interval_ms=5)
    assert len(phased) + len(dropped) == 40
    assert len(phased) >= 4 and len(dropped) >= 8, (len(phased), len(dropped))
    switches = sum(1 for a, b in zip(sorted(phased + dropped, key=step_of),
                                     sorted(phased + dropped, key=step_of)[1:])
                   if ("phases" in a["args"]) != ("phases" in b["args"]))
    assert switches >= 6, switches
    for phase in ("Forward", "Backward(post-forward)", "Optimizer"):
        spans = by_phase(events, phase)
        assert sorted(step_of(e) for e in spans) == sorted(step_of(s) for s in phased), phase
        for e in spans:
            assert any(inside(e, s) for s in phased), (phase, e)


def test_the_steps_the_hook_saved_in_say_so(tmp_path, events):
    # The hook's default schedule saves step 0 of each mode (every 500th). With the weights and
    # gradients of a hidden layer of 2048 (200 KB) those step events carry "saved": true
    # (StepOutlier leaves them out: their extra time is the capture's). A step that saved only the
    # loss (the default collections), under the 64 KiB of Hook::kSavedStepBytes and copied in
    # microseconds, is judged like any other step: it is not marked.
    train(str(tmp_path / "wide"), steps=TRAIN_STEPS, eval_steps=2, sleep_ms=0, width=2048,
          include=["weights", "gradients", "losses"])
    wide = raw_events(tmp_path / "wide")
    for phase in ("Step:ModeKeys.TRAIN", "Step:ModeKeys.EVAL"):
        steps = by_phase(wide, phase)
        assert [step_of(e) for e in steps if e["args"].get("saved") is True] == [0], phase
        assert all("saved" not in e["args"] for e in steps if step_of(e) != 0), phase
        assert not [e for e in by_phase(events, phase) if "saved" in e["args"]], phase
