#!/usr/bin/env python3
"""The Vidur comparison's request trace (issue 24): Poisson arrivals, lognormal prompts.

Writes a kappasim jsonl trace (docs/workloads.md, `workload: {type: trace}`):
  N requests, Poisson arrivals at RATE req/s, prompt lengths lognormal with median 2,048
  tokens and sigma 0.6 [A], clipped to 128..4,095, no prefix, 1 output token.
Deterministic: Python's Mersenne Twister with a fixed seed, so the same N gives the same file.
  python3 bench/vidur_trace.py N OUT.jsonl [RATE] [SEED]
"""
import math
import random
import sys


def main() -> None:
    n = int(sys.argv[1])
    out = sys.argv[2]
    rate = float(sys.argv[3]) if len(sys.argv) > 3 else 30.0
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    rng = random.Random(seed)
    t = 0.0
    with open(out, "w", encoding="ascii") as f:
        for _ in range(n):
            t += rng.expovariate(rate)
            tokens = int(round(math.exp(math.log(2048.0) + 0.6 * rng.gauss(0.0, 1.0))))
            tokens = min(4095, max(128, tokens))
            f.write('{"arrival_s": %.9f, "prefix_tokens": 0, "new_tokens": %d, '
                    '"output_tokens": 1}\n' % (t, tokens))


if __name__ == "__main__":
    main()
