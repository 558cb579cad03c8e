"""smdebug's profiler notebook charts (Bokeh) and MergedTimeline on a real profiled training: the
data behind each chart (its ColumnDataSources) is the trial's step durations and system metric
values, each chart renders to standalone HTML and to a json_item, and the merged Chrome trace holds
the framework spans and system counters of the requested window."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("bokeh")
pytest.importorskip("pandas")

import trainscope  # noqa: E402
from profiler_util import raw_events, train  # noqa: E402
from trainscope.profiler.analysis import (  # noqa: E402
    LocalAlgorithmMetricsReader,
    LocalSystemMetricsReader,
)
from trainscope.profiler import charts  # noqa: E402
from trainscope.profiler.merge import MergedTimeline, MergeUnit  # noqa: E402
from trainscope.smdebug import _finder  # noqa: E402

STEPS = 6


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    path = tmp_path_factory.mktemp("charts") / "trial"
    train(str(path), steps=STEPS, eval_steps=1, sleep_ms=30, system=True, interval_ms=100)
    return str(path)


def render(fig, *sources):
    """Renders fig as a standalone page and as a json_item; both carry every source."""
    from bokeh.embed import file_html, json_item
    from bokeh.resources import CDN

    html = file_html(fig, CDN, "chart")
    item = json.dumps(json_item(fig))
    for s in sources:
        assert s.id in html and s.id in item
    return html


def system_values(trial, dimension, name):
    events = LocalSystemMetricsReader(trial).get_events(0, 2 ** 62)
    return [e.value for e in sorted(events, key=lambda e: e.timestamp_us)
            if e.dimension == dimension and e.name == name]


def test_step_histogram_counts_every_step_duration(trial):
    reader = LocalAlgorithmMetricsReader(trial)
    h = charts.StepHistogram(reader)
    h.plot()
    spans = raw_events(trial)
    by_phase = {}
    for e in spans:
        if e["ph"] == "X":
            by_phase.setdefault(e["phase"], []).append(e["dur_us"] / 1e6)
    keys = {k.split("-nodeid:")[0]: k for k in h.sources}
    # smdebug's default selection: steps of every mode, forward and backward passes.
    assert set(keys) == {"Step:ModeKeys.TRAIN", "Step:ModeKeys.EVAL", "Forward",
                         "Backward(post-forward)"}
    for phase, key in keys.items():
        data = h.sources[key].data
        assert int(np.sum(data["top"])) == len(by_phase[phase])
        assert sorted(h.step_metrics[key]) == pytest.approx(sorted(by_phase[phase]))
        assert data["left"][0] == pytest.approx(min(by_phase[phase]))
        assert data["right"][-1] >= max(by_phase[phase]) - 1e-9
    assert int(np.sum(h.sources[keys["Step:ModeKeys.TRAIN"]].data["top"])) == STEPS
    render(h.figure, *h.sources.values())

    h2 = charts.StepHistogram(reader)
    h2.plot(select_metrics=["Step:ModeKeys.TRAIN"], show_workers=False)
    assert list(h2.sources) == ["Step:ModeKeys.TRAIN"]


def test_step_timeline_chart_holds_each_steps_duration(trial):
    t = charts.StepTimelineChart(LocalAlgorithmMetricsReader(trial))
    steps = sorted((e for e in raw_events(trial) if e["phase"].startswith("Step:")),
                   key=lambda e: e["start_us"])
    data = t.source.data
    assert list(data["metric"]) == [e["name"] for e in steps]
    assert list(data["step"]) == [int(e["args"]["step_num"]) for e in steps]
    assert list(data["y"]) == pytest.approx([e["dur_us"] / 1e6 for e in steps])
    assert data["x"][0] == 0 and list(data["x"]) == sorted(data["x"])
    assert sorted(s for s, m in zip(data["step"], data["metric"]) if "TRAIN" in m) == \
        list(range(STEPS))
    render(t.plot, t.source)


def test_metrics_histogram_bins_every_sample(trial):
    m = charts.MetricsHistogram(LocalSystemMetricsReader(trial))
    m.plot(select_dimensions=["^CPUUtilization-"], select_events=["cpu0", "total"])
    (dim,) = m.sources
    assert dim.startswith("CPUUtilization-nodeid:")
    cpu0 = system_values(trial, "CPUUtilization", "cpu0")
    cpu1 = system_values(trial, "CPUUtilization", "cpu1")
    assert len(cpu0) > 3
    counts, _ = np.histogram(cpu0, bins=np.arange(0, 102, 2))
    assert list(m.sources[dim]["cpu0"].data["top"]) == list(counts)
    n = min(len(cpu0), len(cpu1))
    assert m.system_metrics[dim]["total"] == pytest.approx(
        [(a + b) / 2 for a, b in zip(cpu0[:n], cpu1[:n])])
    assert int(np.sum(m.sources[dim]["total"].data["top"])) == n
    render(m.figure, m.sources[dim]["cpu0"], m.sources[dim]["total"])


def test_heatmap_rows_are_the_utilisation_samples(trial):
    hm = charts.Heatmap(LocalSystemMetricsReader(trial), select_dimensions=["^CPUUtilization$"])
    data = hm.source.data
    node = data["metric"][0].split("_")[-1]
    assert list(data["metric"]) == [f"CPUUtilization_cpu0_{node}", f"CPUUtilization_cpu1_{node}"]
    cpu0 = system_values(trial, "CPUUtilization", "cpu0")
    assert data["image"][0].shape == (1, hm.width)
    assert list(data["image"][0][0]) == pytest.approx(cpu0[:hm.width])
    render(hm.plot, hm.source)


def test_timeline_charts_and_the_framework_events_of_a_selection(trial):
    sysr, fwr = LocalSystemMetricsReader(trial), LocalAlgorithmMetricsReader(trial)
    tc = charts.TimelineCharts(sysr, fwr, select_dimensions=["^CPUUtilization-"],
                               select_events=["cpu0"])
    (dim,) = tc.sources
    samples = sorted((e for e in sysr.get_events(0, 2 ** 62)
                      if e.dimension == "CPUUtilization" and e.name == "cpu0"),
                     key=lambda e: e.timestamp_us)
    data = tc.sources[dim]["cpu0"].data
    assert list(data["y"]) == pytest.approx([e.value for e in samples])
    assert list(data["x"]) == pytest.approx(
        [(e.timestamp_us - tc.start) / 1e6 for e in samples])
    render(tc.figure, tc.sources[dim]["cpu0"])

    # The notebook selects a range of samples and looks at the framework events of its time.
    spans = [e for e in raw_events(trial) if e["ph"] == "X"]
    first = min(e["start_us"] for e in spans)
    i0 = max(i for i, e in enumerate(samples) if e.timestamp_us <= first)
    fig = tc.plot_detailed_profiler_data([i0, len(samples) - 1])
    fw = tc.framework_source.data
    lo, hi = samples[i0].timestamp_us, samples[-1].timestamp_us + 1
    want = [e for e in spans if e["start_us"] < hi and e["start_us"] + e["dur_us"] >= lo]
    assert len(want) > STEPS
    assert sorted(fw["name"]) == sorted(e["name"] for e in want)
    assert sorted(s for p, s in zip(fw["phase"], fw["step"]) if p == "Step:ModeKeys.TRAIN") == \
        sorted(int(e["args"]["step_num"]) for e in want if e["phase"] == "Step:ModeKeys.TRAIN")
    render(fig, tc.framework_source)


def trace_events(path):
    with open(path) as f:
        doc = json.load(f)
    trainscope._native.load().validate_trace_events(json.dumps(doc))
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def test_merged_timeline_of_a_step_and_a_time_window(trial, tmp_path):
    spans = [e for e in raw_events(trial) if e["ph"] == "X"]
    steps = {int(e["args"]["step_num"]): e for e in spans if e["phase"] == "Step:ModeKeys.TRAIN"}
    m = MergedTimeline(trial, output_directory=str(tmp_path / "out"))
    # Steps 1 to 5: 150 ms and more of 30 ms steps, so the 100 ms sampler has a sample inside
    # wherever its ticks fall (steps 1 to 3, about 95 ms, could fall between two).
    path = m.merge_timeline(1, 5, unit=MergeUnit.STEP)
    assert path.startswith(str(tmp_path / "out")) and path.endswith("_merged_timeline.json")
    events = trace_events(path)
    base = m.last_result["base_time_us"]
    lo, hi = steps[1]["start_us"], steps[5]["start_us"] + steps[5]["dur_us"]
    framework = [e for e in events if e["ph"] == "X"]
    counters = [e for e in events if e["ph"] == "C"]
    got_steps = sorted(int(e["args"]["step_num"]) for e in framework
                       if e["name"] == "Step:ModeKeys.TRAIN")
    assert got_steps == [1, 2, 3, 4, 5]
    for e in framework:
        assert e["ts"] + base < hi and e["ts"] + e.get("dur", 0) + base >= lo
    assert counters, "the system metrics of the window are counters"
    for e in counters:
        assert lo <= e["ts"] + base < hi

    # A time window, without system metrics.
    path2 = MergedTimeline(trial, output_directory=str(tmp_path / "out2")).merge_timeline(
        lo, hi, sys_metrics_filter={})
    events2 = trace_events(path2)
    assert not [e for e in events2 if e["ph"] == "C"]
    assert sorted(e["name"] for e in events2 if e["ph"] == "X") == \
        sorted(e["name"] for e in framework)


NOTEBOOK = """
    import json, sys
    from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader
    from smdebug.profiler.algorithm_metrics_reader import LocalAlgorithmMetricsReader
    from smdebug.profiler.analysis.notebook_utils.step_histogram import StepHistogram
    from smdebug.profiler.analysis.notebook_utils.step_timeline_chart import StepTimelineChart
    from smdebug.profiler.analysis.notebook_utils.metrics_histogram import MetricsHistogram
    from smdebug.profiler.analysis.notebook_utils.heatmap import Heatmap
    from smdebug.profiler.analysis.notebook_utils.timeline_charts import TimelineCharts
    from smdebug.profiler.analysis.utils.merge_timelines import MergedTimeline

    path = sys.argv[1]
    system_metrics_reader = LocalSystemMetricsReader(path)
    framework_metrics_reader = LocalAlgorithmMetricsReader(path)
    view_timeline_charts = TimelineCharts(system_metrics_reader, framework_metrics_reader,
                                          select_dimensions=["CPU", "GPU"],
                                          select_events=["total"])
    view_timeline_charts.plot_detailed_profiler_data([0, 1000])
    view_step_timeline_chart = StepTimelineChart(framework_metrics_reader)
    step_histogram = StepHistogram(framework_metrics_reader)
    step_histogram.plot(starttime=0, select_metrics=["Step:ModeKeys.TRAIN"])
    metrics_histogram = MetricsHistogram(system_metrics_reader)
    metrics_histogram.plot(starttime=0, select_dimensions=["CPU", "GPU", "I/O"],
                           select_events=[".*"])
    view_heatmap = Heatmap(system_metrics_reader, select_dimensions=["CPU", "GPU"],
                           select_events=[".*"], plot_height=900)
    combined = MergedTimeline(path, output_directory=sys.argv[2])
    out = combined.merge_timeline(0, 2 ** 62)
    import smdebug
    print(json.dumps({
        "smdebug_file": smdebug.__file__,
        "train_steps": int(sum(list(step_histogram.sources.values())[0].data["top"])),
        "timeline_steps": len(view_step_timeline_chart.source.data["step"]),
        "histograms": sorted(metrics_histogram.sources),
        "heatmap_rows": len(view_heatmap.source.data["metric"]),
        "merged": len(json.load(open(out))["traceEvents"]),
    }))
"""


def test_profiler_notebook_charts_run_unmodified(trial, tmp_path):
    script = tmp_path / "notebook.py"
    script.write_text(textwrap.dedent(NOTEBOOK))
    paths = [os.path.dirname(os.path.dirname(trainscope.__file__))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        paths + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    p = subprocess.run([sys.executable, "-m", "trainscope.smdebug", "--force", str(script),
                        trial, str(tmp_path / "merged")], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["smdebug_file"].startswith(_finder.ALIAS_DIR)
    assert out["train_steps"] == STEPS
    assert out["timeline_steps"] == STEPS + 1  # and the eval step
    assert any(h.startswith("CPUUtilization-") for h in out["histograms"])
    assert out["heatmap_rows"] >= 2
    assert out["merged"] > STEPS


def test_charts_follow_a_growing_trial_with_update_data(trial):
    """A notebook plots the first part of the run, then update_data adds the rest."""
    reader = LocalAlgorithmMetricsReader(trial)
    steps = sorted((e for e in raw_events(trial) if e["phase"] == "Step:ModeKeys.TRAIN"),
                   key=lambda e: e["start_us"])
    mid = steps[STEPS // 2]["start_us"] + 1  # step STEPS // 2 overlaps both windows
    end = reader.get_timestamp_of_latest_available_file() + 1
    h = charts.StepHistogram(reader)
    h.plot(starttime=0, endtime=mid, select_metrics=["Step:ModeKeys.TRAIN"])
    (key,) = h.sources
    assert int(np.sum(h.sources[key].data["top"])) == STEPS // 2 + 1
    h.update_data(end)
    assert int(np.sum(h.sources[key].data["top"])) == STEPS

    t = charts.StepTimelineChart(reader)
    t.steps, t.metric_names = [], []  # as if built while step STEPS // 2 was running
    t.last_timestamp = 0
    t.update_data(mid)
    t.update_data(end)
    data = t.source.data
    assert sorted(s for s, n in zip(data["step"], data["metric"])
                  if n == "Step:ModeKeys.TRAIN") == list(range(STEPS))

    sysr = LocalSystemMetricsReader(trial)
    m = charts.MetricsHistogram(sysr)
    cpu0 = system_values(trial, "CPUUtilization", "cpu0")
    samples = sorted(e.timestamp_us for e in sysr.get_events(0, 2 ** 62)
                     if e.dimension == "CPUUtilization" and e.name == "cpu0")
    m.plot(endtime=samples[2], select_dimensions=["^CPUUtilization-"], select_events=["cpu0"])
    (dim,) = m.sources
    assert int(np.sum(m.sources[dim]["cpu0"].data["top"])) == 2
    m.update_data(samples[-1] + 1)
    assert int(np.sum(m.sources[dim]["cpu0"].data["top"])) == len(cpu0)


def test_merged_timeline_file_suffix_filter(trial, tmp_path):
    """Only torch.profiler traces asked for: the framework spans stay out (this run has none of
    those traces); only the Python timeline: its spans are in."""
    only_detailed = MergedTimeline(trial, file_suffix_filter=["trace.json.gz"],
                                   output_directory=str(tmp_path / "a"))
    events = trace_events(only_detailed.merge_timeline(0, 2 ** 62, sys_metrics_filter={}))
    assert not [e for e in events if e["ph"] in ("X", "C")]
    python_only = MergedTimeline(trial, file_suffix_filter=["pythontimeline.json"],
                                 output_directory=str(tmp_path / "b"))
    events = trace_events(python_only.merge_timeline(0, 2 ** 62, "time"))
    assert len([e for e in events if e["ph"] == "X"]) == \
        len([e for e in raw_events(trial) if e["ph"] == "X"])
