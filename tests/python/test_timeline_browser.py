"""The merged timeline of a real profiled training, opened in real trace viewers in headless
Chromium: the legacy Catapult viewer of chrome://tracing and the Perfetto UI with its trace
processor (trace_viewer_util.py says where they come from and why chrome://tracing itself is not
used).

The training runs under `trainscope run` with the Dataloader rule, whose data loader is the
bottleneck, so the trial holds all four sources that `trainscope timeline` merges: system
counters (the supervisor's sampler), framework spans, a torch.profiler window (operators) and a
rule finding. Each viewer must import the merged file without an error or a warning and show
every process, slice, counter sample and instant that the file holds.

Skipped, with the reason, only when no viewer can be found (Playwright, Debian's Chromium or the
npm package missing); scripts/setup.sh installs all three. Screenshots are left in the test's
tmp_path for a person to look at.
"""

import collections
import json
import os
import subprocess
import sys

import pytest

from hook_util import SCRIPTS, env
from profiler_util import trainscope_cli
from test_timeline_format import strict_check
from trace_viewer_util import (CHROMIUM_ARGS, ViewerServer, find_viewer, load_in_catapult,
                               load_in_perfetto, new_page, perfetto_query)

STEPS = 10  # train steps; one eval step follows
RULE = "Dataloader"
SYSTEM_PID = 100  # the merged trace's process of system counters
# A renderer assertion of this Perfetto UI build (v20.1) when it draws some counter tracks; it
# fires after the import and leaves the trace processor's tables as they are.
PERFETTO_COUNTER_DRAW_BUG = "CounterTrack.renderCanvas"
NATIVE_PROBE = "refused request http://127.0.0.1:9001/"
NATIVE_PROBE_FAILED = "console error: Failed to load resource: net::ERR_FAILED"


@pytest.fixture(scope="module")
def viewer():
    found, reason = find_viewer()
    if found is None:
        pytest.skip("no trace viewer: " + reason)
    return found


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """(path of the merged timeline, its JSON) of a real training under `trainscope run`."""
    cli = trainscope_cli()
    if cli is None:
        pytest.skip("the trainscope command is not built (set TRAINSCOPE_BUILD_DIR)")
    root = tmp_path_factory.mktemp("timeline-browser")
    trial = root / "trial"
    opts = {"steps": STEPS, "eval_steps": 1, "sleep_ms": 80, "detailed": [2, 1]}
    run = subprocess.run(
        [cli, "run", "--out", str(trial), "--rules", "none", "--rule", f"{RULE}:patience=3",
         "--system-interval-ms", "100", "--json", "--", sys.executable,
         os.path.join(SCRIPTS, "train_profiled.py"), str(trial), json.dumps(opts)],
        capture_output=True, text=True, env=env(), timeout=300)
    # exit 3: the training ended well and a rule found an issue
    assert run.returncode == 3, run.stdout[-3000:] + run.stderr[-3000:]
    out = root / "merged_timeline.json"
    p = subprocess.run([cli, "timeline", str(trial), "-o", str(out), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(p.stdout)
    assert res["valid"] and res["warnings"] == []
    assert res["counter_events"] > 0 and res["framework_events"] > 0
    assert res["detailed_events"] > 0 and res["rule_events"] == 1
    doc = json.loads(out.read_text())
    strict_check(doc)
    return out, doc


@pytest.fixture(scope="module")
def browser(viewer):
    from playwright.sync_api import sync_playwright

    chromium, _ = viewer
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


def expected(doc):
    """What the file holds, by process: names, X slices by name, counter samples, global
    instants, flow pairs."""
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    slices = collections.defaultdict(collections.Counter)
    for e in events:
        if e["ph"] == "X":
            slices[e["pid"]][e["name"]] += 1
    counters = collections.Counter(e["name"] for e in events if e["ph"] == "C")
    instants = sorted(e["name"] for e in events if e["ph"] == "i" and e.get("s") == "g")
    flows = sum(e["ph"] == "s" for e in events)
    return names, slices, counters, instants, flows


def finding_name(doc):
    """The name of the rule's finding in the merged trace: "<Rule>: <explanation>", the
    explanation being the one the rule wrote to its events.jsonl (the instant's args)."""
    [event] = [e for e in doc["traceEvents"] if e.get("cat") == "rule" and e["ph"] == "i"]
    explanation = event["args"]["explanation"]
    assert "data loading is the bottleneck" in explanation, explanation
    assert event["name"] == f"{RULE}: {explanation}"
    return event["name"]


def train_step_pid(names):
    return next(p for p, n in names.items() if n.startswith("Step:ModeKeys.TRAIN ("))


def step_times(doc, pid, scale):
    """start, duration, start, duration, ... of the file's X events of process `pid` (by
    start), times `scale`."""
    spans = sorted((e["ts"], e["dur"]) for e in doc["traceEvents"]
                   if e["ph"] == "X" and e["pid"] == pid)
    return [t * scale for span in spans for t in span]


def test_catapult_viewer_shows_the_merged_timeline(browser, viewer, merged, tmp_path):
    _, package = viewer
    path, doc = merged
    names, slices, counters, instants, flows = expected(doc)
    with ViewerServer(package, path.read_bytes()) as srv:
        page, problems = new_page(browser, srv.origin)
        model = load_in_catapult(page, srv.origin, path)
        page.screenshot(path=str(tmp_path / "catapult.png"))
        page.context.close()
    assert model["errors"] == [] and model["warnings"] == []
    assert problems == []
    procs = {p["pid"]: p for p in model["processes"]}
    # every process of the file, named as the file names it
    assert {pid: p["name"] for pid, p in procs.items()} == names
    node = next(n for n in names.values() if n.startswith("Step:ModeKeys.TRAIN ("))
    node = node[len("Step:ModeKeys.TRAIN ("):-1]
    assert set(names.values()) >= {
        "rules", "system algo-1", f"Step:ModeKeys.TRAIN ({node})", f"Forward ({node})",
        f"Backward(post-forward) ({node})", f"Optimizer ({node})", f"DataLoaderIter ({node})",
        f"cpu_functions ({node})"}
    # every slice of every process, none dropped or added
    for pid, want in slices.items():
        got = collections.Counter(s[0] for t in procs[pid]["threads"] for s in t["slices"])
        assert got == want, names[pid]
    # the steps where the file puts them (its microseconds are the viewer's milliseconds)
    step_pid = train_step_pid(names)
    steps = sorted(s[1:] for t in procs[step_pid]["threads"] for s in t["slices"])
    assert len(steps) == STEPS
    assert [t for s in steps for t in s] == pytest.approx(step_times(doc, step_pid, 1e-3),
                                                          abs=1e-6)
    # the system counters: one track per metric, every sample
    system = procs[SYSTEM_PID]
    got = {c["name"]: sum(s["samples"] for s in c["series"]) for c in system["counters"]}
    assert got == dict(counters)
    assert {"CPUUtilizationTotal cpu", "MemoryUsedPercent",
            "ProcessTreeResidentBytes process_tree"} <= set(got)
    assert all(c["category"] == "system" for c in system["counters"])
    # the rule finding: a global instant (a full-height line) in category "rule"
    assert sorted(i["title"] for i in model["instants"]) == instants
    finding = [i for i in model["instants"] if i["title"] == finding_name(merged[1])]
    assert len(finding) == 1 and finding[0]["category"] == "rule"
    lo, hi = model["bounds_ms"]
    assert lo <= finding[0]["start"] <= hi
    # torch.profiler's forward-to-backward arrows
    assert model["flows"] == flows > 0


@pytest.fixture(scope="module")
def perfetto(browser, viewer, merged, tmp_path_factory):
    """(UI state, query function, problems) of the Perfetto UI on the merged timeline."""
    _, package = viewer
    path, _ = merged
    with ViewerServer(package, path.read_bytes()) as srv:
        page, problems = new_page(browser, srv.origin)
        state = load_in_perfetto(page, srv.origin)
        page.wait_for_timeout(500)  # let it draw once
        page.keyboard.press("Escape")  # the dialog of the renderer assertion, if it came
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path_factory.mktemp("perfetto") / "perfetto.png"))
        yield state, lambda sql: perfetto_query(page, sql), problems
        page.context.close()


def test_perfetto_imports_the_merged_timeline(perfetto, merged):
    state, query, problems = perfetto
    _, doc = merged
    names, slices, counters, instants, _ = expected(doc)
    assert state["ready"] and not state["status"].startswith("Error"), state
    # the trace processor's own account of the import: no errors and no data lost
    bad = query("select name, value from stats where value > 0 and severity in "
                "('error', 'data_loss')")
    assert bad == []
    # the UI's error reports, less the renderer assertion of this build and its probe for a
    # native trace processor (http://127.0.0.1:9001, refused)
    assert [p for p in problems if PERFETTO_COUNTER_DRAW_BUG not in p
            and NATIVE_PROBE not in p and p != NATIVE_PROBE_FAILED] == []
    # every process, named as the file names it, and the UI made a track group for it
    rows = query("select pid, name from process where pid is not null and name is not null")
    assert {r["pid"]: r["name"] for r in rows} == names
    # (a group is named "<process name> <pid>")
    assert set(state["track_groups"]) >= {f"{names[p]} {p}" for p in [*slices, SYSTEM_PID]}
    # every slice, by process and name (the global instants are on the global track, below)
    rows = query("select p.pid as pid, s.name as name, count(*) as n from slice s "
                 "join thread_track tt on s.track_id = tt.id join thread using(utid) "
                 "join process p using(upid) group by p.pid, s.name")
    got = collections.defaultdict(collections.Counter)
    for r in rows:
        got[r["pid"]][r["name"]] = r["n"]
    assert got == slices
    assert sum(got[train_step_pid(names)].values()) == STEPS
    # every counter sample, one counter track per metric
    rows = query("select t.name as name, count(*) as n from counter c "
                 "join counter_track t on c.track_id = t.id group by t.name")
    assert {r["name"]: r["n"] for r in rows} == {f"{n} value": k for n, k in counters.items()}
    # the global instants, the rule finding among them
    rows = query("select s.name as name, s.category as cat from slice s "
                 "join track t on s.track_id = t.id where t.type = 'track' and s.dur = 0")
    assert sorted(r["name"] for r in rows) == instants
    assert {"name": finding_name(merged[1]), "cat": "rule"} in rows


def test_perfetto_reads_the_times_as_written(perfetto, merged):
    _, query, _ = perfetto
    _, doc = merged
    step_pid = train_step_pid(expected(doc)[0])
    rows = query("select s.ts as ts, s.dur as dur from slice s join thread_track tt on "
                 "s.track_id = tt.id join thread using(utid) join process p using(upid) "
                 f"where p.pid = {step_pid} order by s.ts")
    # Perfetto's times are nanoseconds, the file's microseconds
    got = [t for r in rows for t in (r["ts"], r["dur"])]
    assert got == pytest.approx(step_times(doc, step_pid, 1e3), abs=1)


def test_perfetto_keeps_the_flows(perfetto, merged):
    _, query, _ = perfetto
    _, doc = merged
    flows = sum(e["ph"] == "s" for e in doc["traceEvents"])
    assert query("select count(*) as n from flow")[0]["n"] == flows > 0
    assert query("select value from stats where name = 'flow_invalid_id'")[0]["value"] == 0
