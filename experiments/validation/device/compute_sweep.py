#!/usr/bin/env python3
"""Compute rates by size on a lent GPU, for issue 20 ("Compute where kappa_crit is decided").

Run by run.sh on the device machine (python3 there holds PyTorch). Writes CSV rows to stdout:
  gemm       dense GEMM C[M,N] = A[M,K] @ B[K,N] for the linear layers of Llama-3.1-8B (TP 1) and
             Llama-3.1-70B (TP 8), M = tokens in the step (1 .. 16384); bf16 (torch.matmul,
             cuBLAS) and fp8 e4m3 with per-tensor scales (torch._scaled_mm, cuBLASLt), the
             activation already quantised (as `kappasim probe gemm` times it).
  moe        Qwen3-30B-A3B's expert GEMMs (128 experts, top 8, hidden 2048, expert width 768):
             the up+gate and down grouped GEMMs over T routed tokens (uniform routing, seeded),
             torch._grouped_mm where this PyTorch has it; each expert's rows are the tokens routed
             to it (no padding: the padding is the kernel's, which is what kappasim models).
  attention  causal prefill attention, batch 1, 32 query heads, 8 KV heads, head_dim 128, bf16,
             S = 1K .. 128K, through scaled_dot_product_attention with each backend this PyTorch
             offers (flash: FlashAttention-2; cudnn: cuDNN's fused attention).
Each row: the median and best of REPS timed calls (CUDA events) after warm-ups, FLOPs counted the
way kappasim counts them (2*M*N*K; causal attention 2 * 2 * S * (S+1)/2 * H * d).
"""
import sys
import time

import torch

REPS = 10
QUICK = "--quick" in sys.argv
# --extra: only prefix attention (T new tokens over C cached ones), the case kappa_crit turns on.
EXTRA = "--extra" in sys.argv
# --extra2: the third pass: small-M GEMMs whose weights would stay in L2 (weights rotated over
# copies larger than L2, as a forward pass reads each layer's once), attention replayed in CUDA
# graphs (no host dispatch inside the time), and the largest GEMMs repeated with wall-clock
# markers for the SM clock and power log run.sh keeps beside them.
EXTRA2 = "--extra2" in sys.argv


GRAPHED = [False]  # whether the last timed_graph call ran as a graph (else eagerly)


def timed_graph(fn, calls):
    """Median and best time of one call, from a CUDA graph of `calls` back-to-back calls (no host
    launch cost between them, as a captured serving step runs); plain timing where capture fails."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        med, best = timed(g.replay)
        GRAPHED[0] = True
        return med / calls, best / calls
    except Exception:  # noqa: BLE001
        GRAPHED[0] = False
        return timed(fn)


def timed(fn, reps=REPS, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    return times[len(times) // 2], times[0]


def emit(kind, name, dtype, m, n, k, flops, bytes_, med, best, note=""):
    print(f"{kind},{name},{dtype},{m},{n},{k},{flops:.6e},{bytes_:.6e},{med:.9f},{best:.9f},"
          f"{flops / med / 1e12:.2f},{bytes_ / med / 1e9:.1f},{note}", flush=True)


# (name, K, N): the linear layers as one GPU sees them.
SHAPES = [
    ("llama8b-qkv", 4096, 6144), ("llama8b-o", 4096, 4096),
    ("llama8b-gate-up", 4096, 28672), ("llama8b-down", 14336, 4096),
    ("llama70b-tp8-qkv", 8192, 1280), ("llama70b-tp8-o", 1024, 8192),
    ("llama70b-tp8-gate-up", 8192, 7168), ("llama70b-tp8-down", 3584, 8192),
]
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192, 16384]
if QUICK:
    TOKENS = [16, 128, 512, 4096]


def gemms():
    dev = "cuda"
    for name, k, n in SHAPES:
        w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        w8 = w.to(torch.float8_e4m3fn)
        w8t = w8.t().contiguous().t()  # column-major, as _scaled_mm wants its second operand
        one = torch.ones((), device=dev, dtype=torch.float32)
        for m in TOKENS:
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            flops = 2.0 * m * n * k
            calls = 20 if flops < 1e11 else 3
            med, best = timed_graph(lambda: torch.matmul(a, w), calls)
            emit("gemm", name, "bf16", m, n, k, flops, 2.0 * (m * k + k * n + m * n), med, best)
            a8 = a.to(torch.float8_e4m3fn)
            mp = m if m % 16 == 0 else (m + 15) // 16 * 16
            note = "" if mp == m else f"M padded to {mp} (cuBLASLt fp8 needs multiples of 16)"
            if mp != m:
                a8 = torch.nn.functional.pad(a.float(), (0, 0, 0, mp - m)).to(torch.float8_e4m3fn)
            try:
                med, best = timed_graph(
                    lambda: torch._scaled_mm(a8, w8t, scale_a=one, scale_b=one,
                                             out_dtype=torch.bfloat16), calls)
                emit("gemm", name, "fp8", m, n, k, flops, 1.0 * (m * k + k * n) + 2.0 * m * n,
                     med, best, note)
            except Exception as e:  # noqa: BLE001 - an unsupported case is a row, not a stop
                print(f"gemm,{name},fp8,{m},{n},{k},,,,,,,error: {type(e).__name__}", flush=True)


def moe():
    dev = "cuda"
    experts, topk, hidden, inter = 128, 8, 2048, 768
    if not hasattr(torch, "_grouped_mm"):
        print("moe,qwen3-30b-a3b,bf16,,,,,,,,,,error: torch._grouped_mm not in this PyTorch",
              flush=True)
        return
    w_up = torch.randn(experts, hidden, 2 * inter, device=dev, dtype=torch.bfloat16)
    w_down = torch.randn(experts, inter, hidden, device=dev, dtype=torch.bfloat16)
    gen = torch.Generator(device="cpu").manual_seed(1)
    tokens = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
    if QUICK:
        tokens = [16, 512]
    for t in tokens:
        # Uniform routing: each token picks topk distinct experts.
        choice = torch.stack([torch.randperm(experts, generator=gen)[:topk] for _ in range(t)])
        counts = torch.bincount(choice.flatten(), minlength=experts)
        rows = int(counts.sum())
        offs = torch.cumsum(counts, 0).to(device=dev, dtype=torch.int32)
        x = torch.randn(rows, hidden, device=dev, dtype=torch.bfloat16)
        h = torch.randn(rows, inter, device=dev, dtype=torch.bfloat16)
        active = int((counts > 0).sum())
        for name, a, w, k, n in (("up-gate", x, w_up, hidden, 2 * inter),
                                 ("down", h, w_down, inter, hidden)):
            flops = 2.0 * rows * n * k
            weight_bytes = 2.0 * active * k * n
            # Row-major weights first; where this PyTorch's kernel wants each expert's weight
            # column-major (K contiguous), the same weights in that layout.
            w_col = w.transpose(-2, -1).contiguous().transpose(-2, -1)
            try:
                try:
                    torch._grouped_mm(a, w, offs=offs)
                    layout = ""
                except Exception:  # noqa: BLE001
                    w, layout = w_col, "; column-major weights"
                med, best = timed_graph(lambda: torch._grouped_mm(a, w, offs=offs), 20)
                emit("moe", f"qwen3-30b-a3b-{name}", "bf16", t, n, k, flops,
                     weight_bytes + 2.0 * rows * (k + n), med, best,
                     f"{rows} rows over {active} experts{layout}")
            except Exception as e:  # noqa: BLE001
                print(f"moe,qwen3-30b-a3b-{name},bf16,{t},{n},{k},,,,,,,error: "
                      f"{type(e).__name__}: {str(e)[:80]}", flush=True)


def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dev = "cuda"
    hq, hkv, d = 32, 8, 128
    lengths = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    if QUICK:
        lengths = [8192]
    for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"),
                           (SDPBackend.CUDNN_ATTENTION, "cudnn")):
        for s in lengths:
            q = torch.randn(1, hq, s, d, device=dev, dtype=torch.bfloat16)
            k = torch.randn(1, hkv, s, d, device=dev, dtype=torch.bfloat16)
            v = torch.randn(1, hkv, s, d, device=dev, dtype=torch.bfloat16)
            flops = 4.0 * d * hq * s * (s + 1) / 2.0
            reps = 3 if s >= 65536 else REPS
            try:
                with sdpa_kernel(backend):
                    try:
                        med, best = timed(lambda: torch.nn.functional.scaled_dot_product_attention(
                            q, k, v, is_causal=True, enable_gqa=True), reps=reps, warmup=1)
                        note = ""
                    except Exception:  # noqa: BLE001 - a backend without GQA: K/V repeated
                        kr = k.repeat_interleave(hq // hkv, dim=1)
                        vr = v.repeat_interleave(hq // hkv, dim=1)
                        med, best = timed(lambda: torch.nn.functional.scaled_dot_product_attention(
                            q, kr, vr, is_causal=True), reps=reps, warmup=1)
                        note = "K/V heads repeated (no GQA in this backend)"
                        del kr, vr
                emit("attention", "causal-gqa32-8-d128", label, s, s, d, flops,
                     2.0 * s * d * (2 * hq + 2 * hkv), med, best, note)
            except Exception as e:  # noqa: BLE001
                print(f"attention,causal-gqa32-8-d128,{label},{s},{s},{d},,,,,,,error: "
                      f"{type(e).__name__}: {str(e)[:80]}", flush=True)
            del q, k, v


def attention_prefix():
    """T new query tokens attending to C cached tokens and to themselves causally (a prefill with a
    prefix hit): bottom-right-aligned causal mask, batch 1, 32 query heads, 8 KV heads, d 128."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    dev = "cuda"
    hq, hkv, d = 32, 8, 128
    for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"),
                           (SDPBackend.CUDNN_ATTENTION, "cudnn"),
                           (SDPBackend.EFFICIENT_ATTENTION, "efficient")):
        for c in (0, 4096, 16384, 65536):
            for t in (1, 16, 128, 512, 2048, 8192):
                s = c + t
                q = torch.randn(1, hq, t, d, device=dev, dtype=torch.bfloat16)
                k = torch.randn(1, hkv, s, d, device=dev, dtype=torch.bfloat16)
                v = torch.randn(1, hkv, s, d, device=dev, dtype=torch.bfloat16)
                flops = 4.0 * d * hq * (t * c + t * (t + 1) / 2.0)
                kv_bytes = 2.0 * 2 * hkv * s * d
                try:
                    mask = causal_lower_right(t, s)
                    with sdpa_kernel(backend):
                        med, best = timed(lambda: torch.nn.functional.scaled_dot_product_attention(
                            q, k, v, attn_mask=mask, enable_gqa=True), reps=REPS, warmup=2)
                    emit("attention-prefix", f"gqa32-8-d128-cached{c}", label, t, s, d, flops,
                         kv_bytes + 2.0 * 2 * hq * t * d, med, best)
                except Exception as e:  # noqa: BLE001
                    print(f"attention-prefix,gqa32-8-d128-cached{c},{label},{t},{s},{d},,,,,,,"
                          f"error: {type(e).__name__}: {str(e)[:80]}", flush=True)
                del q, k, v


def gemm_rotated():
    """Small-M GEMMs with the weight rotated over enough copies (>= 256 MB) that none is in L2
    when its turn comes; one CUDA graph of one call per copy, the time per call = replay / copies."""
    dev = "cuda"
    shapes = [s for s in SHAPES if s[0].startswith("llama70b")] + [("llama8b-o", 4096, 4096),
                                                                 ("llama8b-qkv", 4096, 6144)]
    for name, k, n in shapes:
        copies = max(4, -(-256 * 2**20 // (2 * k * n)))
        ws = [torch.randn(k, n, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
        w8s = [w.to(torch.float8_e4m3fn).t().contiguous().t() for w in ws]
        one = torch.ones((), device=dev, dtype=torch.float32)
        for m in (1, 4, 16, 32, 64, 128, 256, 512):
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            flops = 2.0 * m * n * k

            def bf16():
                for w in ws:
                    torch.matmul(a, w)
            med, best = timed_graph(bf16, 1)
            emit("gemm-rotated", name, "bf16", m, n, k, flops, 2.0 * (m * k + k * n + m * n),
                 med / copies, best / copies, f"weights rotated over {copies} copies"
                 + ("" if GRAPHED[0] else "; eager"))
            if m % 16:
                continue
            a8 = a.to(torch.float8_e4m3fn)

            def fp8():
                for w8 in w8s:
                    torch._scaled_mm(a8, w8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            try:
                med, best = timed_graph(fp8, 1)
                emit("gemm-rotated", name, "fp8", m, n, k, flops,
                     1.0 * (m * k + k * n) + 2.0 * m * n, med / copies, best / copies,
                     f"weights rotated over {copies} copies")
            except Exception as e:  # noqa: BLE001
                print(f"gemm-rotated,{name},fp8,{m},{n},{k},,,,,,,error: {type(e).__name__}",
                      flush=True)
        del ws, w8s
        torch.cuda.empty_cache()


def attention_graphed():
    """Causal attention (flash, cudnn) and prefix attention (flash, bottom-right causal) replayed
    in CUDA graphs of 10 calls: the kernel's time without the host's dispatch."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.bias import causal_lower_right
    dev = "cuda"
    hq, hkv, d = 32, 8, 128
    cases = [(backend, label, 0, s) for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"),
                                                        (SDPBackend.CUDNN_ATTENTION, "cudnn"))
             for s in (1024, 2048, 4096, 8192, 16384)]
    cases += [(SDPBackend.FLASH_ATTENTION, "flash", c, t) for c in (4096, 16384, 65536)
              for t in (1, 16, 64, 128, 512, 2048)]
    for backend, label, c, t in cases:
        s = c + t
        q = torch.randn(1, hq, t, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, hkv, s, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, hkv, s, d, device=dev, dtype=torch.bfloat16)
        if c == 0:
            flops = 4.0 * d * hq * t * (t + 1) / 2.0
            kind, name = "attention-graphed", "causal-gqa32-8-d128"

            def call():
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                        enable_gqa=True)
        else:
            flops = 4.0 * d * hq * (t * c + t * (t + 1) / 2.0)
            kind, name = "attention-prefix-graphed", f"gqa32-8-d128-cached{c}"
            mask = causal_lower_right(t, s)

            def call():
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                                        enable_gqa=True)
        try:
            with sdpa_kernel(backend):
                med, best = timed_graph(call, 10)
            emit(kind, name, label, t, s, d, flops, 2.0 * 2 * hkv * s * d + 2.0 * 2 * hq * t * d,
                 med, best, "CUDA graph of 10 calls" if GRAPHED[0] else "eager (capture failed)")
        except Exception as e:  # noqa: BLE001
            print(f"{kind},{name},{label},{t},{s},{d},,,,,,,error: {type(e).__name__}: "
                  f"{str(e)[:80]}", flush=True)
        del q, k, v


def gemm_power():
    """The largest GEMMs of the sweep repeated for ~3 s each, with wall-clock markers (the SM clock
    and power are logged beside by run.sh): does M = 16384 run slower because the clock drops?"""
    dev = "cuda"
    for name, k, n in (("llama8b-gate-up", 4096, 28672), ("llama70b-tp8-gate-up", 8192, 7168)):
        w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
        for m in (4096, 16384):
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            flops = 2.0 * m * n * k
            print(f"# gemm-power {name} m={m} start {time.time():.3f}", flush=True)
            end = time.time() + 3.0
            while time.time() < end:
                med, best = timed_graph(lambda: torch.matmul(a, w), 10)
                emit("gemm-power", name, "bf16", m, n, k, flops, 2.0 * (m * k + k * n + m * n),
                     med, best, f"wall {time.time():.3f}")
            print(f"# gemm-power {name} m={m} end {time.time():.3f}", flush=True)


def main():
    t0 = time.time()
    p = torch.cuda.get_device_properties(0)
    print(f"# {p.name}, {p.multi_processor_count} SMs, torch {torch.__version__}, "
          f"cuda {torch.version.cuda}", flush=True)
    print("kind,name,dtype,m,n,k,flops,bytes,median_s,best_s,median_TFLOPps,median_GBps,note",
          flush=True)
    torch.manual_seed(0)
    parts = (gemms, moe, attention, attention_prefix)
    if EXTRA:
        parts = (attention_prefix,)
    if EXTRA2:
        parts = (gemm_rotated, attention_graphed, gemm_power)
    for part in parts:
        try:
            part()
        except Exception as e:  # noqa: BLE001 - keep what the other parts measure
            print(f"# {part.__name__} failed: {type(e).__name__}: {e}", flush=True)
        print(f"# {part.__name__} done at {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
