#!/usr/bin/env bash
# The house style, checked. scripts/run-tests.sh runs each part as a suite; each exits non-zero
# on the first kind of violation it finds and prints every violation of that kind.
#
#   check-style.sh python           ruff over python/ tests/ bench/ scripts/ examples/
#                                   (rules and why each ignore: pyproject.toml [tool.ruff]).
#   check-style.sh tidy [--libraries|FILE...]
#                                   clang-tidy with .clang-tidy (Google naming, bugprone,
#                                   performance; warnings are errors) over the C++ sources of
#                                   src/ and python/src/ (the bindings, where build/ compiles
#                                   them, the torch extension's python/src/torch/ included), or
#                                   the FILEs given, compiled as build/ compiles them
#                                   (build/compile_commands.json); all of src/ and python/src/
#                                   is the suite's scope. --libraries: the library modules only
#                                   (not cli/, torch/, the bindings). CPU time here: the
#                                   libraries (118 files) 8.9 minutes, cli/ and torch/ (14, now
#                                   15) 3.4 more (torch_hook.cc alone 0.5), python/src/ (12
#                                   files) about 2.5 more (with torch/'s two files: 3.0), so in
#                                   all about 15, some 7.5 minutes on 2 idle cores.
#                                   src/torch/.clang-tidy says what differs there. It also
#                                   runs Clang's thread-safety analysis (-Wthread-safety, as
#                                   `thread-safety` below) in the same parse: the suite's one
#                                   pass for both.
#   check-style.sh format [FILE...] clang-format in check mode (.clang-format) over the FILEs
#                                   given; with none, over every tracked C/C++ file (the suite:
#                                   a clean clone has nothing "changed", so only the whole tree
#                                   can fail there).
#   check-style.sh format --changed clang-format over the C/C++ files changed against the merge
#                                   base with origin/main, and files not yet committed (quick, for
#                                   developers before a commit).
#   check-style.sh thread-safety [FILE...]
#                                   clang++ -fsyntax-only -Wthread-safety -Werror over the
#                                   sources of src/ and python/src/ (where build/ compiles the
#                                   extension), or the FILEs given, compiled as build/
#                                   compiles them (TS_GUARDED_BY and friends:
#                                   src/core/include/trainscope/thread_annotations.h) alone:
#                                   quicker than tidy for one file; tidy runs it too.
#   check-style.sh all              python, tidy (with the thread-safety analysis) and format.
# Needs clang, clang-tidy, clang-format (Debian packages) and ruff (.venv), which
# scripts/setup.sh installs, and a configured build/ for tidy and thread-safety.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${TRAINSCOPE_BUILD_DIR:-build}
JOBS=$(nproc)

need() {  # need TOOL: fails naming the tool and how to get it
  command -v "$1" >/dev/null && return 0
  echo "check-style: $1 not found; run scripts/setup.sh (it installs the style tools)" >&2
  return 1
}

need_compile_db() {
  [[ -f $BUILD/compile_commands.json ]] && return 0
  echo "check-style: $BUILD/compile_commands.json not found; configure the build first" \
    "(scripts/setup.sh, or cmake -S . -B $BUILD)" >&2
  return 1
}

# Prints the library sources of src/ that the compile database compiles, one a line (src/torch
# only where the build found LibTorch); with --bindings, python/src/'s too (where the build
# compiles the extension).
db_sources() {
  "${PYTHON:-python3}" - "$BUILD/compile_commands.json" "$ROOT" "$@" <<'EOF'
import json, os, sys
db, root = sys.argv[1], sys.argv[2]
dirs = [os.path.join(root, "src") + os.sep]
if "--bindings" in sys.argv[3:]:
    dirs.append(os.path.join(root, "python", "src") + os.sep)
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path.startswith(tuple(dirs)) and path.endswith(".cc"):
        print(os.path.relpath(path, root))
EOF
}

check_python() {
  local ruff="$ROOT/.venv/bin/ruff"
  [[ -x $ruff ]] || ruff=ruff
  need "$ruff" || return 1
  "$ruff" check --no-cache --output-format concise python tests bench scripts examples
}

# The library modules (docs/architecture.md): the suite's clang-tidy scope.
LIBRARY_MODULES='^src/(core|store|capture|profiler|rules|actions|supervisor)/'

check_tidy() {
  need clang-tidy || return 1
  need_compile_db || return 1
  local files=()
  if [[ ${1:-} == --libraries ]]; then
    mapfile -t files < <(db_sources | sort -u | grep -E "$LIBRARY_MODULES")
  elif (($#)); then
    files=("$@")
  else
    mapfile -t files < <(db_sources --bindings | sort -u)
  fi
  ((${#files[@]})) || { echo "check-style: no C++ sources to check" >&2; return 1; }
  echo "clang-tidy over ${#files[@]} file(s), $JOBS at a time"
  # GCC's warning flags from the database are unknown to clang: not an error here. Clang's
  # -Wunused-const-variable (not in GCC's -Wall) would flag event_codec.cc's table of the
  # protobuf's field numbers, used or not.
  # -Wthread-safety with its diagnostics enabled as checks: the thread-safety analysis in the same
  # parse (warnings as errors, like every check of .clang-tidy).
  printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -n 4 clang-tidy -p "$BUILD" --quiet \
    --checks='clang-diagnostic-thread-safety*' --extra-arg=-Wthread-safety \
    --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-unused-const-variable 2>&1 |
    grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Use -system-headers'
  local rc=("${PIPESTATUS[@]}")
  [[ ${rc[1]} -eq 0 ]]
}

check_format() {
  need clang-format || return 1
  local files=()
  if [[ ${1:-} == --changed ]]; then
    local base
    base=$(git merge-base HEAD origin/main 2>/dev/null || git rev-parse HEAD)
    mapfile -t files < <({
      git diff --name-only --diff-filter=ACMR "$base" -- '*.cc' '*.h' '*.cpp' '*.hpp' '*.c'
      git ls-files --others --exclude-standard -- '*.cc' '*.h' '*.cpp' '*.hpp' '*.c'
    } | sort -u)
    ((${#files[@]})) || { echo "clang-format: no changed C/C++ files"; return 0; }
  elif (($#)); then
    files=("$@")
  else
    mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cpp' '*.hpp' '*.c')
  fi
  ((${#files[@]})) || { echo "clang-format: no C/C++ files to check" >&2; return 1; }
  echo "clang-format --dry-run over ${#files[@]} file(s)"
  clang-format --dry-run -Werror --style=file "${files[@]}"
}

# Compiles each source of src/ and python/src/ (the bindings, where build/ compiles them) with
# clang++ as build/ compiles it, syntax only, with Clang's thread-safety analysis as errors.
check_thread_safety() {
  local cxx=${TRAINSCOPE_CLANGXX:-clang++}
  need "$cxx" || return 1
  need_compile_db || return 1
  local files=("$@")
  ((${#files[@]})) || mapfile -t files < <(db_sources --bindings | sort -u)
  echo "clang++ -Wthread-safety over ${#files[@]} file(s), $JOBS at a time"
  "${PYTHON:-python3}" - "$BUILD/compile_commands.json" "$ROOT" "$cxx" "$JOBS" "${files[@]}" <<'EOF'
import concurrent.futures, json, os, shlex, subprocess, sys
db, root, cxx, jobs, files = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
wanted = {os.path.join(root, f) for f in files}
commands = {}
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    if path in wanted and path not in commands:
        args = entry.get("arguments") or shlex.split(entry["command"])
        kept, skip = [cxx], False
        for a in args[1:]:  # drop the compiler, the output and the -c pair
            if skip:
                skip = False
                continue
            if a in ("-o", "-c"):
                skip = True
                continue
            kept.append(a)
        # Only the analysis: other Clang warnings (GCC builds the code) are not this check's.
        kept += ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror",
                 path]
        commands[path] = (entry["directory"], kept)
def run(item):
    path, (cwd, args) = item
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    return path, p.returncode, p.stdout + p.stderr
failed = 0
with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    for path, rc, out in pool.map(run, sorted(commands.items())):
        if rc != 0:
            failed += 1
            sys.stdout.write(out)
print(f"thread-safety: {len(commands) - failed} file(s) clean, {failed} failing")
sys.exit(1 if failed else 0)
EOF
}

case "${1:-all}" in
  python) check_python ;;
  tidy) shift; check_tidy "$@" ;;
  format) shift; check_format "$@" ;;
  thread-safety) shift; check_thread_safety "$@" ;;
  all)
    rc=0
    for part in check_python check_tidy check_format; do
      "$part" || rc=1
    done
    exit $rc
    ;;
  *)
    echo "usage: scripts/check-style.sh [python|tidy [--libraries|FILE...]|format [--changed|FILE...]|thread-safety [FILE...]|all]" >&2
    exit 2
    ;;
esac
