"""The validation corpus's report: per rule, how it did on tests/training/programs.

    TRAINSCOPE_TRAINING_REPORT=report.json python -m pytest tests/training/test_rules_on_training.py
    python tests/training/corpus_report.py report.json [--mode standalone] [--json]

Reads the rows test_rules_on_training.py writes (one per rule that fired or failed, per program
and mode) and the manifest, and prints per rule:
- caught: faulty programs whose expected rule it is and on which it fired;
- missed: faulty programs whose expected rule it is and on which it did not fire;
- late: caught, but after the manifest's max_step (run_max_step under `trainscope run`);
- false alarms: healthy programs on which it fired;
- also fired: faulty programs on which it fired without being their expected rule (a symptom
  of the same fault, ordered under the root cause by the diagnosis, or a wrong finding: read
  them);
- first step: the median global step of its first finding on the programs it caught;
misses and false alarms the manifest records (known_miss, known_false_alarms, with their
evidence) are marked known.
Markdown by default (the README's rules section quotes it); --json for scripts.
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# --mode's names for the modes test_rules_on_training.py writes in its rows.
ROW_MODE = {"standalone": "standalone", "run": "trainscope-run"}


def build(rows, manifest, mode):
    entries = {e["program"]: e for e in manifest["programs"]}
    row_mode = ROW_MODE[mode]
    fired = {(r["program"], r["rule"]): r for r in rows
             if r["mode"] == row_mode and r["rule"] and not r.get("error")}
    programs = sorted({r["program"] for r in rows if r["mode"] == row_mode})
    per_rule = {}

    def row(rule):
        return per_rule.setdefault(rule, {"rule": rule, "caught": [], "missed": [], "late": [],
                                          "false_alarms": [], "also_fired": [], "known": [],
                                          "steps": []})

    for prog in programs:
        e = entries.get(prog)
        if e is None:
            continue
        expect = e.get("expect", {})
        for rule, spec in expect.items():
            r = fired.get((prog, rule))
            if r is None:
                row(rule)["missed"].append(prog)
                if spec.get("run_known_miss" if mode == "run" else "known_miss"):
                    row(rule)["known"].append(prog)
                continue
            row(rule)["caught"].append(prog)
            row(rule)["steps"].append(r["first_step"])
            limit = spec.get("run_max_step" if mode == "run" else "max_step", spec.get("max_step"))
            if limit is not None and r["first_step"] is not None and r["first_step"] > limit:
                row(rule)["late"].append(prog)
        for (p, rule), r in fired.items():
            if p != prog or rule in expect:
                continue
            row(rule)["false_alarms" if e["healthy"] else "also_fired"].append(prog)
            if e["healthy"] and rule in e.get("known_false_alarms", {}):
                row(rule)["known"].append(prog)
    out = []
    for rule in sorted(per_rule):
        r = per_rule[rule]
        steps = [s for s in r.pop("steps") if s is not None]
        r["median_first_step"] = statistics.median(steps) if steps else None
        out.append(r)
    healthy = sum(1 for p in programs if p in entries and entries[p]["healthy"])
    return {"mode": mode, "healthy_programs": healthy,
            "faulty_programs": sum(1 for p in programs if p in entries) - healthy, "rules": out}


def markdown(report):
    lines = [f"{report['healthy_programs']} healthy and {report['faulty_programs']} faulty "
             f"programs ({report['mode']}):", "",
             "| rule | caught | missed | late | false alarms | also fired | median first step |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in report["rules"]:
        step = "" if r["median_first_step"] is None else f"{r['median_first_step']:g}"
        lines.append(f"| {r['rule']} | {len(r['caught'])} | {len(r['missed'])} | "
                     f"{len(r['late'])} | {len(r['false_alarms'])} | {len(r['also_fired'])} | "
                     f"{step} |")
    named = [(r["rule"], k, p) for r in report["rules"] for k in ("missed", "late", "false_alarms")
             for p in r[k]]
    if named:
        lines.append("")
        for rule, kind, prog in named:
            known = " (known: the manifest gives the evidence)" if prog in dict(
                (r["rule"], r) for r in report["rules"])[rule]["known"] else ""
            lines.append(f"- {rule} {kind.replace('_', ' ')}: {prog}{known}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", help="the file TRAINSCOPE_TRAINING_REPORT named")
    ap.add_argument("--mode", default="standalone", choices=["standalone", "run"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with open(args.report) as f:
        rows = json.load(f)
    with open(os.path.join(HERE, "programs", "manifest.json")) as f:
        manifest = json.load(f)
    report = build(rows, manifest, args.mode)
    print(json.dumps(report, indent=1) if args.json else markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
