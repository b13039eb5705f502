#!/usr/bin/env bash
# Runs kappasim's benchmarks against a Release build folder; prints the numbers that
# docs/benchmarks.md publishes.  Usage: bash bench/run.sh build/release
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
BUILD=${1:-build/release}
BIN="$BUILD/kappasim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A 10,000-point κ matrix: 100 model variants × 100 system variants from a preset folder.
make_kappa_presets "$tmp/presets"
models=$(cd "$tmp/presets/models" && ls | sed 's/\.yaml$//' | tr '\n' ' ')
systems=$(cd "$tmp/presets/systems" && ls | sed 's/\.yaml$//' | tr '\n' ' ')
best=""
for _ in 1 2 3 4 5; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  rows=$("$BIN" kappa --preset-dir "$tmp/presets" -m $models -s $systems --format csv | wc -l)
  end=$(date +%s.%N)
  t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
  if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
done
echo "kappa matrix: $((rows - 1)) points, best of 5: ${best} s wall ($(awk -v n=$((rows - 1)) -v t="$best" 'BEGIN { printf "%d", n / t }') points/s, including process start and preset loading)"

echo "Serving (NarrativeQA-like, paper-testbed, TP 8, layer-wise):"
for n in 20000 80000; do "$BIN" bench serving --requests "$n"; done

# Issue 14: the same load through a 3-tier KV hierarchy (DRAM 192 GB -> CXL 512 GB -> NVMe 2 TB)
# and under DP-attention 8 + EP 8 (FP8). A case this build cannot run prints why and the script
# goes on (the single-tier TP-only numbers above stay the published target).
for c in tiers3 dp-ep; do
  echo "Serving, case $c:"
  # One size: the DP+EP engine steps eight ranks in lockstep (~8x the single case's work).
  "$BIN" bench serving --case "$c" --requests 20000 || echo "  case $c: not run (exit $?)"
done

echo "SystemC models (flow vs packet transfers, GPU compute events):"
"$BUILD/bench/kappasim_sim_bench"

if [ -x "$BUILD/bench/kappasim_bench" ]; then
  "$BUILD/bench/kappasim_bench" --benchmark_min_time=0.2
fi

echo "Scaling (work x1, x2, x4, x8):"
bash "$(dirname "$0")/scaling.sh" "$BUILD"
