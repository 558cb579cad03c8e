"""The merged timeline names what each rule found: a real training under `trainscope run` with a
rule that fires, then `trainscope timeline`; each finding of the rule's events.jsonl is in the
merged trace as "<Rule>: <explanation>", at its time, with the finding as the event's args."""

import json
import subprocess
import sys

import pytest

from profiler_util import trainscope_cli
from test_cli_run import TINY_TRAINING, _env

CLI = trainscope_cli()
pytestmark = pytest.mark.skipif(CLI is None,
                                reason="no trainscope command: build it or pip install .")


def test_the_merged_timeline_shows_each_findings_explanation(tmp_path):
    trial = tmp_path / "trial"
    # Every mean |gradient| of a small network is below 100: the rule fires at its first step.
    run = subprocess.run(
        [CLI, "run", "--out", str(trial), "--rules", "none", "--no-system", "--json",
         "--rule", "VanishingGradient:threshold=100", "--", sys.executable, "-c", TINY_TRAINING],
        capture_output=True, text=True, env=_env(), timeout=300)
    assert run.returncode == 3, run.stderr[-3000:]  # the rule found issues
    lines = (trial / "rule-output" / "VanishingGradient" / "events.jsonl").read_text().splitlines()
    findings = [json.loads(line) for line in lines]
    assert findings and all(f["explanation"] for f in findings)

    out = tmp_path / "merged.json"
    merged = subprocess.run([CLI, "timeline", str(trial), "-o", str(out), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert json.loads(merged.stdout)["rule_events"] == len(findings)
    doc = json.loads(out.read_text())
    base = doc["otherData"]["start_time_since_epoch_in_micros"]
    instants = [e for e in doc["traceEvents"] if e.get("cat") == "rule" and e["ph"] == "i"]
    assert sorted(e["name"] for e in instants) == sorted(
        "VanishingGradient: " + f["explanation"] for f in findings)
    for e in instants:
        assert base + e["ts"] == e["args"]["time_us"]
        assert "VanishingGradient: " + e["args"]["explanation"] == e["name"]
        assert e["name"] != "VanishingGradient: IssuesFound"
