#!/usr/bin/env bash
# The GPU paths on a machine with an NVIDIA GPU and a CUDA build of PyTorch, in one run:
#   1. builds and installs the package for this Python (the extension, the on-device statistics
#      module against this torch, the native command);
#   2. the CUDA tests (tests/python/test_cuda_capture.py: statistics on the device, raw values
#      through pinned memory, no synchronisation on a step that saves nothing) and the device
#      statistics' tests;
#   3. a CUDA training under `trainscope run --rules all`: the sampler's GPU readings through the
#      real NVML (per GPU and dimension: count, first, last) and the GPU rules' verdicts;
#   4. bench/run_cost.py on the GPU (--device cuda, 2000 steps): the whole run's cost beside the
#      plain training.
#
#   bash bench/gpu_check.sh [ROUNDS]          # ROUNDS of run_cost (default 2)
#
# PYTHON picks the interpreter (default python3, the one with torch); CMAKE_ARGS passes options to
# the build (e.g. -Dnlohmann_json_DIR=... where nlohmann_json is not installed system-wide); CXX
# the compiler, which must link libstdc++ dynamically (a distribution's g++: a copy of libstdc++
# linked into the extension crashes in std::regex once torch has loaded the system's, and the
# build refuses it, README);
# BUNDLE=DIR uses what bench/gpu_bundle.sh made (for a machine that cannot install them):
# its build tools' wheels, installed into a scratch folder, and its headers, CMake packages and
# libraries. OUT, if set, receives the logs and the trial's status. Each part prints a `== gpu_check:` line;
# the exit status is the number of parts that failed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PYTHON:-python3}
ROUNDS=${1:-2}
LOGS=${OUT:-$(mktemp -d)}
WORK=$(mktemp -d)
failed=0
part() {  # part NAME COMMAND...
  local name=$1 t0=$SECONDS
  shift
  printf '\n== gpu_check: %s\n' "$name"
  if "$@"; then
    printf '== gpu_check: %s ok (%d s)\n' "$name" $((SECONDS - t0))
  else
    printf '== gpu_check: %s FAILED (%d s)\n' "$name" $((SECONDS - t0))
    failed=$((failed + 1))
  fi
}

if [[ -n ${BUNDLE:-} ]]; then
  B=$(cd "$BUNDLE" && pwd)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" "$B"/whl/*.whl ||
    { echo "gpu_check: could not install $B/whl's wheels"; exit 1; }
  export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
  export CMAKE_ARGS="-Dnlohmann_json_DIR=$B/share/cmake/nlohmann_json -DCLI11_DIR=$B/share/cmake/CLI11 ${CMAKE_ARGS:-}"
  export PKG_CONFIG_PATH="$B/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LIBRARY_PATH="$B/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

nvidia-smi -L || echo "gpu_check: nvidia-smi did not answer"
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'

install() {  # a user's install (no -Werror there); prints the compiler's warnings, if any
  CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$PY" -m pip install -v --no-build-isolation --no-deps \
    --config-settings build-dir="$WORK/build" . >"$LOGS/install.log" 2>&1 ||
    { tail -n 40 "$LOGS/install.log"; return 1; }
  echo "compiler warnings: $(grep -c 'warning:' "$LOGS/install.log")"
  grep -A3 'warning:' "$LOGS/install.log" | head -n 60
  (cd "$WORK" && "$PY" -m trainscope.cli info) &&
    (cd "$WORK" && "$PY" -c 'import trainscope.pytorch, trainscope._torch_stats')
}
part "build and install" install
((failed == 0)) || { echo "gpu_check: the package did not install; nothing else can run"; exit 1; }

cuda_tests() {
  "$PY" -m pytest -q -p no:cacheprovider tests/python/test_cuda_capture.py \
    tests/python/test_device_stats.py 2>&1 | tee "$LOGS/cuda_tests.log"
}
part "CUDA tests" cuda_tests

gpu_run() {  # a training on the GPU under the debugger, every rule, the sampler every 100 ms
  local trial=$WORK/trial cli
  cli=$("$PY" -c 'from trainscope.cli import native_cli; print(native_cli())')
  "$cli" run --out "$trial" --rules all --system-interval-ms 100 --json-out "$LOGS/run.json" -- \
    "$PY" bench/run_cost_train.py --model cnn --steps 1500 --device cuda --hook \
    >"$LOGS/run.log" 2>&1
  echo "trainscope run: exit $? (3: findings)"
  tail -n 5 "$LOGS/run.log"
  "$cli" status "$trial" --json >"$LOGS/status.json"
  "$PY" - "$trial" "$LOGS/status.json" <<'EOF'
import json, pathlib, sys
trial, status = pathlib.Path(sys.argv[1]), json.load(open(sys.argv[2]))
gpu = {}
for f in sorted((trial / "system").rglob("*.json")):
    for line in f.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("Type") == "gpu":
            gpu.setdefault((rec["Name"], rec["Dimension"]), []).append(rec["Value"])
for (name, dim), v in sorted(gpu.items()):
    print(f"  {name} {dim}: {len(v)} readings, first {v[0]}, last {v[-1]}, max {max(v)}")
for r in status["rules"]:  # every rule's verdict, with what it saw
    seen = (r.get("first_finding") or {}).get("explanation") or r.get("message") or ""
    print(f"  {r['rule']}: {r['status']}: {seen[:240]}")
sys.exit(0 if gpu else 1)
EOF
}
part "CUDA training under trainscope run (NVML, GPU rules)" gpu_run

# 2000 steps: a GPU runs the CPU's 200 in under a second, which the start of Python would hide.
# RUN_COST_ARGS adds options (e.g. --no-breakdown --fixed-steps 0 for a quick look).
# shellcheck disable=SC2086
part "run_cost on the GPU" "$PY" bench/run_cost.py --models cnn,lstm --rounds "$ROUNDS" \
  --steps 2000 --device cuda --tmp "$WORK/run_cost" ${RUN_COST_ARGS:-}

rm -rf "$WORK"
printf '\n== gpu_check: %d part(s) failed\n' "$failed"
exit "$failed"
