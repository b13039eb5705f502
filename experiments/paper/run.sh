#!/usr/bin/env bash
# Reproduces the κ paper's measurements on the simulator and writes them to
# experiments/paper/results/ (docs/paper-reproduction.md discusses them).
#   bash experiments/paper/run.sh [path/to/kappasim]
set -euo pipefail
cd "$(dirname "$0")"
K=${1:-../../build/release/kappasim}
out=results
rm -rf "$out.partial" && mkdir -p "$out.partial"

# 1. Measured κ_crit on paper-testbed (TP 8), each load path, T = 16, 128, 1024.
for t in 16 128 1024; do
  for path in kernel layerwise block_dma; do
    stack=lmcache-0.3.5; [ "$path" = block_dma ] && stack=vllm-native-0.12  # block copies: vLLM native
    for m in llama-3.1-70b qwen3-235b-a22b; do
      "$K" measure kappa-crit -m "$m" -s paper-testbed --tp 8 --t "$t" --load-path "$path" \
           --stack "$stack" --format csv
    done
  done
done | awk 'NR == 1 || !/^model,/' > "$out.partial/kappa_crit.csv"

# 2. P_OH over a K × T grid, both models, the default (kernel) load path.
for m in llama-3.1-70b qwen3-235b-a22b; do
  "$K" measure poh -m "$m" -s paper-testbed --tp 8 --k 1024,4096,16384,65536 \
       --t 16,64,256,1024,4096 --format csv
done | awk 'NR == 1 || !/^model,/' > "$out.partial/poh_grid.csv"

# 3. The 70 RPS serving runs.
for cfg in sharegpt-70rps narrativeqa-70rps; do
  "$K" run "$cfg.yaml" --out "$out.partial/$cfg" --set trace=false -q
done

# 3b. The same NarrativeQA-like load per serving stack profile (stack-*.yaml), each LMCache
#     stack on both of its load paths (the paper does not say which it used).
for stack in lmcache-0.3.5 lmcache-0.3.7 vllm-native-0.11 vllm-native-0.12 ideal; do
  "$K" run "stack-$stack.yaml" --out "$out.partial/stack-$stack" --set trace=false -q
done
for stack in lmcache-0.3.5 lmcache-0.3.7; do
  "$K" run "stack-$stack.yaml" --out "$out.partial/stack-$stack-layerwise" --set trace=false \
       --set serving.load_path=layerwise -q
done

# 4. Scheduling policies under VRAM pressure.
for policy in fifo utilization fair; do
  "$K" run policies.yaml --out "$out.partial/policy-$policy" --set serving.policy=$policy -q
done

rm -rf "$out" && mv "$out.partial" "$out"
echo "results in experiments/paper/$out/"
