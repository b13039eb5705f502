#!/usr/bin/env python3
"""Writes the request traces of the served validation rows (experiments/validation/serving.yaml).

    python3 experiments/validation/serving/traces/make_traces.py   # rewrites every trace here

Each trace is a pure function of this file (Python's random with a fixed seed; CPython keeps
random.seed(int), random.shuffle and random.expovariate stable across 3.x), so a rerun is
byte-identical. kappasim's jsonl trace format: docs/workloads.md "Trace replay".
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, rows):
    with open(os.path.join(HERE, name), "w") as f:
        for r in rows:
            f.write("{" + ", ".join('"%s": %s' % (k, v) for k, v in r.items()) + "}\n")


def full_block_split(prompt_tokens, block=16):
    """vLLM loads whole blocks and computes at least the prompt's last token: the cached part is
    the whole blocks before the last token, the rest is computed."""
    cached = (prompt_tokens - 1) // block * block
    return cached, prompt_tokens - cached


# vLLM blog Figure 1: one request of a 100K-token prompt (100,000 tokens).
cached, new = full_block_split(100000)
write("vllm-blog-100k.jsonl",
      [{"arrival_s": 0, "prefix_tokens": cached, "new_tokens": new, "sequence_id": 1}])

# vLLM blog Figure 1: one request of a 10K-token prompt (10,000 tokens).
cached, new = full_block_split(10000)
write("vllm-blog-10k.jsonl",
      [{"arrival_s": 0, "prefix_tokens": cached, "new_tokens": new, "sequence_id": 1}])

# vLLM blog Figure 1: one request of a 1K-token prompt (1,000 tokens), the smallest plotted point.
cached, new = full_block_split(1000)
write("vllm-blog-1k.jsonl",
      [{"arrival_s": 0, "prefix_tokens": cached, "new_tokens": new, "sequence_id": 1}])

# vLLM blog Figure 2: unique 512-token prompts submitted at once, prefill only (one output token);
# 2,000 of the blog's 10,000 (the row's config says why).
cached, new = full_block_split(512)
write("vllm-blog-512x2000.jsonl",
      [{"arrival_s": 0, "prefix_tokens": cached, "new_tokens": new, "sequence_id": i + 1}
       for i in range(2000)])

# llm-d tiered-prefix-cache guide, CPU offloading benchmark, first stage (5 QPS for 60 s) of
# llm-d-benchmark workload/profiles/inference-perf/guide_tiered-prefix-cache_1.yaml.in:
# inference-perf's shared_prefix generator (kubernetes-sigs/inference-perf
# inference_perf/datagen/shared_prefix_datagen.py) builds num_groups x num_prompts_per_group
# prompts (a 16,000-token system prompt per group + a 256-token question), shuffles them once and
# sends them in that order; the poisson load sends at `rate` for `duration` seconds.
# The shuffle and the arrival times are drawn here with seed 1 (inference-perf's own are not
# published); the stage ends at 60 s.
rng = random.Random(1)
prompts = [(g, p) for g in range(250) for p in range(5)]
rng.shuffle(prompts)
rows, t, i = [], 0.0, 0
while True:
    t += rng.expovariate(5.0)
    if t >= 60.0:
        break
    g, _ = prompts[i % len(prompts)]
    rows.append({"arrival_s": "%.6f" % t, "prefix_tokens": 16000, "new_tokens": 256,
                 "sequence_id": g + 1, "output_tokens": 256})
    i += 1
write("llmd-sharedprefix-16k-5qps.jsonl", rows)

# tenstorrent/tt-inference-server issue 340 (vLLM on A100): ISL 128 / OSL 1024, concurrency 1,
# 4 requests. A client at concurrency 1 sends the next request when the last one has finished;
# each takes < 10 s here, so arrivals 20 s apart keep one request in the server at a time (the
# idle gaps do not enter TPOT). Distinct sequences: no prefix is shared.
write("tt-qwen3-128x1024-c1.jsonl",
      [{"arrival_s": 20 * i, "prefix_tokens": 0, "new_tokens": 128, "sequence_id": i + 1,
        "output_tokens": 1024} for i in range(4)])

# vLLM issue #50913 (P/D hand-off on 8x L20): one ~4.9k-token prompt (4,900 tokens) handed from
# an idle prefill engine to an idle decode engine; 8 output tokens (the decode node needs more
# than one, else the request finishes on its prefill node). The row reads the hand-off's pull.
write("vllm-50913-4900.jsonl",
      [{"arrival_s": 0, "prefix_tokens": 0, "new_tokens": 4900, "sequence_id": 1,
        "output_tokens": 8}])

# Mooncake "vLLM PD Disaggregation Performance" (kvcache-ai/Mooncake docs/source/performance/vllm/
# vllm-v1-pd-performance.md): `vllm bench serve --dataset-name random --random-input-len L
# --random-output-len 128 --max-concurrency 1 --num-prompts 50` per prompt length L. At
# concurrency 1 on idle engines every request of a length is the same; the rows read the mean of
# 4 of them, sent 30 s apart (each takes < 5 s here, so one is in the server at a time). Distinct
# sequences: random prompts share no prefix (and the benchmark ran --no-enable-prefix-caching).
for L in (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768):
    write("mooncake-pd-%d.jsonl" % L,
          [{"arrival_s": 30 * i, "prefix_tokens": 0, "new_tokens": L, "sequence_id": i + 1,
            "output_tokens": 128} for i in range(4)])
