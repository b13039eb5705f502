#!/usr/bin/env bash
# The device checks of issue 20, as one prepared script for a lent GPU machine (an H100/H200
# class GPU, compute capability 9.0, with nvcc and PyTorch; README.md beside this). From the
# repository root:
#   bash experiments/validation/device/run.sh            # the full sweep, about 5 minutes
#   bash experiments/validation/device/run.sh --quick    # one size per part, under a minute
# It writes into $OUT (the device tool's result folder; /tmp/kappasim-device without it):
#   machine.txt   nvidia-smi (GPU, driver, clocks, PCIe link), lscpu, the kernel
#   sm_read.csv   sm_read_sweep: SM-driven reads/writes of pinned host memory over load width,
#                 threads per block, blocks per SM, loads in flight per thread and size, alone
#                 and two at once, with the copy engine beside them for reference
#   compute.csv   compute_sweep.py: GEMMs by token count (bf16, fp8), Qwen3-30B-A3B's grouped
#                 expert GEMMs by token count, causal attention by context length
#   *.log         each part's stderr
# Each part has its own time limit, so one part that hangs still leaves the others' rows.
set -uo pipefail
export PATH="$PATH:/usr/local/cuda/bin"  # nvcc, where the image keeps CUDA outside PATH
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/kappasim-device}
mkdir -p "$out"
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)
# --extra: the second pass alone (sector-granule reads, a size ramp, the round trip under load,
# prefix attention), written as sm_read_extra.csv and compute_extra.csv.
suffix=""
[ "${1:-}" = "--extra" ] && { quick=(--extra); suffix=_extra; }
# --extra2: the third pass, compute only (rotated small-M GEMMs, graphed attention, the largest
# GEMMs against the SM clock and power, logged every 50 ms into smi_extra2.csv).
if [ "${1:-}" = "--extra2" ]; then
  out=${OUT:-/tmp/kappasim-device}
  mkdir -p "$out"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv -lms 50 >"$out/smi_extra2.csv" 2>&1 &
  smi=$!
  start=$(date +%s)
  PYTHONUNBUFFERED=1 timeout 200 python3 "$here/compute_sweep.py" --extra2 >"$out/compute_extra2.csv" 2>"$out/compute_extra2.log"
  echo "compute_sweep --extra2: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/compute_extra2.log"
  kill $smi
  exit 0
fi

{
  date -u
  uname -a
  nvidia-smi
  nvcc --version
  nvidia-smi -q | grep -i -E "product name|pcie generation|link width|max clocks|clocks_event|power limit" -A2
  lscpu
  free -g
} >"$out/machine$suffix.txt" 2>&1

start=$(date +%s)
if nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/sm_read_sweep "$here/sm_read_sweep.cu" 2>"$out/sm_read.log"; then
  timeout 200 /tmp/sm_read_sweep "${quick[@]}" >"$out/sm_read$suffix.csv" 2>>"$out/sm_read.log"
  echo "sm_read_sweep: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/sm_read.log"
else
  echo "sm_read_sweep: nvcc failed (sm_read.log)"
fi

start=$(date +%s)
PYTHONUNBUFFERED=1 timeout 200 python3 "$here/compute_sweep.py" "${quick[@]}" >"$out/compute$suffix.csv" 2>"$out/compute.log"
echo "compute_sweep: exit $? after $(( $(date +%s) - start )) s" | tee -a "$out/compute.log"
wc -l "$out"/*.csv
