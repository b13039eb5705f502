#!/usr/bin/env python3
"""Issue 24's Vidur rounds with many runs (docs/benchmarks.md): binaries interleaved on one
machine, each a whole `kappasim run bench/vidur-70b.yaml` into a fresh folder, timed from outside
(time.perf_counter around the process). Prints each binary's median, min and mean wall time and
the first binary's median over each one's.

    python3 bench/interleave.py [--paired] TRACE ROUNDS BIN...
    python3 bench/vidur_trace.py 10000 /tmp/v10k.jsonl
    python3 bench/interleave.py /tmp/v10k.jsonl 15 /tmp/kappasim-e43ea23 build/release/kappasim

--paired: each round runs the binaries in an order shuffled by the round's number (the same
orders on every call), and the ratio printed is the median over rounds of the first binary's time
over each one's in that round: the VM's drift between rounds and the order within one cancel.

Run from the repository root (the config's path is relative). A shared VM's speed drifts by
tens of per cent within minutes: only ratios within one call mean anything.
"""
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    args = sys.argv[1:]
    paired = bool(args) and args[0] == "--paired"
    if paired:
        args = args[1:]
    if len(args) < 3:
        sys.exit("usage: interleave.py [--paired] TRACE ROUNDS BIN...")
    trace, rounds, bins = args[0], int(args[1]), args[2:]
    work = tempfile.mkdtemp(prefix="kappasim-interleave-")
    out = os.path.join(work, "out")
    times = {b: [] for b in bins}
    try:
        for r in range(rounds):
            order = list(bins)
            if paired:
                random.Random(r).shuffle(order)
            for b in order:
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
        if paired:
            ratio = statistics.median(x / y for x, y in zip(times[bins[0]], times[b]))
            how = "paired median"
        else:
            ratio, how = first / m, "medians"
        print(f"{b}: median {m * 1e3:.1f} ms, min {min(times[b]) * 1e3:.1f} ms, "
              f"mean {statistics.mean(times[b]) * 1e3:.1f} ms, {bins[0]} / this {ratio:.3f}x "
              f"({how})")


if __name__ == "__main__":
    main()
