#!/usr/bin/env bash
# Sweep runner throughput: N tiny `kappa` points (one process each) with -j2, for N = 200, 400,
# 800, 1600; prints points per second, process start, spec expansion, result files and the merge
# included. Usage: bash bench/sweep_bench.sh BUILD_DIR [JOBS]   (docs/benchmarks.md)
set -euo pipefail
BUILD=${1:-build/release}
JOBS=${2:-2}
BIN="$(cd "$BUILD" && pwd)/kappasim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 200 400 800 1600; do
  cat > "$tmp/spec-$n.yaml" <<SPEC
name: bench-$n
kind: kappa
config: {model: llama-3.1-70b, system: h100, T: 1}
axes:
  - {key: K, range: {from: 1, to: $n, step: 1}}
SPEC
  start=$(date +%s.%N)
  "$BIN" sweep "$tmp/spec-$n.yaml" --out "$tmp/out-$n" -j "$JOBS" --quiet
  end=$(date +%s.%N)
  rows=$(($(wc -l < "$tmp/out-$n/results.csv") - 1))
  awk -v n="$rows" -v a="$start" -v b="$end" -v j="$JOBS" \
    'BEGIN { printf "sweep: %5d kappa points, -j%d: %6.2f s wall, %6.1f points/s\n", n, j, b - a, n / (b - a) }'
done
