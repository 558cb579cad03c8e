#!/usr/bin/env bash
# Runs smdebug's own tests against trainscope and beside smdebug itself, and prints, per test
# file, how many tests each passed.
#
#   scripts/smdebug-suite.sh SMDEBUG_SRC [TEST_DIR_OR_FILE...]
#
# SMDEBUG_SRC is a source checkout of awslabs/sagemaker-debugger (only its tests/ folder is
# used; it is copied to a scratch folder, so the checkout is not changed and its smdebug/ source
# is never imported). The default tests are tests/pytorch tests/core tests/analysis.
#
# - "smdebug" side: `python -m pytest FILE` with the smdebug installed in the environment (the
#   venv has smdebug 1.0.34 as a test oracle); skipped, shown as "-", if none is installed.
# - "trainscope" side: `python -m trainscope.smdebug --force -m pytest FILE`: every
#   `import smdebug...` resolves to trainscope's alias modules (docs/compat.md).
#
# Environment: PYTHON (default .venv/bin/python), SMDEBUG_SUITE_NUMPY2_COMPAT (1, the default:
# smdebug runs with the repository's numpy-2 patch of its writer; 0: as installed),
# SMDEBUG_SUITE_SIDES (default "smdebug trainscope"; a side left out keeps the results of an
# earlier run in the same SMDEBUG_SUITE_WORK; "none" only prints the table),
# SMDEBUG_SUITE_TIMEOUT (seconds per file and side, default 1200: test_hook_save_scalar_pytorch.py,
# 16 trainings, took 340 s on a busy 2-core machine), SMDEBUG_SUITE_WORK (scratch folder, default
# a new one under /tmp; the junit XML and logs of every run stay there). Exit status 0 when the
# table was printed.
set -euo pipefail

usage() { echo "usage: $0 SMDEBUG_SRC [TEST_DIR_OR_FILE...]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
SRC=$(cd "$1" && pwd) || usage
shift
[[ -d "$SRC/tests" ]] || { echo "$SRC has no tests/ folder: pass a sagemaker-debugger checkout" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
TIMEOUT=${SMDEBUG_SUITE_TIMEOUT:-1200}
WORK=${SMDEBUG_SUITE_WORK:-$(mktemp -d /tmp/smdebug-suite.XXXXXX)}
NUMPY2_COMPAT=${SMDEBUG_SUITE_NUMPY2_COMPAT:-1}
# smdebug 1.0.34's writer calls ndarray.tostring(), gone in numpy 2.3: on the smdebug side the
# repository's outside patch (tests/data/smdebug/smdebug_numpy2_compat.py) is installed first,
# so smdebug is measured as it runs under the numpy it was written for.
NUMPY2_LAUNCH='import sys; sys.path.insert(0, sys.argv.pop(1)); import smdebug_numpy2_compat as c; c.install(); import pytest; sys.exit(pytest.main(sys.argv[1:]))'
TARGETS=("$@")
[[ ${#TARGETS[@]} -gt 0 ]] || TARGETS=(tests/pytorch tests/core tests/analysis)

SIDES=${SMDEBUG_SUITE_SIDES:-smdebug trainscope}
rm -rf "$WORK/tests"
for side in $SIDES; do rm -rf "$WORK/results/$side"; done
mkdir -p "$WORK/results/smdebug" "$WORK/results/trainscope"
cp -r "$SRC/tests" "$WORK/tests"

cd "$WORK"
FILES=()
for t in "${TARGETS[@]}"; do
  if [[ -d "$t" ]]; then
    while IFS= read -r f; do FILES+=("$f"); done < <(find "$t" -name 'test_*.py' | sort)
  elif [[ -f "$t" ]]; then
    FILES+=("$t")
  else
    echo "no $t in $SRC" >&2; exit 2
  fi
done

HAVE_SMDEBUG=1
if ! (cd / && "$PY" -c 'import smdebug' 2>/dev/null); then
  HAVE_SMDEBUG=0
  echo "no smdebug installed for $PY: the smdebug column is left empty" >&2
fi

run_side() {  # side file
  local side=$1 file=$2 key
  key=$(echo "$file" | tr '/' '_')
  local cmd=("$PY")
  if [[ $side == trainscope ]]; then
    cmd+=(-m trainscope.smdebug --force -m pytest)
  elif [[ $NUMPY2_COMPAT == 1 ]]; then
    cmd+=(-c "$NUMPY2_LAUNCH" "$ROOT/tests/data/smdebug")
  else
    cmd+=(-m pytest)
  fi
  cmd+=( -q -rfE --tb=short -p no:cacheprovider -p no:warnings --junitxml="results/$side/$key.xml" "$file")
  echo "[$side] $file" >&2
  timeout -k 10 "$TIMEOUT" "${cmd[@]}" >"results/$side/$key.log" 2>&1 || true
}

for f in "${FILES[@]}"; do
  [[ $HAVE_SMDEBUG == 1 && " $SIDES " == *" smdebug "* ]] && run_side smdebug "$f"
  [[ " $SIDES " == *" trainscope "* ]] && run_side trainscope "$f"
done

"$PY" - "$WORK/results" "${FILES[@]}" <<'EOF'
import os
import sys
import xml.etree.ElementTree as ET

results, files = sys.argv[1], sys.argv[2:]


def outcomes(side, file):
    """{test id: 'pass' | 'fail' | 'skip'}, or None if the run left no report (crash, timeout)."""
    path = os.path.join(results, side, file.replace("/", "_") + ".xml")
    if not os.path.exists(path):
        return None
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        # A file that fails to import is one case without a class: named after the file.
        name = (f"{case.get('classname')}::{case.get('name')}" if case.get("classname")
                else f"{file} (import)")
        kinds = {child.tag for child in case}
        out[name] = ("fail" if kinds & {"failure", "error"} else
                     "skip" if "skipped" in kinds else "pass")
    return out


def cell(res):
    if res is None:
        return "no report"
    passed = sum(v == "pass" for v in res.values())
    failed = sum(v == "fail" for v in res.values())
    return f"{passed} pass / {failed} fail"


rows, only_smdebug, only_trainscope = [], [], []
tot = {"smdebug": 0, "trainscope": 0, "tests": 0}
for f in files:
    sm, ts = outcomes("smdebug", f), outcomes("trainscope", f)
    names = set(sm or {}) | set(ts or {})
    tot["tests"] += len(names)
    for side, res in (("smdebug", sm), ("trainscope", ts)):
        tot[side] += sum(v == "pass" for v in (res or {}).values())
    for n in sorted(names):
        a, b = (sm or {}).get(n), (ts or {}).get(n)
        if a == "pass" and b != "pass":
            only_smdebug.append(n)
        elif b == "pass" and a != "pass" and sm is not None:
            only_trainscope.append(n)
    rows.append((f, len(names), "-" if sm is None and not os.listdir(os.path.join(results, "smdebug"))
                 else cell(sm), cell(ts)))

w = max(len(r[0]) for r in rows)
print("tests: test ids seen on either side (a file that fails to import counts as one)")
print(f"{'file':<{w}}  {'tests':>5}  {'smdebug':<18}  trainscope")
for f, n, a, b in rows:
    print(f"{f:<{w}}  {n:>5}  {a:<18}  {b}")
print(f"{'total passed':<{w}}  {tot['tests']:>5}  {tot['smdebug']:<18}  {tot['trainscope']}")
if only_smdebug:
    print("\npassed by smdebug only:")
    print("\n".join("  " + n for n in only_smdebug))
if only_trainscope:
    print("\npassed by trainscope only:")
    print("\n".join("  " + n for n in only_trainscope))
print(f"\nlogs and junit XML: {results}")
EOF
