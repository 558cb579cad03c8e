#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine (as root): sets everything up (scripts/setup.sh),
# then trains an MLP on scikit-learn's digits under `trainscope run` with a planted problem (a
# learning rate so high that most ReLUs die). The default rules watch it while it trains; the
# stop action ends the run once a rule finds the problem; the summary says what was found and
# what to do, and `trainscope ls` shows what was captured.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bash scripts/setup.sh
export PATH="$ROOT/.venv/bin:$PATH"
OUT="$ROOT/runs/main-$(date +%Y%m%d-%H%M%S)"
echo
echo "== main job: trainscope run --rules default --action stop -- python examples/pytorch/digits_mlp.py --lr 1.0"
set +e
trainscope run --out "$OUT" --rules default --action stop -- \
  python examples/pytorch/digits_mlp.py --lr 1.0 --epochs 8
code=$?
set -e
echo
echo "== what was captured: trainscope ls $OUT"
trainscope ls "$OUT" | head -n 40
# trainscope run exits 4 when a rule stopped the training: the expected outcome here.
if [[ $code -eq 4 ]]; then
  echo
  echo "main job: the planted problem was caught and the training stopped (exit code 4, as expected)"
  exit 0
fi
echo "main job: trainscope run exited with $code; expected 4 (stopped by a rule)" >&2
exit 1
