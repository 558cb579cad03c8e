"""Proved on real training: every program of tests/training/programs runs with trainscope's hook,
and every built-in rule is evaluated over the trial it writes, beside the training (live), through
trainscope's Python rules API (trainscope.rules, invoke_rule).

For each program of programs/manifest.json:
- a faulty program: each rule of its `expect` fires, and its first finding is at or before the
  stated global step;
- a healthy program: no rule fires, except those listed in its `known_false_alarms` (each with
  the evidence why it fires on a healthy run; reported as xfail, never hidden).

Rule parameters: the rule's defaults, overridden by the manifest's suite_params, then by the
program's rule_params. A rule that cannot be created with them (SimilarAcrossRuns without
another trial) is not applicable to that program.

Two ways of running a program:
- standalone (every program): the program constructs its hook as a user following the
  documentation does (no TRAINSCOPE_CONFIG), two programs at a time; each rule runs in its own
  thread from the moment the program starts, with smdebug's invoke_rule, and waits for the steps
  as they are written;
- `trainscope run` (programs marked via_run, whose rule needs the runner's clock; every
  single-trial program with TRAINSCOPE_TRAINING_VIA_RUN=all): the command writes the hook
  configuration the rules need (the program reads it with Hook.create_from_json_file) and runs
  one rule worker per rule beside the training, with `--action stop` on healthy programs (a
  false alarm would stop them). Needs the `trainscope` executable ($TRAINSCOPE_BIN,
  build/bin/trainscope or PATH).

TRAINSCOPE_TRAINING_ONLY=a.py,b.py runs only the programs named.

The test writes a summary (mode, program, rules fired, first step, seconds from the step's index
file to the finding) to $TRAINSCOPE_TRAINING_REPORT when that variable names a file.
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROGRAMS = os.path.join(HERE, "programs")
if importlib.util.find_spec("trainscope") is None:
    sys.path.insert(0, os.path.join(REPO, "python"))

with open(os.path.join(PROGRAMS, "manifest.json")) as f:
    MANIFEST = json.load(f)
ENTRIES = {e["program"]: e for e in MANIFEST["programs"]}
# TRAINSCOPE_TRAINING_ONLY=a.py,b.py runs only those programs (while working on them).
if os.environ.get("TRAINSCOPE_TRAINING_ONLY"):
    ENTRIES = {p: ENTRIES[p] for p in os.environ["TRAINSCOPE_TRAINING_ONLY"].split(",")}


def _missing():
    """Why trainscope's capture and rules cannot run here, or None."""
    try:
        import torch  # noqa: F401
        import trainscope.pytorch  # noqa: F401
        import trainscope.rules  # noqa: F401
        from trainscope import _native

        _native.load()
    except ImportError as e:
        return str(e)
    return None


_WHY = _missing()
if _WHY:
    pytest.skip(
        "needs trainscope's hook (trainscope.pytorch, branch capture), rules (trainscope.rules, "
        "branch rules) and the C++ extension (cmake -DTRAINSCOPE_BUILD_PYTHON=ON --target _core): "
        + _WHY,
        allow_module_level=True,
    )

import trainscope  # noqa: E402
from trainscope import exceptions as ts_ex  # noqa: E402
from trainscope.rules import BUILTIN_RULES, invoke_rule  # noqa: E402

# The rules that need a clock beside the training: trainscope.rules' invoke_rule only asks a rule
# when a step arrives, so a stall between two steps is invisible to it (StalledTrainingRule's
# docstring says so); `trainscope run`'s runner ticks it on a clock.
NEEDS_CLOCK = {"StalledTrainingRule"}

PARALLEL_PROGRAMS = 2
PROGRAM_TIMEOUT_S = 300


def rule_params(entry, rule, out_dir):
    """The parameters the rule runs with on this program's trial, as keyword arguments."""
    params = dict(MANIFEST.get("suite_params", {}).get(rule, {}))
    params.update(entry.get("rule_params", {}).get(rule, {}))
    if rule == "SimilarAcrossRuns" and entry.get("other_trials"):
        params["other_trials"] = [os.path.join(out_dir, t) for t in entry["other_trials"]]
    return params


def _index_file_time(trial_path, step):
    """mtime of the index file of `step` (written after its event file), or None."""
    folder = os.path.join(trial_path, "index", f"{step // 1000:09d}")
    try:
        names = [n for n in os.listdir(folder) if n.startswith(f"{step:012d}_")]
        return min(os.path.getmtime(os.path.join(folder, n)) for n in names) if names else None
    except OSError:
        return None


class RuleResult:
    def __init__(self, rule):
        self.rule = rule
        self.not_applicable = None  # why the rule cannot run on this trial
        self.error = None
        self.findings = []
        self.found_at = None  # wall time of the first finding (time.time())

    @property
    def fired(self):
        return bool(self.findings)

    @property
    def first_step(self):
        return self.findings[0].get("step") if self.findings else None


def _evaluate(rule, trial_path, params, stop):
    """Evaluates one rule over the trial with invoke_rule, from the first step to the end of the
    training; returns a RuleResult."""
    res = RuleResult(rule)
    # The rule opens its trials when it is made: wait until they exist (a second run's trial
    # appears only when the first run is over).
    for path in [trial_path] + list(params.get("other_trials", [])):
        while not os.path.isdir(os.path.join(path, "collections")):
            if stop.is_set() and not os.path.isdir(os.path.join(path, "collections")):
                res.error = f"the program wrote no trial at {path}"
                return res
            time.sleep(0.05)
    trial = trainscope.create_trial(trial_path, timeout=PROGRAM_TIMEOUT_S)
    try:
        obj = BUILTIN_RULES[rule](trial, **params)
    except (ts_ex.SMDebugValueError, TypeError) as e:
        res.not_applicable = str(e)
        return res

    seen = [0]

    class _Watch:
        """Notes the wall time of the first finding, as soon as the rule reports it."""

        def __getattr__(self, name):
            return getattr(obj, name)

        def invoke(self, step):
            try:
                obj.invoke(step)
            finally:
                if obj.findings and res.found_at is None:
                    res.found_at = time.time()
                seen[0] = step

    try:
        invoke_rule(_Watch())
    except ts_ex.NoMoreData:
        pass  # the training ended: smdebug's way out of the loop
    except Exception as e:  # the rule failed: a bug to report, not a verdict
        res.error = f"{type(e).__name__}: {e}"
    res.findings = list(obj.findings)
    return res


def _program_env():
    # The programs import the trainscope this test imports: the installed package (CI), or python/
    # of a development build.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(trainscope.__file__))]
        + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("TRAINSCOPE_CONFIG", None)
    env.pop("SMDEBUG_CONFIG_FILE_PATH", None)
    env["PYTHONFAULTHANDLER"] = "1"  # a hung program prints its stacks when sent SIGABRT
    return env


def _communicate(proc, timeout):
    """The process's output; a process still running after `timeout` s is sent SIGABRT (Python
    prints every thread's stack) and then killed."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        out = (out or b"") + f"\n[killed after {timeout} s]".encode()
    return out.decode(errors="replace")


class ProgramRun:
    """One program run with its own hook (standalone), its rules evaluated beside it with
    trainscope.rules.invoke_rule."""

    mode = "standalone"

    def __init__(self, entry, root):
        self.entry = entry
        self.name = entry["program"][:-3]
        self.out_dir = os.path.join(root, self.mode, self.name)
        self.trial = os.path.normpath(os.path.join(self.out_dir, entry["trial"]))
        self.results = {}
        self.returncode = None
        self.stop_request = None
        self.output = ""
        self.wall_s = None

    def run(self):
        os.makedirs(self.out_dir, exist_ok=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, os.path.join(PROGRAMS, self.entry["program"]), "--out", self.out_dir]
            + self.entry["args"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_program_env(),
            cwd=self.out_dir)
        stop = threading.Event()
        threads = {}
        for rule in sorted(BUILTIN_RULES):
            params = rule_params(self.entry, rule, self.out_dir)
            box = {}
            t = threading.Thread(
                target=lambda r=rule, p=params, b=box: b.update(
                    res=_evaluate(r, self.trial, p, stop)),
                name=f"{self.name}:{rule}", daemon=True)
            t.start()
            threads[rule] = (t, box)
        self.output = _communicate(proc, PROGRAM_TIMEOUT_S)
        self.returncode = proc.returncode
        stop.set()
        for rule, (t, box) in threads.items():
            t.join(timeout=120)
            self.results[rule] = box.get("res") or RuleResult(rule)
            if t.is_alive():
                self.results[rule].error = "the rule did not finish within 120 s of the training"
        self.wall_s = time.monotonic() - t0
        return self

    def latency_s(self, rule):
        """Seconds from the index file of the first finding's step to the finding."""
        res = self.results[rule]
        if not res.fired or res.found_at is None or res.first_step is None:
            return None
        written = _index_file_time(self.trial, res.first_step)
        return None if written is None else round(res.found_at - written, 3)


def trainscope_bin():
    for path in (os.environ.get("TRAINSCOPE_BIN"), os.path.join(REPO, "build", "bin", "trainscope"),
                 shutil.which("trainscope")):
        if path and os.access(path, os.X_OK):
            return path
    return None


class CliRun(ProgramRun):
    """One program run under `trainscope run` with every applicable rule (the debugging rules in
    one worker, the profiler rules in another);
    the results come from the command's --json summary."""

    mode = "trainscope-run"

    def run(self):
        parent = os.path.dirname(self.out_dir)
        os.makedirs(parent, exist_ok=True)
        rules = [{"name": r, "parameters": rule_params(self.entry, r, self.out_dir)}
                 for r in sorted(BUILTIN_RULES) if r != "SimilarAcrossRuns"]
        config = self.out_dir + ".rules.json"
        with open(config, "w") as f:
            json.dump(rules, f)
        t0 = time.monotonic()
        # A healthy program runs with the stop action on every rule, as a cautious user would
        # attach it: a false alarm would stop it (test_healthy_run_never_stopped_...).
        stop = ["--action", "stop"] if self.entry["healthy"] else []
        proc = subprocess.Popen(
            [trainscope_bin(), "run", "--rules", "none", "--rules-config", config, "--no-system",
             *stop, "--json", "-o", self.out_dir, "--", sys.executable,
             os.path.join(PROGRAMS, self.entry["program"]), "--out", self.out_dir]
            + self.entry["args"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_program_env(), cwd=parent)
        err = []
        reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
        reader.start()
        self.output = _communicate(proc, PROGRAM_TIMEOUT_S)
        reader.join(timeout=10)
        self.wall_s = time.monotonic() - t0
        stderr = (err[0] if err else b"").decode(errors="replace")
        try:
            summary = json.loads(self.output[self.output.index("{"):])
        except ValueError:
            self.returncode = proc.returncode if proc.returncode else -1
            self.output += stderr
            return self
        # `trainscope run` exits with a code saying what the rules found; the training's own is
        # in the summary.
        self.returncode = summary.get("training_exit_code")
        self.stop_request = summary.get("stop_request")
        self.output = stderr[-5000:]
        for st in summary.get("rules", []):
            res = RuleResult(st["rule"])
            if st.get("status") == "Error":
                res.error = st.get("message")
            if st.get("status") == "IssuesFound" and st.get("first_finding"):
                res.findings = [st["first_finding"]]
                res.found_at = st["first_finding"].get("time_us", 0) / 1e6 or None
            self.results[st["rule"]] = res
        for rule in BUILTIN_RULES:
            if rule not in self.results:
                self.results[rule] = RuleResult(rule)
                self.results[rule].not_applicable = "not run under trainscope run"
        return self


def _run_all(runs):
    with ThreadPoolExecutor(PARALLEL_PROGRAMS) as pool:
        return list(pool.map(lambda r: r.run(), runs))


def _write_report(done):
    report = os.environ.get("TRAINSCOPE_TRAINING_REPORT")
    if not report:
        return
    rows = []
    if os.path.exists(report):
        with open(report) as f:
            rows = [r for r in json.load(f) if r["mode"] not in {d.mode for d in done}]
    for r in done:
        # One row per program run (rule null), so a report knows which programs ran.
        rows.append({"mode": r.mode, "program": r.entry["program"],
                     "healthy": r.entry["healthy"], "rule": None,
                     "program_wall_s": round(r.wall_s, 1)})
        for rule, res in sorted(r.results.items()):
            if res.fired or res.error:
                rows.append({
                    "mode": r.mode, "program": r.entry["program"], "healthy": r.entry["healthy"],
                    "problem": r.entry["problem"], "rule": rule,
                    "expected": rule in r.entry.get("expect", {}),
                    "first_step": res.first_step, "latency_s": r.latency_s(rule),
                    "findings": len(res.findings), "error": res.error,
                    "first_finding": res.findings[0] if res.findings else None,
                    "program_wall_s": round(r.wall_s, 1)})
    with open(report, "w") as f:
        json.dump(rows, f, indent=1)


VIA_RUN_ALL = os.environ.get("TRAINSCOPE_TRAINING_VIA_RUN") == "all"
RUN_PROGRAMS = sorted(p for p, e in ENTRIES.items()
                      if e["trial"] == "." and (VIA_RUN_ALL or e.get("via_run")))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("training"))
    order = sorted(ENTRIES.values(), key=lambda e: (e["healthy"], e["program"]))
    done = _run_all([ProgramRun(e, root) for e in order])
    _write_report(done)
    return {r.entry["program"]: r for r in done}


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    if trainscope_bin() is None:
        pytest.skip("no trainscope executable (build the CLI: cmake --build build --target "
                    "trainscope_cli, or set TRAINSCOPE_BIN)")
    root = str(tmp_path_factory.mktemp("training_run"))
    done = _run_all([CliRun(ENTRIES[p], root) for p in RUN_PROGRAMS])
    _write_report(done)
    return {r.entry["program"]: r for r in done}


def _describe(res):
    if not res.findings:
        return res.error or res.not_applicable or "no finding"
    f = res.findings[0]
    return f"step {f.get('step')}: {f.get('tensor', '')} {f.get('explanation', '')}"


def test_manifest_names_every_rule_somewhere():
    expected = {r for e in ENTRIES.values() for r in e.get("expect", {})}
    assert expected == set(BUILTIN_RULES), set(BUILTIN_RULES) ^ expected
    assert sum(e["healthy"] for e in ENTRIES.values()) >= 4


def _check_ran(r):
    assert r.returncode == 0, (f"{r.entry['program']} ({r.mode}) exited {r.returncode}:\n"
                               + r.output[-3000:])
    errors = {rule: res.error for rule, res in r.results.items() if res.error}
    assert not errors, errors


def _check_fires(r, rule, max_step):
    _check_ran(r)
    res = r.results[rule]
    assert res.fired, (
        f"{rule} did not fire on {r.entry['program']} ({r.mode}; {r.entry['problem']}): "
        f"{_describe(res)}; rules that fired: {sorted(x for x, y in r.results.items() if y.fired)}")
    assert res.first_step is not None and res.first_step <= max_step, (
        f"{rule} fired on {r.entry['program']} ({r.mode}) at step {res.first_step}, later than "
        f"step {max_step}: " + _describe(res))


def _check_silent(r, rule):
    _check_ran(r)
    res = r.results[rule]
    assert not res.fired, (
        f"{rule} fired on the healthy run {r.entry['program']} ({r.mode}, {len(res.findings)} "
        "findings): " + _describe(res))


@pytest.mark.parametrize("program", sorted(ENTRIES))
def test_program_runs_and_rules_evaluate(runs, program):
    _check_ran(runs[program])


_CASES = [(p, rule) for p, e in sorted(ENTRIES.items()) for rule in sorted(e.get("expect", {}))]


@pytest.mark.parametrize("program,rule", _CASES)
def test_expected_rule_fires_in_time(runs, program, rule, request):
    if rule in NEEDS_CLOCK:
        request.applymarker(pytest.mark.xfail(
            reason=f"{rule} needs a rule runner that ticks on a clock while no step comes; "
                   "trainscope.rules.invoke_rule only asks rules when a step arrives (this "
                   "program also runs under `trainscope run`, where it must fire)",
            strict=False))
    exp = ENTRIES[program]["expect"][rule]
    if exp.get("known_miss"):
        request.applymarker(pytest.mark.xfail(reason="known miss: " + exp["known_miss"],
                                              strict=False))
    _check_fires(runs[program], rule, exp["max_step"])


_HEALTHY = [(p, rule) for p, e in sorted(ENTRIES.items()) if e["healthy"]
            for rule in sorted(BUILTIN_RULES)]


def _mark_known(request, program, rule):
    known = ENTRIES[program].get("known_false_alarms", {}).get(rule)
    if known:
        request.applymarker(pytest.mark.xfail(reason=f"known false alarm: {known}", strict=False))


@pytest.mark.parametrize("program,rule", _HEALTHY)
def test_rule_silent_on_healthy_run(runs, program, rule, request):
    _mark_known(request, program, rule)
    _check_silent(runs[program], rule)


# ---- under `trainscope run` ---------------------------------------------------------------------

_RUN_CASES = [(p, rule) for p in RUN_PROGRAMS for rule in sorted(ENTRIES[p].get("expect", {}))]


@pytest.mark.parametrize("program,rule", _RUN_CASES)
def test_expected_rule_fires_under_trainscope_run(cli_runs, program, rule, request):
    exp = ENTRIES[program]["expect"][rule]
    if exp.get("run_known_miss"):
        request.applymarker(pytest.mark.xfail(reason="known miss: " + exp["run_known_miss"],
                                              strict=False))
    _check_fires(cli_runs[program], rule, exp.get("run_max_step", exp["max_step"]))


_RUN_HEALTHY = [(p, rule) for p in RUN_PROGRAMS if ENTRIES[p]["healthy"]
                for rule in sorted(BUILTIN_RULES) if rule != "SimilarAcrossRuns"]


@pytest.mark.parametrize("program,rule", _RUN_HEALTHY)
def test_rule_silent_on_healthy_run_under_trainscope_run(cli_runs, program, rule, request):
    _mark_known(request, program, rule)
    _check_silent(cli_runs[program], rule)


@pytest.mark.parametrize("program", [p for p in RUN_PROGRAMS if ENTRIES[p]["healthy"]])
def test_healthy_run_never_stopped_under_trainscope_run(cli_runs, program):
    """`--action stop` on every rule never stops a healthy training."""
    r = cli_runs[program]
    assert r.stop_request is None, (
        f"trainscope run --action stop stopped the healthy {program}: {r.stop_request}")
    _check_ran(r)

