#!/usr/bin/env python3
"""Set the device sweep's SM-read rows beside kappasim's kernel-path probe (run here, not on the
device machine): python3 experiments/validation/device/compare.py OUT/sm_read.csv [KAPPASIM]

For every 'read' row of at least 16 MiB it runs
  kappasim probe h2d --system SYSTEM --path kernel --blocks 1
      --sizes BYTES --load-width W --threads-per-block T --blocks-per-sm B --loads-per-thread U
and prints a Markdown table: measured and simulated GB/s and their ratio, with the GPU-side
bytes in flight, so the knee of the measured curve (where in-flight loads stop binding) can be
read against the model's read tags and sm_inflight bound (docs/pcie-model.md). SYSTEM (the third argument)
defaults to experiments/validation/systems/h100-device-emr.yaml, the H100 + Emerald Rapids
machine of 2026-12-05; another machine needs its own system file, naming its host (machine.txt).
"""
import csv
import json
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: compare.py SM_READ_CSV [KAPPASIM [SYSTEM]]")
    kappasim = sys.argv[2] if len(sys.argv) > 2 else "build/release/kappasim"
    system = (sys.argv[3] if len(sys.argv) > 3
              else "experiments/validation/systems/h100-device-emr.yaml")
    rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["mode"] == "read"
            and int(r["bytes"]) >= 16 << 20]
    print("| W B | threads | blocks/SM | loads/thread | size MiB | in flight KB | measured GB/s "
          "| simulated GB/s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cmd = [kappasim, "probe", "h2d", "--system", system, 
               "--path", "kernel", "--blocks", "1", "--sizes", f"{int(r['bytes'])} B",
               "--load-width", f"{r['width_B']} B", "--threads-per-block", r["threads"],
               "--blocks-per-sm", r["blocks_per_sm"], "--loads-per-thread", r["unroll"],
               "--format", "json"]
        sim = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        sim_gbps = sim[0]["bandwidth_bytes_per_s"] / 1e9
        meas = float(r["best_GBps"])
        print(f"| {r['width_B']} | {r['threads']} | {r['blocks_per_sm']} | {r['unroll']} | "
              f"{int(r['bytes']) >> 20} | {float(r['gpu_inflight_B']) / 1e3:.0f} | {meas:.1f} | "
              f"{sim_gbps:.1f} | {sim_gbps / meas:.3f} |")


if __name__ == "__main__":
    main()
