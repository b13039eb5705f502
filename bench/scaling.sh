#!/usr/bin/env bash
# How each benchmark scales when the work doubles, quadruples and grows 8x (issue: hardening).
# Prints one table row per size: work, wall seconds, rate, peak RSS (GNU time).
#   bash bench/scaling.sh build/release     (docs/benchmarks.md "Scaling")
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
BUILD=${1:-build/release}
BIN="$(cd "$BUILD" && pwd)/kappasim"
SIM="$(cd "$BUILD" && pwd)/bench/kappasim_sim_bench"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wall and peak RSS of one command: prints "SECONDS KB"
measure() {
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" > "$tmp/out" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  cat "$tmp/time"
}
row() {  # row WHAT WORK UNIT SECONDS KB
  awk -v w="$1" -v n="$2" -v u="$3" -v t="$4" -v kb="$5" \
    'BEGIN { printf "| %s | %d %s | %.3f s | %.0f %s/s | %.1f MB |\n", w, n, u, t, (t > 0 ? n / t : 0), u, kb / 1024 }'
}

echo "| What | Work | Wall | Rate | Peak RSS |"
echo "|---|---|---|---|---|"

# 1. Analytic κ points: 100 model variants x S system variants, S = 12, 25, 50, 100.
make_kappa_presets "$tmp/presets"
models=$(cd "$tmp/presets/models" && ls | sed 's/\.yaml$//' | tr '\n' ' ')
for s in 12 25 50 100; do
  systems=$(seq 1 "$s" | sed 's/^/s/' | tr '\n' ' ')
  # shellcheck disable=SC2086
  read -r t kb < <(measure "$BIN" kappa --preset-dir "$tmp/presets" -m $models -s $systems --format csv)
  row "analytic κ matrix (whole process)" $((100 * s)) points "$t" "$kb"
done

# 2. Flow-level fabric: N back-to-back 1 MiB transfers (one simulation), N = 100k .. 800k.
for n in 100000 200000 400000 800000; do
  read -r t kb < <(measure "$SIM" "$n" 1)
  row "flow-model transfers (whole process)" "$n" transfers "$t" "$kb"
done

# 3. Serving: NarrativeQA-like on paper-testbed at the sustainable rate, N = 10k .. 80k.
for n in 10000 20000 40000 80000; do
  read -r t kb < <(measure "$BIN" bench serving --requests "$n")
  row "serving, simulated requests (whole process)" "$n" requests "$t" "$kb"
done

# 4. Sweep runner: N tiny kappa points, one process each, -j2, N = 200 .. 1600.
for n in 200 400 800 1600; do
  cat > "$tmp/spec-$n.yaml" <<SPEC
name: bench-$n
kind: kappa
config: {model: llama-3.1-70b, system: h100, T: 1}
axes:
  - {key: K, range: {from: 1, to: $n, step: 1}}
SPEC
  read -r t kb < <(measure "$BIN" sweep "$tmp/spec-$n.yaml" --out "$tmp/sweep-$n" -j 2 --quiet)
  row "sweep points, -j2 (runner's RSS)" "$n" points "$t" "$kb"
done
