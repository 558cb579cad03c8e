#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root): sets everything up
# (scripts/setup.sh), then runs
#   1. the C++ tests (ctest) of the normal build;
#   2. every fuzz target over its committed corpus, then for a few seconds each (clang +
#      libFuzzer, build-fuzz/), and the directory-damage fuzzer over a real trial;
#   3. the C++ tests of the threaded modules under ThreadSanitizer (build-tsan/: the test
#      executables only, not the command; the data-driven rule cases and parser sweeps, which
#      run on one thread, are left out);
#   4. the Python tests (pytest) against the installed package, with real PyTorch runs.
# TRAINSCOPE_SANITIZERS picks the sanitizer suites: thread (the default, 3. above), all (3. and
# every C++ test under AddressSanitizer + UndefinedBehaviorSanitizer, build-asan/: the
# nightly-style run, too long for CI's budget with TSan beside it), address (ASan+UBSan only),
# none or 0 (neither). 1 means all, as it did when both were opt-in. Cold, on 2 idle cores
# (README, Development, has the figures): the TSan build about 8.5 minutes and its tests under 1;
# ASan+UBSan about 24 minutes of build (48 CPU-minutes, measured) and 3 of tests. The fuzz
# build already runs every reader's fuzzer under ASan+UBSan.
# Exits non-zero if anything failed. TRAINSCOPE_QUICK=1 skips the fuzz build.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
case "${TRAINSCOPE_SANITIZERS:-thread}" in
  thread) tsan=1 asan=0 ;;
  all | 1) tsan=1 asan=1 ;;
  address) tsan=0 asan=1 ;;
  none | 0) tsan=0 asan=0 ;;
  *)
    echo "TRAINSCOPE_SANITIZERS=$TRAINSCOPE_SANITIZERS: expected thread, all, address or none"
    exit 2
    ;;
esac
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
sanitized_build() {  # sanitized_build DIR SANITIZER [CTEST_EXCLUDE_REGEX [TARGET...]]
  local dir=$1 san=$2 exclude=${3:-} build=(cmake --build "$1" -j"$JOBS")
  (($# > 3)) && build+=(--target "${@:4}")
  # -O1 with line tables (-g1), as the sanitizers' manuals advise: the TSan build took 1690
  # CPU-seconds at -O2 -g and 997 at -O1 -g1 (its tests 48 s and 61 s of wall), reports keep
  # their files and lines.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCOPE_SANITIZE="$san" \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DTRAINSCOPE_BUILD_BENCH=OFF >/dev/null &&
    "${build[@]}" &&
    ctest --test-dir "$dir" -j"$JOBS" --output-on-failure ${exclude:+-E "$exclude"}
}
# Under TSan: the test executables of every module with threads (the command is not built; its
# tests are Python's), less the tests that run on one thread and only compute: the data-driven
# rule cases and the parsers' mutation and truncation sweeps (ProfilerRules' two-hour simulation
# alone runs for more than 7 minutes under TSan).
TSAN_TARGETS=(core_tests store_tests capture_tests profiler_tests rules_tests actions_tests
  supervisor_tests)
TSAN_EXCLUDE='^(Cases/|ProfilerRules\.|ParserRobustnessTest\.|ReaderToleranceTest\.)'
FUZZ_TARGETS=(record_fuzz index_fuzz collections_fuzz trial_fuzz stop_signal_fuzz rule_status_fuzz
  rule_events_fuzz event_log_fuzz hook_config_fuzz profiler_config_fuzz system_metrics_fuzz
  framework_timeline_fuzz timeline_merge_fuzz file_names_fuzz incomplete_marker_fuzz)
fuzz_build() {  # the libFuzzer targets (clang, ASan + UBSan), in build-fuzz/
  # -O1 with line tables only: about half the compile time of -O2 -g, stack traces keep lines.
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -gline-tables-only" -DTRAINSCOPE_BUILD_FUZZ=ON \
    -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF >/dev/null &&
    cmake --build build-fuzz -j"$JOBS" --target "${FUZZ_TARGETS[@]}"
}
fuzz_replay() {  # replays each committed corpus once: a crash fixed stays fixed
  local t
  for t in "${FUZZ_TARGETS[@]}"; do
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "build-fuzz/fuzz/$t" -runs=0 "fuzz/corpus/$t" \
      || return 1
  done
}
fuzz_run() {  # each target for TRAINSCOPE_FUZZ_SECONDS (5), seeded; prints its coverage
  local t secs=${TRAINSCOPE_FUZZ_SECONDS:-5} new log rc=0
  for t in "${FUZZ_TARGETS[@]}"; do
    new=$(mktemp -d) log=$(mktemp)
    # New inputs go to a scratch folder, not the committed corpus. A crash, a leak, a hang
    # (-timeout, seconds per input), 2 GiB resident or one allocation over 512 MiB fails the run.
    if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "build-fuzz/fuzz/$t" -seed=1 \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
        -artifact_prefix="$new/" "$new" "fuzz/corpus/$t" >"$log" 2>&1; then
      tail -n 40 "$log"
      echo "fuzz: $t failed; the input is kept in $new"
      rc=1
    else
      grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | sed "s/^/fuzz: $t /"
      rm -rf "$new"
    fi
    rm -f "$log"
  done
  return $rc
}
fuzz_damage() {  # directory-level damage of a real trial, every reader (fuzz/trial_damage_fuzz.py)
  TRAINSCOPE_BUILD_DIR="$ROOT/build" "$PY" fuzz/trial_damage_fuzz.py --seed 1 \
    --cases "${TRAINSCOPE_DAMAGE_CASES:-12}" --seconds 75
}

suite "C++ unit tests" ctest --test-dir build -j"$JOBS" --output-on-failure
# The house style (scripts/check-style.sh): ruff, clang-format over every tracked C/C++ file,
# clang-tidy's naming and bug checks over src/ and the bindings, with Clang's thread-safety
# analysis in the same parse (src/torch where the build found LibTorch).
suite "style: ruff (Python)" bash scripts/check-style.sh python
suite "style: clang-format" bash scripts/check-style.sh format
suite "style: clang-tidy and thread-safety analysis" bash scripts/check-style.sh tidy
# design.md's module order over every #include (scripts/check-layers.py).
suite "include order (module layers)" "$PY" scripts/check-layers.py
if [[ "${TRAINSCOPE_QUICK:-0}" != 1 ]] && compgen -G "fuzz/*_fuzz.cc" >/dev/null; then
  suite "fuzz: build" fuzz_build
  suite "fuzz corpus replay" fuzz_replay
  suite "fuzz: bounded runs" fuzz_run
  suite "fuzz: trial damage" fuzz_damage
fi
if [[ $tsan == 1 ]]; then
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/tsan.supp
  suite "C++ tests under TSan" sanitized_build build-tsan thread "$TSAN_EXCLUDE" "${TSAN_TARGETS[@]}"
fi
if [[ $asan == 1 ]]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  suite "C++ tests under ASan+UBSan" sanitized_build build-asan address
fi
if [[ -d tests/python ]]; then
  suite "Python tests" "$PY" -m pytest -q tests/python -p no:cacheprovider
  # The validation corpus's per-rule report (tests/training/corpus_report.py) comes after it.
  rm -f build/corpus_report.json
  suite "Python training programs" env TRAINSCOPE_TRAINING_REPORT="$ROOT/build/corpus_report.json" \
    "$PY" -m pytest -q tests/training -p no:cacheprovider
  if [[ -f build/corpus_report.json ]]; then
    "$PY" tests/training/corpus_report.py build/corpus_report.json || true
  fi
fi
printf '\n== tests: %d suite(s) ok, %d suite(s) failing %s\n' "$passed" "$failed" \
  "${failures[*]:+(${failures[*]})}"
[[ $failed -eq 0 ]]
