#!/usr/bin/env python3
"""Issue 24's Vidur rounds with many runs (docs/benchmarks.md): binaries interleaved on one
machine, each a whole `kappasim run bench/vidur-70b.yaml` into a fresh folder, timed from outside
(time.perf_counter around the process). Prints each binary's median, min and mean wall time and
the first binary's median over each one's.

    python3 bench/interleave.py TRACE ROUNDS BIN...
    python3 bench/vidur_trace.py 10000 /tmp/v10k.jsonl
    python3 bench/interleave.py /tmp/v10k.jsonl 15 /tmp/kappasim-e43ea23 build/release/kappasim

Run from the repository root (the config's path is relative). A shared VM's speed drifts by
tens of per cent within minutes: only ratios within one call mean anything.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: interleave.py TRACE ROUNDS BIN...")
    trace, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    work = tempfile.mkdtemp(prefix="kappasim-interleave-")
    out = os.path.join(work, "out")
    times = {b: [] for b in bins}
    try:
        for _ in range(rounds):
            for b in bins:
                shutil.rmtree(out, ignore_errors=True)
                t = time.perf_counter()
                subprocess.run([b, "run", "bench/vidur-70b.yaml", "--set",
                                "workload.trace.path=" + os.path.abspath(trace), "--out", out,
                                "-q"], check=True, stderr=subprocess.DEVNULL)
                times[b].append(time.perf_counter() - t)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    first = statistics.median(times[bins[0]])
    for b in bins:
        m = statistics.median(times[b])
        print(f"{b}: median {m * 1e3:.1f} ms, min {min(times[b]) * 1e3:.1f} ms, "
              f"mean {statistics.mean(times[b]) * 1e3:.1f} ms, {bins[0]} / this {first / m:.2f}x")


if __name__ == "__main__":
    main()
