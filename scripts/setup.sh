#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (run as root) for trainscope, from nothing:
#   1. Debian packages (compiler, CMake, test and benchmark libraries, C++ dependencies);
#   2. a Python virtual environment in <checkout>/.venv with the pinned packages of
#      requirements.lock (PyTorch 2.x, numpy, smdebug and tensorboard as test oracles, Playwright
#      to drive Chromium, ...), and the trace viewers of the browser tests from npm
#      (tests/trace_viewer/package-lock.json, with the machine's npm);
#   3. the C++ build in <checkout>/build (tests and benchmarks included; the LibTorch module too,
#      against the virtual environment's torch);
#   4. `pip install` of trainscope itself into the virtual environment, from that same build/
#      (only the Python extension is compiled there: the core is compiled once).
# Every step is skipped when already done, so running it again is cheap.
# Environment: TRAINSCOPE_SKIP_APT=1 skips step 1 (for machines set up by hand).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
log() { printf '\n== setup: %s\n' "$*"; }

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang libclang-rt-14-dev llvm
  clang-tidy clang-format  # scripts/check-style.sh (ruff comes from requirements.lock)
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libcurl4-openssl-dev libcpp-httplib-dev
  python3 python3-venv python3-dev
  chromium  # the browser tests open the merged timeline in it (driven by Playwright)
)

if [[ "${TRAINSCOPE_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # npm installs the trace viewers; Debian's only where the machine has no npm of its own
  command -v npm >/dev/null || missing+=(npm)
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    if [[ $(id -u) -ne 0 ]]; then
      echo "setup: installing Debian packages needs root; run as root or install: ${missing[*]}" >&2
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

VENV="$ROOT/.venv"
PY="$VENV/bin/python"
if [[ ! -x "$PY" ]]; then
  log "creating the Python virtual environment $VENV"
  /usr/bin/python3 -m venv "$VENV"
fi
want=$(sha256sum requirements.lock | cut -c1-16)
if [[ "$(cat "$VENV/.lock-hash" 2>/dev/null)" != "$want" ]]; then
  log "installing pinned Python packages (requirements.lock; PyTorch is large, this takes minutes)"
  # No pip cache: the wheels (PyTorch's CUDA libraries are 3 GB of them) would be kept twice,
  # once in ~/.cache/pip and once unpacked in the environment (about 7 GB).
  if ! "$PY" -m pip install -q --no-cache-dir -r requirements.lock; then
    free=$(df -Pk "$VENV" | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }')
    echo "setup: installing requirements.lock into $VENV failed (above); the environment needs" \
      "about 7 GB and pip about 4 GB more while it installs; $free GB are free there" >&2
    exit 1
  fi
  echo "$want" >"$VENV/.lock-hash"
fi

VIEWERS=tests/trace_viewer
if [[ -f $VIEWERS/package-lock.json ]]; then
  want=$(sha256sum "$VIEWERS/package-lock.json" | cut -c1-16)
  if [[ "$(cat "$VIEWERS/node_modules/.lock-hash" 2>/dev/null)" != "$want" ]]; then
    if command -v npm >/dev/null; then
      log "installing the trace viewers of the browser tests (npm ci in $VIEWERS)"
      npm ci --prefix "$VIEWERS" --ignore-scripts --no-audit --no-fund --loglevel=error
      echo "$want" >"$VIEWERS/node_modules/.lock-hash"
    else
      log "no npm: the browser tests of the timeline will be skipped"
    fi
  fi
fi

log "building the C++ core, tests and benchmarks (build/)"
# The LibTorch module (src/torch), its example and tests build against the virtual environment's
# torch, which ships its CMake package.
cmake_args=()
if torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
  cmake_args+=(-DCMAKE_PREFIX_PATH="$torch_prefix")
fi
# -Werror here (the developers' build) even when build/ was last configured by `pip install`,
# whose builds leave it off (CMakeLists.txt, TRAINSCOPE_WERROR).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTRAINSCOPE_WERROR=ON \
  -DPython_EXECUTABLE="$PY" ${cmake_args[@]+"${cmake_args[@]}"} >/dev/null
cmake --build build -j"$(nproc)"

if [[ -f pyproject.toml ]]; then
  # One build for the tests and the package: scikit-build-core configures the same build/ with
  # the same build type (it only adds the extension, which it then compiles and links, and keeps
  # build/'s tests, benchmarks and LibTorch module: CMakeLists.txt), so nothing is compiled twice.
  log "installing trainscope into the virtual environment (pip install ., from build/)"
  "$PY" -m pip install -q --no-build-isolation --no-deps \
    --config-settings build-dir=build --config-settings cmake.build-type=RelWithDebInfo .
fi
log "done"
