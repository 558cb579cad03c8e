"""smdebug's Python-profile analysis (cProfileAnalysis, PyinstrumentAnalysis) over the stats a
real profiled CPU training wrote: one interval per PythonProfilingConfig step, in train and eval
mode, read back by step, time, training phase and job phase, as tables that name the training's
own functions. The real smdebug's analysis reads the same files (the oracle), and the smdebug
module path resolves to trainscope's with the alias."""

import importlib.util
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest

import trainscope
from profiler_util import train
from trainscope.exceptions import SMDebugNotImplementedError
from trainscope.profiler.python_profile_analysis import (PyinstrumentAnalysis,
                                                         cProfileAnalysis)
from trainscope.profiler.python_profiler import (PythonProfileModes, StepPhase,
                                                 cProfilePythonProfiler)
from trainscope.profiler.python_stats import Metrics
from trainscope.smdebug import _finder

WINDOW = (4, 4)  # global steps 4 and 5 (train), 6 and 7 (eval)
TRAIN, EVAL = PythonProfileModes.TRAIN, PythonProfileModes.EVAL
HAVE_REAL_SMDEBUG = (importlib.util.find_spec("smdebug") is not None
                     and not _finder.finder_installed())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pyprof") / "trial"
    summary = train(str(out), steps=6, eval_steps=2, sleep_ms=5, python=list(WINDOW))
    return out, summary


def cprofile_dir(trial):
    return os.path.join(str(trial), "framework", "pytorch", "cprofile")


def functions(stats):
    """{function name: (primitive calls, total calls)} of a cProfileStats, names as
    pstats writes them: file:line(name)."""
    return {f.function_name: (f.prim_calls, f.total_calls) for f in stats.function_stats_list}


def calls_of(stats, name, file_part=""):
    return sum(c for fn, (_, c) in functions(stats).items()
               if fn.endswith(f"({name})") and file_part in fn)


def test_one_interval_per_window_step(run):
    trial, summary = run
    analysis = cProfileAnalysis(local_profile_dir=cprofile_dir(trial))
    df = analysis.list_profile_stats()
    assert df["start_step"].tolist() == [4, 5, 6, 7]
    assert df["end_step"].tolist() == [4, 5, 6, 7]
    assert df["start_mode"].tolist() == ["train", "train", "eval", "eval"]
    assert df["end_mode"].tolist() == df["start_mode"].tolist()
    assert set(df["start_phase"]) == {StepPhase.STEP_START}
    assert set(df["end_phase"]) == {StepPhase.STEP_END}
    assert set(df["profiler_name"]) == {"cprofile"} and set(df["framework"]) == {"pytorch"}
    assert set(df["node_id"]) == {summary["node_id"]}
    assert analysis.list_available_node_ids() == [summary["node_id"]]
    assert (df["start_time_since_epoch_in_micros"] < df["end_time_since_epoch_in_micros"]).all()
    # the intervals follow one another: each ends before the next begins
    assert (df["end_time_since_epoch_in_micros"][:-1].values <=
            df["start_time_since_epoch_in_micros"][1:].values).all()
    assert sorted(os.path.dirname(p) for p in df["stats_path"]) == sorted(summary["python_stats"])
    # the trial folder itself finds the same files
    same = cProfileAnalysis(local_profile_dir=str(trial)).list_profile_stats()
    assert same["stats_path"].tolist() == df["stats_path"].tolist()


def test_by_step_names_the_training_functions(run):
    trial, _ = run
    analysis = cProfileAnalysis(local_profile_dir=cprofile_dir(trial))
    step4 = analysis.fetch_profile_stats_by_step(4)
    # a training step: the model's forward, the loss, autograd's backward, the optimizer, and
    # the wait for the next batch (the script's collate function, which sleeps)
    assert calls_of(step4, "forward", "torch/nn/modules/linear.py") == 2  # two Linear layers
    assert calls_of(step4, "backward", "torch/_tensor.py") == 1
    assert calls_of(step4, "step", "torch/optim/sgd.py") == 1
    assert calls_of(step4, "slow_collate", "train_profiled.py") == 1
    both = analysis.fetch_profile_stats_by_step(4, end_step=5)
    assert calls_of(both, "forward", "torch/nn/modules/linear.py") == 4
    assert calls_of(both, "step", "torch/optim/sgd.py") == 2
    # evaluation steps: forward, no backward, no optimizer
    assert analysis.fetch_profile_stats_by_step(6) is None  # mode TRAIN by default
    ev = analysis.fetch_profile_stats_by_step(6, end_step=7, mode=EVAL)
    assert calls_of(ev, "forward", "torch/nn/modules/linear.py") == 4
    assert calls_of(ev, "step", "torch/optim/sgd.py") == 0
    assert calls_of(ev, "backward", "torch/_tensor.py") == 0
    assert analysis.fetch_profile_stats_by_step(0, end_step=3) is None  # not profiled
    # smdebug's step positions: from the end of step 4 on, step 4 is left out
    late = analysis.fetch_profile_stats_by_step(4, end_step=5, start_phase=StepPhase.STEP_END)
    assert calls_of(late, "step", "torch/optim/sgd.py") == 1


def test_by_time_and_by_phase(run):
    trial, _ = run
    analysis = cProfileAnalysis(local_profile_dir=cprofile_dir(trial))
    rec = analysis.python_profile_stats[1]  # step 5
    inside = analysis.fetch_profile_stats_by_time(
        (rec.start_time_since_epoch_in_micros + 1) / 1e6,
        (rec.end_time_since_epoch_in_micros - 1) / 1e6)
    assert functions(inside) == functions(analysis.fetch_profile_stats_by_step(5))
    everything = analysis.fetch_profile_stats_by_time(0, 1e10)
    assert calls_of(everything, "forward", "torch/nn/modules/linear.py") == 8
    assert analysis.fetch_profile_stats_by_time(0, 1) is None

    phases = analysis.fetch_profile_stats_by_training_phase()
    assert set(phases) == {(TRAIN, TRAIN), (EVAL, EVAL)}
    assert calls_of(phases[(TRAIN, TRAIN)], "step", "torch/optim/sgd.py") == 2
    assert calls_of(phases[(EVAL, EVAL)], "step", "torch/optim/sgd.py") == 0
    assert analysis.fetch_profile_stats_between_modes(TRAIN, EVAL) is None
    jobs = analysis.fetch_profile_stats_by_job_phase()
    assert set(jobs) == {"training_loop"}  # the hook profiles only the configured steps
    assert calls_of(jobs["training_loop"], "forward", "torch/nn/modules/linear.py") == 8
    assert analysis.fetch_pre_step_zero_profile_stats() is None
    assert analysis.fetch_post_hook_close_profile_stats() is None


def test_function_table_and_top_n(run, capsys):
    trial, _ = run
    stats = cProfileAnalysis(local_profile_dir=cprofile_dir(trial)).fetch_profile_stats_by_step(4)
    table = stats.get_function_stats()
    assert list(table.columns) == ["function name", "# of primitive calls", "# of total calls",
                                   "total time", "cumulative time"]
    assert len(table) == len(stats.function_stats_list)
    cum = table["cumulative time"].tolist()
    assert cum == sorted(cum, reverse=True) and cum[0] > 0
    row = table[table["function name"].str.endswith("(slow_collate)")].iloc[0]
    assert row["# of total calls"] == 1 and row["cumulative time"] >= 0.004  # it sleeps 5 ms
    capsys.readouterr()
    stats.print_top_n_functions(Metrics.CUMULATIVE_TIME, n=len(table))
    printed = capsys.readouterr().out
    assert "Ordered by: cumulative time" in printed and "slow_collate" in printed


def test_smdebug_analysis_reads_our_stats(run):
    """The real smdebug (the oracle) finds the same intervals and the same functions."""
    if not HAVE_REAL_SMDEBUG:
        pytest.skip("needs a real smdebug installed")
    from smdebug.profiler.analysis.python_profile_analysis import cProfileAnalysis as Theirs

    trial, _ = run
    ours = cProfileAnalysis(local_profile_dir=cprofile_dir(trial))
    theirs = Theirs(local_profile_dir=cprofile_dir(trial))
    assert len(theirs.python_profile_stats) == 4
    for step in (4, 5):
        assert ({f.function_name for f in theirs.fetch_profile_stats_by_step(
                    step).function_stats_list} ==
                set(functions(ours.fetch_profile_stats_by_step(step))))


def test_alias_module_path(run, tmp_path):
    trial, _ = run
    script = tmp_path / "analysis.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        from smdebug.profiler.analysis.python_profile_analysis import cProfileAnalysis
        from smdebug.profiler.analysis.utils.python_profile_analysis_utils import Metrics
        import trainscope.profiler.python_profile_analysis as ours
        analysis = cProfileAnalysis(local_profile_dir=sys.argv[1])
        stats = analysis.fetch_profile_stats_by_step(4)
        print(json.dumps({"same": cProfileAnalysis is ours.cProfileAnalysis,
                          "rows": len(analysis.list_profile_stats()),
                          "functions": len(stats.get_function_stats())}))
    """))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(trainscope.__file__)))
    p = subprocess.run([sys.executable, "-m", "trainscope.smdebug", "--force", str(script),
                        cprofile_dir(trial)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["same"] and out["rows"] == 4 and out["functions"] > 10


def test_profiler_driven_by_hand(tmp_path):
    """smdebug's PythonProfiler API: intervals before step 0, between modes and after the
    close, each found by the fetch that names it."""
    import time

    prof = cProfilePythonProfiler(str(tmp_path), "pytorch", "cpu_time", node_id="1-host")

    def interval(start, end, fn):
        prof.start_profiling(*start)
        fn()
        return prof.stop_profiling(*end)

    def init_work():
        sum(range(10000))

    def step_work():
        time.sleep(0.001)

    def closing_work():
        sorted(range(1000))

    first = interval([StepPhase.START], [StepPhase.STEP_START, TRAIN, 1], init_work)
    assert os.path.basename(first).startswith("prestepzero-*-start-")
    assert "_train-1-stepstart-" in os.path.basename(first)
    interval([StepPhase.STEP_START, TRAIN, 1], [StepPhase.STEP_END, TRAIN, 1], step_work)
    interval([StepPhase.STEP_END, TRAIN, 1], [StepPhase.STEP_START, EVAL, 2], step_work)
    last = interval([StepPhase.STEP_END, EVAL, 2], [StepPhase.END], closing_work)
    assert "_posthookclose-*-end-" in os.path.basename(last)
    assert prof.stop_profiling(StepPhase.END) is None  # nothing running

    analysis = cProfileAnalysis(local_profile_dir=os.path.join(str(tmp_path), "framework",
                                                               "pytorch", "cprofile"))
    recs = analysis.python_profile_stats
    assert [(r.start_step, r.end_step) for r in recs] == [(-1, 1), (1, 1), (1, 2), (2, math.inf)]
    assert calls_of(analysis.fetch_pre_step_zero_profile_stats(), "init_work") == 1
    assert calls_of(analysis.fetch_post_hook_close_profile_stats(), "closing_work") == 1
    assert calls_of(analysis.fetch_profile_stats_by_step(1), "step_work") == 1
    between = analysis.fetch_profile_stats_between_modes(TRAIN, EVAL)
    assert calls_of(between, "step_work") == 1
    jobs = analysis.fetch_profile_stats_by_job_phase()
    assert set(jobs) == {"initialization", "training_loop", "finalization"}
    assert calls_of(jobs["training_loop"], "step_work") == 2
    assert calls_of(jobs["training_loop"], "init_work") == 0


def test_smdebug_folder_names_with_float_times(tmp_path):
    """smdebug writes its times as floats (time.time() * 1e6); those folders read too, and
    files that are not stats files are skipped."""
    import cProfile

    node = tmp_path / "cprofile" / "7-algo-1"
    folder = node / "train-3-stepstart-1596585374963238.5_train-3-stepend-1596585376008161.25"
    folder.mkdir(parents=True)
    p = cProfile.Profile()
    p.enable()
    sorted(range(100))
    p.disable()
    p.dump_stats(str(folder / "python_stats"))
    (folder / ".python_stats.tmp").write_text("partial")
    (node / "not-a-stats-folder").mkdir()
    (node / "not-a-stats-folder" / "python_stats").write_text("")
    analysis = cProfileAnalysis(local_profile_dir=str(tmp_path / "cprofile"))
    [rec] = analysis.python_profile_stats
    assert rec.start_time_since_epoch_in_micros == 1596585374963238.5
    assert rec.node_id == "7-algo-1" and rec.start_step == rec.end_step == 3
    assert analysis.fetch_profile_stats_by_step(3) is not None


def test_s3_is_refused(tmp_path):
    with pytest.raises(SMDebugNotImplementedError):
        cProfileAnalysis(local_profile_dir=str(tmp_path), s3_path="s3://bucket/prefix")


@pytest.fixture(scope="module")
def pyinstrument_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pyprof-pyinstrument") / "trial"
    summary = train(str(out), steps=4, eval_steps=0, sleep_ms=20, python=[1, 2],
                    python_profiler="pyinstrument")
    return out, summary


def frame_names(frame):
    yield frame["function"]
    for child in frame.get("children", []):
        yield from frame_names(child)


def test_pyinstrument_analysis(pyinstrument_run):
    trial, _ = pyinstrument_run
    analysis = PyinstrumentAnalysis(local_profile_dir=os.path.join(
        str(trial), "framework", "pytorch", "pyinstrument"))
    df = analysis.list_profile_stats()
    assert len(df) == 4  # the JSON and the HTML of steps 1 and 2
    assert sorted(set(df["start_step"])) == [1, 2]
    [step1] = analysis.fetch_profile_stats_by_step(1)
    assert os.path.basename(step1.html_file_path) == "python_stats.html"
    assert "slow_collate" in set(frame_names(step1.json_stats["root_frame"]))
    assert len(analysis.fetch_profile_stats_by_step(1, end_step=2)) == 2
    assert analysis.fetch_profile_stats_by_step(3) is None
    # a cProfile analysis of the same trial finds nothing of pyinstrument's
    assert cProfileAnalysis(local_profile_dir=str(trial)).python_profile_stats == []
