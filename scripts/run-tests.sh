#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root): sets everything up
# (scripts/setup.sh), then runs
#   1. the C++ tests (ctest) of the normal build;
#   2. every fuzz target over its committed corpus (clang + libFuzzer, build-fuzz/);
#   3. the Python tests (pytest) against the installed package, with real PyTorch runs;
#   and with TRAINSCOPE_SANITIZERS=1 also
#   4. the C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/);
#   5. the threaded suites (writer, reader, rules, actions, profiler) under ThreadSanitizer.
# Exits non-zero if anything failed. TRAINSCOPE_QUICK=1 skips the fuzz build.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh || { echo "setup failed"; exit 1; }
PY="$ROOT/.venv/bin/python"
# The C++ tests start loopback servers (HTTP, SMTP) and parsers with this Python.
export TRAINSCOPE_PYTHON="$PY"
JOBS=$(nproc)
passed=0
failed=0
failures=()
suite() {  # suite NAME COMMAND...
  local name=$1
  shift
  printf '\n== tests: %s\n' "$name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
  fi
}
sanitized_build() {  # sanitized_build DIR SANITIZER [ctest regex]
  local dir=$1 san=$2 regex=${3:-}
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCOPE_SANITIZE="$san" \
    -DTRAINSCOPE_BUILD_BENCH=OFF >/dev/null &&
    cmake --build "$dir" -j"$JOBS" &&
    ctest --test-dir "$dir" -j"$JOBS" --output-on-failure ${regex:+-R "$regex"}
}
fuzz_replay() {  # builds the libFuzzer targets and replays each committed corpus once
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRAINSCOPE_BUILD_FUZZ=ON -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF >/dev/null &&
    cmake --build build-fuzz -j"$JOBS" --target record_fuzz index_fuzz || return 1
  local t
  for t in record_fuzz index_fuzz; do
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "build-fuzz/fuzz/$t" -runs=0 "fuzz/corpus/$t" \
      || return 1
  done
}

suite "C++ unit tests" ctest --test-dir build -j"$JOBS" --output-on-failure
# The house style (scripts/check-style.sh): ruff, clang-tidy's naming and bug checks over src/,
# Clang's thread-safety analysis, clang-format on the C/C++ files changed against origin/main.
suite "style: ruff (Python)" bash scripts/check-style.sh python
# design.md's module order over every #include (scripts/check-layers.py).
suite "include order (module layers)" "$PY" scripts/check-layers.py
if [[ "${TRAINSCOPE_QUICK:-0}" != 1 ]] && compgen -G "fuzz/*_fuzz.cc" >/dev/null; then
  suite "fuzz corpus replay" fuzz_replay
fi
if [[ "${TRAINSCOPE_SANITIZERS:-0}" == 1 ]]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  suite "C++ tests under ASan+UBSan" sanitized_build build-asan address
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp
  suite "C++ tests under TSan" sanitized_build build-tsan thread '^(Writer|Trial|Hook|Rule|Runner|Notifier|Webhook|Email|Prometheus|Sampler|Timeline|StopSignal)'
fi
if [[ -d tests/python ]]; then
  suite "Python tests" "$PY" -m pytest -q tests/python -p no:cacheprovider
  suite "Python training programs" "$PY" -m pytest -q tests/training -p no:cacheprovider
fi
printf '\n== tests: %d suite(s) ok, %d suite(s) failing %s\n' "$passed" "$failed" \
  "${failures[*]:+(${failures[*]})}"
[[ $failed -eq 0 ]]
