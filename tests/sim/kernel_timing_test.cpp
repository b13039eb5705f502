// The pure kernel model (models/gpu/kernel_timing): per-kernel roofline times, tile and wave
// quantisation, the ring all-reduce, FLOP totals against models/llm, MoE expert weight reads,
// the SM-fraction scaling, and the whole-model calibration point (Llama-3.1-8B, 100K tokens on
// one H100, 6.85 s measured). Expected values are worked out by hand in each test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/gpu/kernel_timing.hpp"

namespace kappasim {
namespace kernel_timing_test {
namespace {

// A GPU with round numbers, every simulator field set.
GpuSpec test_gpu() {
  GpuSpec g;
  g.name = "test-gpu";
  g.hbm_capacity_bytes = 80e9;
  g.hbm_bandwidth_Bps = 3e12;
  g.peak_flops = {{"bf16", 1000e12}, {"fp8", 2000e12}};
  g.sm_count = 132;
  g.l2_bytes = 50e6;
  g.tdp_w = 700;
  g.nvlink_Bps = 450e9;
  g.copy_engines = 2;
  g.dma_copy_overhead_s = 3e-6;
  g.copy_kernel_block_overhead_s = 0.2e-6;
  g.gemm_efficiency = 0.8;
  g.attention_efficiency = 0.7;
  g.hbm_efficiency = 0.9;
  g.kernel_launch_overhead_s = 2e-6;
  g.nvlink_latency_s = 3e-6;
  return g;
}

ModelSpec model(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}

GpuSpec preset_gpu(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<GpuSpec>(ref, "gpu", "gpu");
}

const Kernel& find(const std::vector<Kernel>& ks, const std::string& name) {
  for (const Kernel& k : ks)
    if (k.name == name) return k;
  throw std::logic_error("no kernel " + name);
}

TEST(KernelTiming, BigGemmIsPeakTimesEfficiencyPlusLaunch) {
  const GpuSpec g = test_gpu();
  // M = 132·128 rows, N = 64·128: 132 × 64 = 8448 tiles = exactly 64 waves on 132 SMs, no
  // partial tile: shape efficiency 1.
  const double M = 16896, N = 8192, K = 8192;
  const double flops = 2 * M * N * K;
  const double expected = flops / (1000e12 * 0.8) + 2e-6;
  const KernelTime t = gemm_kernel_time(g, M, N, K, "bf16");
  EXPECT_NEAR(t.time_s, expected, 1e-12);
  EXPECT_NEAR(t.efficiency, 0.8, 1e-12);
  // Memory roof: (M·K + K·N + M·N)·2 B / (3 TB/s · 0.9) is well below the FLOP time.
  EXPECT_NEAR(t.memory_time_s, (M * K + K * N + M * N) * 2 / 2.7e12, 1e-15);
  EXPECT_LT(t.memory_time_s, t.flops_time_s);
  EXPECT_DOUBLE_EQ(gemm_time(g, M, N, K, "bf16"), t.time_s);
  // FP8 doubles the peak.
  EXPECT_NEAR(gemm_kernel_time(g, M, N, K, "fp8").flops_time_s, flops / (2000e12 * 0.8), 1e-12);
}

TEST(KernelTiming, TileAndWaveQuantisationByHand) {
  // 200 × 300 × 64 on 128 × 128 tiles: 2 × 3 tiles covering 256 × 384; 6 tiles in one wave of
  // 132, and K = 64 is a single K-tile, so no split-K.
  EXPECT_NEAR(gemm_shape_efficiency(200, 300, 64, 1, 132), (200.0 * 300) / (256 * 384) * 6 / 132,
              1e-12);
  // With K = 4096 (64 K-tiles) the 6 tiles split K 22 ways: 132 CTAs, one full wave.
  EXPECT_NEAR(gemm_shape_efficiency(200, 300, 4096, 1, 132), (200.0 * 300) / (256 * 384), 1e-12);
  // K = 256 allows only 4 slices: 24 CTAs.
  EXPECT_NEAR(gemm_shape_efficiency(200, 300, 256, 1, 132), (200.0 * 300) / (256 * 384) * 24 / 132,
              1e-12);
  // 1280 × 1792: 10 × 14 = 140 whole tiles, 2 waves on 132 SMs (second holds 8).
  EXPECT_NEAR(gemm_shape_efficiency(1280, 1792, 4096, 1, 132), 140.0 / 264, 1e-12);
  // Grouped: 96 rows over 32 groups is 3 rows each, one short (64-row, gemm_small_m) tile per
  // group: 32 tiles × 2 column tiles = 64 tiles; K = 128 (2 K-tiles) splits them 2 ways: 128
  // CTAs in one wave.
  EXPECT_NEAR(gemm_shape_efficiency(96, 256, 128, 32, 132),
              (96.0 * 256) / (32 * 64 * 256) * 128 / 132, 1e-12);
  // The GEMM time uses it: 200 × 300 × 64.
  const GpuSpec g = test_gpu();
  const double eff = 0.8 * (200.0 * 300) / (256 * 384) * 6 / 132;
  EXPECT_NEAR(gemm_kernel_time(g, 200, 300, 64, "bf16").flops_time_s,
              2 * 200.0 * 300 * 64 / (1000e12 * eff), 1e-15);
  // Attention: T = 1000 queries, 32 heads of their own KV (no GQA): 8 query tiles (1024 rows),
  // 256 CTAs = 2 waves (264 slots).
  EXPECT_NEAR(attention_shape_efficiency(1000, 1000, 32, 32, 132), 1000.0 / 1024 * 256 / 264,
              1e-12);
  // T = 16, 32 q heads over 8 KV heads: unpacked tiles are 16/128 full; packing the group of 4
  // gives 64/128 rows, so FA3 packs: 8 CTAs; with K+T = 100016 keys it splits the KV 16 ways to
  // fill 128 of the 132 SMs.
  EXPECT_NEAR(attention_shape_efficiency(16, 100016, 32, 8, 132), 64.0 / 128 * 128 / 132, 1e-12);
}

TEST(KernelTiming, ABatchsAttentionIsOneLaunchWhoseSequencesShareTheWaves) {
  // test_gpu: 132 SMs, 1000 TFLOP/s BF16, attention efficiency 0.7, HBM 3 TB/s x 0.9, 2 us a
  // launch. A one-token (decode) query over 256 keys with 4 q heads over 1 KV head (a GQA model
  // at TP 8): packed, 4 rows of a 128-row tile (1/32), one CTA; its 3 KV blocks split it at most
  // 3 ways, so alone it fills 3 of 132 SMs. FLOPs 4 x 257 x 128 x 4, KV read 257 x 512 B.
  auto seq = [] {
    Kernel k;
    k.name = "attention";
    k.kind = Kernel::Kind::Attention;
    k.m = 1;
    k.n = 257;
    k.heads = 4;
    k.kv_heads = 1;
    k.flops = 4.0 * 257 * 128 * 4;
    k.hbm_bytes = 257.0 * 512;
    return k;
  };
  const GpuSpec g = test_gpu();
  // One sequence: exactly kernel_time of its kernel; FLOP-bound at 1/32 x 3/132.
  const KernelTime one = batch_attention_time({seq()}, g);
  EXPECT_EQ(one.time_s, kernel_time(seq(), g, "bf16").time_s);
  const double alone_flops = 4.0 * 257 * 128 * 4 / (1000e12 * 0.7 * (1.0 / 32 * 3 / 132));
  EXPECT_NEAR(one.flops_time_s, alone_flops, 1e-12 * alone_flops);
  EXPECT_GT(one.flops_time_s, one.memory_time_s);
  // 64 of them in one launch: 64 CTAs, split 2 ways (floor(132 / 64), under the 3 KV blocks) to
  // 128 CTAs in one wave: fill 128 / 132 for all; the KV reads add up; one launch.
  const std::vector<Kernel> batch(64, seq());
  const KernelTime t = batch_attention_time(batch, g);
  const double flops_s = 64 * (4.0 * 257 * 128 * 4) / (1000e12 * 0.7 * (1.0 / 32 * 128 / 132));
  const double mem_s = 64 * 257.0 * 512 / (3e12 * 0.9);
  EXPECT_NEAR(t.flops_time_s, flops_s, 1e-12 * flops_s);
  EXPECT_NEAR(t.memory_time_s, mem_s, 1e-12 * mem_s);
  EXPECT_NEAR(t.time_s, std::max(flops_s, mem_s) + 2e-6, 1e-12);
  // Timed one by one (each filling 3 SMs) and added with one launch, the batch took 64 times
  // the lone FLOP time: over ten times longer than the shared launch.
  EXPECT_GT(64 * alone_flops, 10 * t.time_s);
  // Issue 20: TensorRT-LLM's generation kernel (masked_mha) streams each decode token's KV with
  // no row tile: the batch costs its KV bytes at the memory roof and one launch.
  const KernelTime mm = batch_attention_time(batch, g, 1.0, DecodeAttention::MaskedMha);
  EXPECT_DOUBLE_EQ(mm.flops_time_s, 0);
  EXPECT_NEAR(mm.time_s, mem_s + 2e-6, 1e-12);
  // A prefill sequence beside them keeps its FlashAttention launch, its CTAs its own: 1000 new
  // tokens, 8 query tiles (1000/1024 full; packing the 4 heads fills no better) × 4 heads = 32
  // CTAs, split 4 ways (floor(132 / 32)) to 128 in one wave (no reference on test_gpu: no length
  // factor).
  Kernel pre = seq();
  pre.m = 1000;
  pre.n = 1000;
  pre.flops = 1e12;
  std::vector<Kernel> mixed = batch;
  mixed.push_back(pre);
  const KernelTime mx = batch_attention_time(mixed, g, 1.0, DecodeAttention::MaskedMha);
  const double pre_s = 1e12 / (1000e12 * 0.7 * (1000.0 / 1024 * 128 / 132));
  EXPECT_NEAR(mx.flops_time_s, pre_s, 1e-12 * pre_s);
}

TEST(KernelTiming, MemoryBoundKernelIsBytesOverBandwidth) {
  const GpuSpec g = test_gpu();
  Kernel k;
  k.name = "norm";
  k.kind = Kernel::Kind::Elementwise;
  k.hbm_bytes = 1e9;
  const KernelTime t = kernel_time(k, g, "bf16");
  EXPECT_NEAR(t.time_s, 1e9 / (3e12 * 0.9) + 2e-6, 1e-15);
  EXPECT_EQ(t.flops_time_s, 0);
  // A GEMV-like GEMM (M = 1) is memory-bound: its 8192 × 16384 BF16 weights dominate.
  const KernelTime v = gemm_kernel_time(g, 1, 16384, 8192, "bf16");
  EXPECT_GT(v.memory_time_s, v.flops_time_s);
  EXPECT_NEAR(v.time_s, (8192.0 + 8192.0 * 16384 + 16384) * 2 / 2.7e12 + 2e-6, 1e-15);
}

TEST(KernelTiming, RingAllReduceByHand) {
  const GpuSpec g = test_gpu();
  const ModelSpec m = model("llama-3.1-70b");
  const auto ks = layer_kernels(m, 0, 1000, 0, 8, DType::Bf16);
  const Kernel& ar = find(ks, "attn_all_reduce");
  EXPECT_EQ(ar.kind, Kernel::Kind::AllReduce);
  // T · hidden · 2 B = 1000 · 8192 · 2.
  EXPECT_DOUBLE_EQ(ar.comm_bytes, 16384000);
  const double expected = 2.0 * 7 / 8 * 16384000 / 450e9 + 2 * 7 * 3e-6 + 2e-6;
  EXPECT_NEAR(kernel_time(ar, g, "bf16").time_s, expected, 1e-15);
  // tp 1: no all-reduce kernels at all.
  for (const Kernel& k : layer_kernels(m, 0, 1000, 0, 1, DType::Bf16))
    EXPECT_NE(k.kind, Kernel::Kind::AllReduce) << k.name;
}

TEST(KernelTiming, FlopTotalMatchesModelAccounting) {
  const ModelSpec m = model("llama-3.1-70b");
  const double T = 4096, K = 65536;
  // Whole model: 2 × matmul parameters per token (no LM head), plus causal attention.
  const double whole = linear_flops_per_token(m, false) * T + attention_flops(m, K, T);
  // By hand for Llama-3.1-70B: per layer q 8192², k and v 2·8192·1024, o 8192², MLP
  // 3·8192·28672; 80 layers.
  const double params = 80 * (2 * 8192.0 * 8192 + 2 * 8192.0 * 1024 + 3 * 8192.0 * 28672);
  const double pairs = T * K + T * (T + 1) / 2;
  EXPECT_NEAR(whole, 2 * params * T + 4 * 80 * 64 * 128 * pairs, 1e-9 * whole);
  for (int tp : {1, 8}) {
    double sum = 0;
    for (int l = 0; l < m.num_layers; ++l)
      for (const Kernel& k : layer_kernels(m, l, T, K, tp, DType::Bf16)) sum += k.flops;
    EXPECT_NEAR(sum, whole / tp, 1e-9 * whole) << "tp " << tp;
  }
}

TEST(KernelTiming, ExpectedExpertsTouchedByHand) {
  // One token picks exactly top-k distinct experts.
  EXPECT_NEAR(expected_experts_touched(1, 8, 128), 8, 1e-12);
  // Two tokens: 8, plus the second token's 8 picks each new with probability 120/128: 8 + 7.5.
  EXPECT_NEAR(expected_experts_touched(2, 8, 128), 15.5, 1e-12);
  // T = 4: 128 · (1 − (15/16)^4) = 128 · (1 − 50625/65536) = 14911/512 = 29.123046875.
  EXPECT_NEAR(expected_experts_touched(4, 8, 128), 29.123046875, 1e-12);
  // No tokens touch nothing; many tokens touch all of them.
  EXPECT_NEAR(expected_experts_touched(0, 8, 128), 0, 1e-12);
  EXPECT_NEAR(expected_experts_touched(1000, 8, 128), 128, 1e-9);
  // top-k = E: every expert at once.
  EXPECT_NEAR(expected_experts_touched(1, 8, 8), 8, 1e-12);
}

TEST(KernelTiming, MoeReadsTheExpertsItTouches) {
  const ModelSpec m = model("qwen3-235b-a22b");  // 128 experts, top-8, moe_intermediate 1536
  // T = 4: 32 token-expert rows; 29.123046875 experts expected (ExpectedExpertsTouchedByHand).
  {
    const double e = 29.123046875;
    const auto ks = layer_kernels(m, 10, 4, 0, 1, DType::Bf16);
    const Kernel& gu = find(ks, "experts_gate_up");
    EXPECT_NEAR(gu.groups, e, 1e-9);
    EXPECT_DOUBLE_EQ(gu.m, 32);
    EXPECT_DOUBLE_EQ(gu.moe_tokens, 4);
    EXPECT_DOUBLE_EQ(gu.moe_experts, 128);
    const double weights = e * 4096.0 * 2 * 1536 * 2;
    const double acts = 32 * 4096.0 * 2 + 32 * 2 * 1536.0 * 2;
    EXPECT_NEAR(gu.hbm_bytes, weights + acts, 1e-6 * weights);
    const Kernel& dn = find(ks, "experts_down");
    EXPECT_NEAR(dn.hbm_bytes, e * 1536.0 * 4096 * 2 + 32 * 1536.0 * 2 + 32 * 4096.0 * 2,
                1e-6 * weights);
  }
  // T = 100 at tp 4: 800 rows touch 128 · (1 − (15/16)^100) = 127.798 experts, each a quarter
  // of its intermediate.
  {
    const double e = 127.79847097;
    const auto ks = layer_kernels(m, 10, 100, 0, 4, DType::Bf16);
    const Kernel& gu = find(ks, "experts_gate_up");
    EXPECT_NEAR(gu.groups, e, 1e-6);
    EXPECT_NEAR(gu.hbm_bytes, e * 4096.0 * 768 * 2 + 800 * 4096.0 * 2 + 800 * 768.0 * 2, 1e3);
    EXPECT_DOUBLE_EQ(gu.flops, 2 * 800.0 * 768 * 4096);
  }
}

// Issue 20: before its grouped GEMMs vLLM runs two routing kernels per MoE layer: fused_topk's
// ops.topk_softmax over the router logits, then ops.moe_align_block_size, which sorts the
// token-expert pairs by expert. Both move few bytes: each costs about its launch.
TEST(KernelTiming, MoeRoutingKernelsPrecedeTheGroupedGemms) {
  const ModelSpec m = model("qwen3-235b-a22b");  // 128 experts, top-8, hidden 4096
  const auto ks = layer_kernels(m, 10, 100, 0, 1, DType::Bf16);
  // 100 tokens: reads 100 x 128 BF16 logits (25,600 B); writes 800 pairs x (4 B FP32 weight +
  // 4 B expert id + 4 B source row) = 9,600 B.
  EXPECT_DOUBLE_EQ(find(ks, "moe_topk_softmax").hbm_bytes, 25600.0 + 9600.0);
  // Reads the 800 INT32 expert ids, writes 800 INT32 sorted row ids: 6,400 B.
  EXPECT_DOUBLE_EQ(find(ks, "experts_align_block_size").hbm_bytes, 6400.0);
  // Order: router, top-k, align, then the grouped gate_up.
  std::vector<std::string> names;
  for (const Kernel& k : ks) names.push_back(k.name);
  const auto at = [&](const std::string& n) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return i;
    return names.size();
  };
  EXPECT_EQ(at("moe_topk_softmax"), at("router") + 1);
  EXPECT_EQ(at("experts_align_block_size"), at("moe_topk_softmax") + 1);
  EXPECT_EQ(at("experts_gate_up"), at("experts_align_block_size") + 1);
  // On the round-number GPU (3 TB/s at 0.9) the align kernel is launch-bound:
  // 6,400 B / 2.7e12 B/s = 2.37 ns + the 2 us launch.
  const KernelTime t = kernel_time(find(ks, "experts_align_block_size"), test_gpu(), "bf16");
  EXPECT_NEAR(t.time_s, 2e-6 + 6400.0 / 2.7e12, 1e-15);
}

// Issue 20: vLLM's fused MoE kernel pads each expert's rows to its BLOCK_SIZE_M, which
// get_default_config picks by the step's token count M against the expert count E (M <= E:
// 16 × 32 blocks; else 64 × 64), not to a fixed 128-row GEMM tile.
TEST(KernelTiming, MoeBlocksFollowTheFusedMoeConfig) {
  const GpuSpec::Tiles t;  // defaults: vLLM's get_default_config
  EXPECT_DOUBLE_EQ(moe_block(16, 128, t).m, 16);
  EXPECT_DOUBLE_EQ(moe_block(16, 128, t).n, 32);
  EXPECT_DOUBLE_EQ(moe_block(128, 128, t).m, 16);  // M <= E
  EXPECT_DOUBLE_EQ(moe_block(129, 128, t).m, 64);
  EXPECT_DOUBLE_EQ(moe_block(129, 128, t).n, 64);
  // A GPU preset's own blocks are used.
  GpuSpec::Tiles own;
  own.moe_small_m = 32;
  EXPECT_DOUBLE_EQ(moe_block(16, 128, own).m, 32);

  // Qwen3-30B-A3B (E 128, top-8, hidden 2048, moe_intermediate 768), a 16-token step at tp 1:
  // 128 token-expert rows over 82.42 touched experts (128 · (1 − (15/16)^16)), 1.55 rows
  // each: one 16-row block per expert. gate_up N = 1536 = 48 blocks of 32. Executed rows 128,
  // padded rows 16 per touched expert: tile efficiency 128 / (16 · 82.42); CTAs 82.42 · 48 =
  // 3956.3 in 30 waves of 132: the touched count cancels, efficiency = 128 · 48 / (16 · 30 ·
  // 132) = 6144 / 63360.
  const ModelSpec m = model("qwen3-30b-a3b");
  const auto ks = layer_kernels(m, 5, 16, 0, 1, DType::Bf16);
  const Kernel& gu = find(ks, "experts_gate_up");
  const double touched = 82.42251130;
  EXPECT_NEAR(gu.groups, touched, 1e-6);
  const MoeBlock b = moe_block(gu.moe_tokens, gu.moe_experts, t);
  EXPECT_NEAR(moe_shape_efficiency(gu.m, gu.n, gu.groups, b, 132), 6144.0 / 63360, 1e-12);
  // Executed vs charged FLOPs of the 48 layers' expert GEMMs (gate_up 2·128·1536·2048, down
  // 2·128·2048·768 per layer): executed 48 · 2 · 128 · 2048 · 2304 = 5.80e10. Padding to 16-row
  // blocks charges 16 · 82.42 / 128 = 10.3× that (5.97e11); a fixed 128-row tile for each of the
  // 128 experts would charge 128× (7.42e12, ≈ 7.4 TFLOP).
  const Kernel& dn = find(ks, "experts_down");
  const double executed = 48 * (gu.flops + dn.flops);
  EXPECT_NEAR(executed, 48 * 2 * 128.0 * 2048 * 2304, 1);
  const double tile_eff = (128.0 * 1536) / (touched * 16 * 1536);  // N divides into blocks
  EXPECT_NEAR(executed / tile_eff, 5.97378e11, 1e7);
  EXPECT_NEAR(executed * 128, 7.4217e12, 1e8);
  // The kernel time uses it: FLOP time = executed / (peak · gemm_efficiency · shape).
  const GpuSpec g = test_gpu();
  const KernelTime kt = kernel_time(gu, g, "bf16");
  EXPECT_NEAR(kt.flops_time_s, gu.flops / (1000e12 * 0.8 * 6144.0 / 63360), 1e-15);
  // Above E tokens the 64-row blocks: T = 1024 → 8192 rows over ~128 experts, 64 rows each =
  // exactly one 64-row block; N 1536 = 24 blocks of 64: tile efficiency ~1.
  const auto big = layer_kernels(m, 5, 1024, 0, 1, DType::Bf16);
  const Kernel& gb = find(big, "experts_gate_up");
  const MoeBlock bb = moe_block(gb.moe_tokens, gb.moe_experts, t);
  EXPECT_DOUBLE_EQ(bb.m, 64);
  // Were the 8192 rows spread evenly, 128 blocks_m × 24 = 3072 CTAs = 23.3 → 24 waves on 132:
  // 3072 / 3168.
  EXPECT_NEAR(moe_shape_efficiency(gb.m, gb.n, 128, bb, 132), 3072.0 / 3168, 1e-12);
  // Binomial rows pad more (MoeRowBlocksPadEachExpertsBinomialRows): ≈ 188.7 row blocks, tile
  // efficiency 128 / 188.7.
  const double rb = moe_row_blocks(1024, 8, 128, 64);
  const double ctas = rb * 24;
  EXPECT_NEAR(moe_shape_efficiency(gb.m, gb.n, rb, bb, 132),
              (8192.0 * 1536) / (rb * 64 * 1536) * ctas / (std::ceil(ctas / 132) * 132), 1e-12);
}

// Issue 20: the library's tile by size: a GEMM of M <= 64 rows runs on 64-row tiles (Hopper
// WGMMA m64), not 128; and whole waves on 132 SMs.
TEST(KernelTiming, SmallMGemmTilesAndWavesByHand) {
  // 16 × 4096 × 4096: one 64-row tile × 32 column tiles = 32 CTAs, 16/64 full; K = 4096 (64
  // K-tiles) splits floor(132/32) = 4 ways: 128 CTAs in one wave of 132.
  EXPECT_NEAR(gemm_shape_efficiency(16, 4096, 4096, 1, 132), 16.0 / 64 * 128 / 132, 1e-12);
  // The same on 128-row tiles only (gemm_small_m below M): 16/128 full.
  GpuSpec::Tiles tall;
  tall.gemm_small_m = 8;
  EXPECT_NEAR(gemm_shape_efficiency(16, 4096, 4096, 1, 132, tall), 16.0 / 128 * 128 / 132, 1e-12);
  // 4096 × 4096: 32 × 32 = 1024 tiles of 128 × 128, 8 waves of 132 (1056 slots).
  EXPECT_NEAR(gemm_shape_efficiency(4096, 4096, 4096, 1, 132), 1024.0 / 1056, 1e-12);
  // 4224 × 4096: 33 × 32 = 1056 tiles: exactly 8 waves, and 4224 = 33 · 128: efficiency 1.
  EXPECT_NEAR(gemm_shape_efficiency(4224, 4096, 4096, 1, 132), 1.0, 1e-12);
}

// Issue 20: host launches with and without CUDA graphs (models/gpu/launch_model).
TEST(LaunchModel, GraphVersusEagerLaunchCostByHand) {
  LaunchSpec eager;  // TensorRT-LLM v0.5-like: every kernel from the host, 4 µs each
  eager.graph_mode = GraphMode::None;
  eager.host_launch_s = 4e-6;
  // 450 kernels of a 32-layer forward (33 outside any graph): 450 × 4 µs = 1.8 ms.
  ForwardLaunches f = forward_launches(eager, 128, 450, 32, 33);
  EXPECT_FALSE(f.captured);
  EXPECT_DOUBLE_EQ(f.eager_kernels, 450);
  EXPECT_NEAR(host_issue_s(eager, f), 1.8e-3, 1e-15);
  // The GPU waits for the host only when its own time is shorter.
  EXPECT_NEAR(launch_stall_s(1.8e-3, 1.0e-3), 0.8e-3, 1e-15);
  EXPECT_DOUBLE_EQ(launch_stall_s(1.8e-3, 3.0e-3), 0);

  LaunchSpec pw;  // vLLM v1: piecewise graphs up to 512 tokens, 10 µs eager, 2.5 µs per replay
  pw.graph_mode = GraphMode::Piecewise;
  pw.max_capture_tokens = 512;
  pw.host_launch_s = 10e-6;
  pw.graph_launch_s = 2.5e-6;
  // 128 tokens: 33 pieces replayed + 33 eager (32 attention, the LM head): 33 · 2.5 + 33 · 10 µs.
  f = forward_launches(pw, 128, 450, 32, 33);
  EXPECT_TRUE(f.captured);
  EXPECT_DOUBLE_EQ(f.graph_replays, 33);
  EXPECT_DOUBLE_EQ(f.eager_kernels, 33);
  EXPECT_NEAR(host_issue_s(pw, f), 412.5e-6, 1e-15);
  // 512 tokens is still captured; 513 runs every kernel eagerly: 450 × 10 µs.
  EXPECT_TRUE(forward_launches(pw, 512, 450, 32, 33).captured);
  f = forward_launches(pw, 513, 450, 32, 33);
  EXPECT_FALSE(f.captured);
  EXPECT_NEAR(host_issue_s(pw, f), 4.5e-3, 1e-15);
  // Full graphs: one replay plus the LM head eager.
  LaunchSpec full = pw;
  full.graph_mode = GraphMode::Full;
  f = forward_launches(full, 128, 450, 32, 1);
  EXPECT_NEAR(host_issue_s(full, f), 2.5e-6 + 10e-6, 1e-15);
}

// Issue 20: a model run in eager PyTorch (vLLM --enforce-eager) pays its Python per layer besides
// the launches; a captured step and a stack without the cost (a compiled model) do not.
TEST(LaunchModel, EagerPythonPerLayerByHand) {
  LaunchSpec eager;
  eager.graph_mode = GraphMode::None;
  eager.host_launch_s = 10e-6;
  eager.host_per_layer_s = 0.5e-3;
  // 627 kernels of a 48-layer forward: 627 x 10 us + 48 x 0.5 ms = 6.27 + 24 ms.
  ForwardLaunches f = forward_launches(eager, 16, 627, 48, 49);
  EXPECT_DOUBLE_EQ(f.eager_layers, 48);
  EXPECT_NEAR(host_issue_s(eager, f), 30.27e-3, 1e-12);
  // Against 14 ms of GPU work the GPU waits 16.27 ms for the host.
  EXPECT_NEAR(launch_stall_s(host_issue_s(eager, f), 14e-3), 16.27e-3, 1e-12);
  // The same cost in a piecewise stack applies to its uncaptured steps only.
  LaunchSpec pw = eager;
  pw.graph_mode = GraphMode::Piecewise;
  pw.max_capture_tokens = 512;
  f = forward_launches(pw, 16, 627, 48, 49);
  EXPECT_DOUBLE_EQ(f.eager_layers, 0);
  f = forward_launches(pw, 513, 627, 48, 49);
  EXPECT_DOUBLE_EQ(f.eager_layers, 48);
}

TEST(LaunchModel, HostBoundPrefillTakesTheHostIssueTime) {
  const GpuSpec g = test_gpu();  // forward_overhead not set: no host time after the kernels
  const ModelSpec m = model("llama-3.1-8b");
  const PrefillTime base = prefill_time(m, g, 1, 16, 0);
  EXPECT_DOUBLE_EQ(base.launch_stall_s, 0);  // the default LaunchSpec charges nothing
  // 1 ms per eager launch: the host is far slower than any 16-token kernel, so the forward
  // takes kernels × 1 ms, whatever the kernels' own times.
  LaunchSpec slow;
  slow.host_launch_s = 1e-3;
  const PrefillTime p = prefill_time(m, g, 1, 16, 0, "bf16", DType::Bf16, slow);
  EXPECT_EQ(p.kernels, base.kernels);
  EXPECT_NEAR(p.host_issue_s, p.kernels * 1e-3, 1e-12);
  EXPECT_NEAR(p.compute_time_s, p.kernels * 1e-3, 1e-12);
  EXPECT_NEAR(p.launch_stall_s, p.kernels * 1e-3 - base.compute_time_s, 1e-12);
  // A batch step of the one sequence is launched the same way.
  const StepTime st = batch_step_time(m, g, 1, {{16, 0, true}}, "bf16", 1.0, DType::Bf16, slow);
  EXPECT_NEAR(st.total.compute_time_s, p.compute_time_s, 1e-12);
}

TEST(KernelTiming, HalfTheSmsDoublesComputeBoundTime) {
  const GpuSpec g = test_gpu();
  // 8448 tiles: 64 waves on 132 SMs, 128 waves on 66.
  Kernel k;
  k.name = "gemm";
  k.kind = Kernel::Kind::Gemm;
  k.m = 16896;
  k.n = 8192;
  k.k = 8192;
  k.flops = 2 * k.m * k.n * k.k;
  k.hbm_bytes = 1e6;
  const KernelTime full = kernel_time(k, g, "bf16", 1.0);
  const KernelTime half = kernel_time(k, g, "bf16", 0.5);
  EXPECT_NEAR(half.time_s - 2e-6, 2 * (full.time_s - 2e-6), 1e-12);
  EXPECT_NEAR(half.flops_time_s, k.flops / (1000e12 * 0.5 * 0.8), 1e-12);
  // A memory-bound kernel does not slow down.
  Kernel e;
  e.kind = Kernel::Kind::Elementwise;
  e.hbm_bytes = 1e9;
  EXPECT_DOUBLE_EQ(kernel_time(e, g, "bf16", 0.5).time_s, kernel_time(e, g, "bf16", 1).time_s);
}

TEST(KernelTiming, BadArgumentsAreInputErrors) {
  const ModelSpec m = model("llama-3.1-8b");
  const GpuSpec g = test_gpu();
  EXPECT_THROW(prefill_time(m, g, 1, 0, 0), InputError);
  EXPECT_THROW(prefill_time(m, g, 1, 10, -1), InputError);
  EXPECT_THROW(prefill_time(m, g, 3, 10, 0), InputError);         // 3 does not divide 32 heads
  EXPECT_THROW(prefill_time(m, g, 1, 10, 0, "fp4"), InputError);  // no fp4 peak
  GpuSpec missing = g;
  missing.attention_efficiency.reset();
  try {
    prefill_time(m, missing, 1, 10, 0);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("attention_efficiency"), std::string::npos) << e.what();
  }
}

TEST(KernelTiming, KernelsPerLayer) {
  // Dense GQA: norm, qkv, rotary, KV write, attention, o_proj, norm, gate_up, act, down.
  EXPECT_EQ(layer_kernels(model("llama-3.1-8b"), 0, 100, 0, 1, DType::Bf16).size(), 10u);
  EXPECT_EQ(layer_kernels(model("llama-3.1-70b"), 0, 100, 0, 8, DType::Bf16).size(), 12u);
  // Qwen3 MoE adds q/k norm and router, top-k softmax, align, grouped gate_up, act, grouped
  // down, moe_sum.
  EXPECT_EQ(layer_kernels(model("qwen3-235b-a22b"), 5, 100, 0, 1, DType::Bf16).size(), 15u);
}

TEST(KernelTiming, Llama8B100kPrefillOnH100MatchesMeasurement) {
  // vLLM blog "Inside vLLM's New KV Offloading Connector" (2026-01-08): one 100K-token request
  // on one H100 took ≈ 6.85 s to prefill. The model must land within ±20% from its sourced
  // parameters alone.
  const GpuSpec g = preset_gpu("h100-sxm5");
  const PrefillTime p = prefill_time(model("llama-3.1-8b"), g, 1, 100000, 0);
  EXPECT_GT(p.compute_time_s, 0.8 * 6.85);
  EXPECT_LT(p.compute_time_s, 1.2 * 6.85);
  // Attention dominates: ≈ 2.6e15 causal FLOPs against ≈ 1.4e15 linear.
  EXPECT_GT(p.attention_time_s, p.linear_time_s);
  EXPECT_EQ(p.kernels, 32 * 10 + 3);
  EXPECT_EQ(p.comm_time_s, 0);
}

}  // namespace
}  // namespace kernel_timing_test
}  // namespace kappasim

namespace kappasim {
namespace kernel_timing_test {
namespace {

// A batch of one sequence is the single-request prefill; a batch adds its sequences' attention
// and shares the token-parallel kernels (weights read once for the whole step).
TEST(KernelTiming, BatchStepOfOneSequenceIsThePrefill) {
  const GpuSpec g = preset_gpu("h100-sxm5");
  for (const char* name : {"llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3"}) {
    const ModelSpec m = model(name);
    const PrefillTime p = prefill_time(m, g, 8, 512, 20000);
    const StepTime s = batch_step_time(m, g, 8, {{512, 20000}}, "bf16");
    EXPECT_NEAR(s.total.compute_time_s / p.compute_time_s, 1.0, 1e-12) << name;
    EXPECT_NEAR(s.total.flops / p.flops, 1.0, 1e-12) << name;
    EXPECT_EQ(s.total.kernels, p.kernels) << name;
  }
}

// BatchStepParts (issue 24): the token-count parts of earlier batches, reused. Over random
// batches (new slices, repeated totals) of a dense model, a MoE model with dense first layers,
// a pattern of sliding and full layers and interleaved MoE, at all SMs and at a fraction, with
// three slots (collisions everywhere) and with many: every field the same bits as without it.
TEST(KernelTiming, BatchStepPartsGiveTheSameBits) {
  const GpuSpec g = preset_gpu("h100-sxm5");
  std::uint64_t x = 88172645463325252ULL;  // xorshift64
  const auto next = [&x](std::uint64_t n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % n;
  };
  const auto same = [](const StepTime& a, const StepTime& b) {
    const PrefillTime& p = a.total;
    const PrefillTime& q = b.total;
    return a.first_layer_s == b.first_layer_s && a.last_layer_s == b.last_layer_s &&
           p.compute_time_s == q.compute_time_s && p.linear_time_s == q.linear_time_s &&
           p.attention_time_s == q.attention_time_s && p.comm_time_s == q.comm_time_s &&
           p.other_time_s == q.other_time_s && p.host_time_s == q.host_time_s &&
           p.host_issue_s == q.host_issue_s && p.launch_stall_s == q.launch_stall_s &&
           p.flops == q.flops && p.hbm_bytes == q.hbm_bytes && p.kernels == q.kernels;
  };
  LaunchSpec launch;
  launch.decode_attention = DecodeAttention::MaskedMha;
  struct Case {
    const char* model;
    int tp;
    const char* dtype;
    DType kv;
  };
  for (const Case& c :
       {Case{"llama-3.1-70b", 8, "bf16", DType::Bf16}, Case{"deepseek-v3", 8, "fp8", DType::Fp8},
        Case{"gpt-oss-20b", 1, "bf16", DType::Int8},
        Case{"llama-4-maverick", 8, "bf16", DType::Bf16}}) {
    const ModelSpec m = model(c.model);
    for (std::size_t slots : {3u, 4096u}) {
      BatchStepParts parts(slots);
      for (int i = 0; i < 300; ++i) {
        std::vector<SeqSlice> batch;
        const std::uint64_t n = 1 + next(4);
        for (std::uint64_t j = 0; j < n; ++j)
          batch.push_back({static_cast<double>(1 + next(j == 0 ? 64 : 3) * 16),
                           static_cast<double>(next(3) * 1000), next(2) == 0});
        const double frac = next(4) == 0 ? 0.75 : 1.0;
        const StepTime plain = batch_step_time(m, g, c.tp, batch, c.dtype, frac, c.kv, launch);
        const StepTime with =
            batch_step_time(m, g, c.tp, batch, c.dtype, frac, c.kv, launch, &parts);
        ASSERT_TRUE(same(plain, with)) << c.model << " batch " << i << " slots " << slots;
      }
    }
  }
}

TEST(KernelTiming, BatchAttentionAddsUpAndWeightsAreReadOnce) {
  GpuSpec g = preset_gpu("h100-sxm5");
  const ModelSpec m = model("llama-3.1-70b");
  // Each sequence (100 new tokens, 8 q heads over 1 KV head at TP 8) packs into 7 tiles: alone,
  // 7 CTAs split 18 ways (floor(132 / 7)) = 126 SMs; together 14 CTAs split 9 ways = 126. The
  // fill is the same; the KV splits are not (AttentionEfficiencyRisesWithTheKvTilesACtaCovers:
  // every split pays its prologue), so the additivity is checked without the length model.
  GpuSpec flat = g;
  flat.attention_reference_seqlen.reset();
  flat.attention_pipeline_tiles.reset();
  const StepTime a = batch_step_time(m, flat, 8, {{100, 50000}}, "bf16");
  const StepTime b = batch_step_time(m, flat, 8, {{100, 30000}}, "bf16");
  const StepTime ab = batch_step_time(m, flat, 8, {{100, 50000}, {100, 30000}}, "bf16");
  // Attention: the two sequences' attention times, less one launch per layer.
  EXPECT_NEAR(
      ab.total.attention_time_s,
      a.total.attention_time_s + b.total.attention_time_s - 80 * *g.kernel_launch_overhead_s,
      1e-12);
  // With it, the batch's 9 splits per sequence pay half the prologues of 18: it is faster.
  const double sum = batch_step_time(m, g, 8, {{100, 50000}}, "bf16").total.attention_time_s +
                     batch_step_time(m, g, 8, {{100, 30000}}, "bf16").total.attention_time_s -
                     80 * *g.kernel_launch_overhead_s;
  EXPECT_LT(batch_step_time(m, g, 8, {{100, 50000}, {100, 30000}}, "bf16").total.attention_time_s,
            sum);
  // Token-parallel work on 200 tokens costs less than twice 100 tokens: weights read once.
  EXPECT_LT(ab.total.linear_time_s, a.total.linear_time_s + b.total.linear_time_s);
  // FLOPs are additive: the LM head runs for two rows (one per finishing sequence) in one GEMM.
  EXPECT_NEAR(ab.total.flops - a.total.flops - b.total.flops, 0, 1e-9 * ab.total.flops);
}

}  // namespace
}  // namespace kernel_timing_test
}  // namespace kappasim

// Compute efficiency by precision and mechanism (issue 10, item 3): the per-precision GEMM
// efficiency, the activation-quantisation kernels of W8A8 / W4A4 GEMMs, the paged-KV attention
// factor and the per-forward host cost. Hand values from the formulas in kernel_timing.hpp.
namespace kappasim {
namespace kernel_timing_test {
namespace {

TEST(KernelTimingPrecision, PerPrecisionGemmEfficiencyOverridesTheScalar) {
  GpuSpec g = test_gpu();
  // The shape of BigGemmIsPeakTimesEfficiencyPlusLaunch: shape efficiency exactly 1.
  const double M = 16896, N = 8192, K = 8192, flops = 2 * M * N * K;
  // Without a map entry FP8 uses gemm_efficiency (0.8) of its own 2000 TFLOP/s peak.
  EXPECT_NEAR(gemm_kernel_time(g, M, N, K, "fp8").flops_time_s, flops / (2000e12 * 0.8), 1e-12);
  g.gemm_efficiency_by_precision = {{"fp8", 0.6}};
  EXPECT_NEAR(gemm_kernel_time(g, M, N, K, "fp8").flops_time_s, flops / (2000e12 * 0.6), 1e-12);
  EXPECT_NEAR(gemm_kernel_time(g, M, N, K, "fp8").efficiency, 0.6, 1e-12);
  // BF16 keeps the scalar.
  EXPECT_NEAR(gemm_kernel_time(g, M, N, K, "bf16").flops_time_s, flops / (1000e12 * 0.8), 1e-12);
  EXPECT_DOUBLE_EQ(g.gemm_efficiency_for("bf16"), 0.8);
  EXPECT_DOUBLE_EQ(g.gemm_efficiency_for("fp8"), 0.6);
}

// A GEMM bound by memory streams at its precision's HBM fraction where the GPU gives one
// (hbm_efficiency_by_precision), else at hbm_efficiency; other kernels keep hbm_efficiency.
TEST(KernelTimingPrecision, PerPrecisionHbmEfficiencyTimesAMemoryBoundGemm) {
  GpuSpec g = test_gpu();
  const double N = 12288, K = 5376;
  const double bytes = N * K * 1 + K * 1 + N * 2;  // FP8 weights and activation row, BF16 out
  const double bw = g.hbm_bandwidth_Bps;
  const double e = *g.hbm_efficiency;
  EXPECT_NEAR(gemm_kernel_time(g, 1, N, K, "fp8").memory_time_s, bytes / (bw * e), 1e-15);
  g.hbm_efficiency_by_precision = {{"fp8", 0.5}};
  const KernelTime t = gemm_kernel_time(g, 1, N, K, "fp8");
  EXPECT_NEAR(t.memory_time_s, bytes / (bw * 0.5), 1e-15);
  EXPECT_NEAR(t.time_s, bytes / (bw * 0.5) + *g.kernel_launch_overhead_s, 1e-15);
  EXPECT_DOUBLE_EQ(g.gemm_hbm_efficiency_for("bf16"), e);
  EXPECT_DOUBLE_EQ(g.gemm_hbm_efficiency_for("fp8"), 0.5);
}

// H100's FP8 value from vLLM PR 49363 (H100, N = 12288, K = 5376, CUTLASS FP8 at batch 1:
// 5.163 TFLOP/s): 2 x 12288 x 5376 FLOP in 25.59 us, 2 us of it the launch, so 66,090,240 B in
// 23.59 us = 2.80 TB/s = 0.836 of 3.35 TB/s. The model gives back the batch-1 figure, and the
// same run's batch-16 (83.05 TFLOP/s) and batch-64 (318.4) within 2%, which it was not set from.
TEST(KernelTimingPrecision, H100Fp8WeightStreamingFollowsVllmPr49363) {
  const GpuSpec h = preset_gpu("h100-sxm5");
  EXPECT_DOUBLE_EQ(h.gemm_hbm_efficiency_for("fp8"), 0.836);
  EXPECT_DOUBLE_EQ(h.gemm_hbm_efficiency_for("bf16"), 0.92);
  const double N = 12288, K = 5376;
  const auto tflops = [&](double M) {
    return 2 * M * N * K / gemm_kernel_time(h, M, N, K, "fp8").time_s / 1e12;
  };
  EXPECT_NEAR(tflops(1), 5.163, 0.01 * 5.163);
  EXPECT_NEAR(tflops(16), 83.05, 0.02 * 83.05);
  EXPECT_NEAR(tflops(64), 318.4, 0.02 * 318.4);
}

TEST(KernelTimingPrecision, HopperPresetsRunFp8BelowTwiceTheirBf16Rate) {
  // The sourced Hopper values: BF16 0.78 of 989, FP8 0.68 of 1979 (cuBLAS 12.9: 1.75x BF16).
  const GpuSpec h = preset_gpu("h100-sxm5");
  EXPECT_DOUBLE_EQ(h.gemm_efficiency_for("bf16"), 0.78);
  EXPECT_DOUBLE_EQ(h.gemm_efficiency_for("fp8"), 0.68);
  const double M = 16896, N = 8192, K = 8192;
  const double ratio = gemm_kernel_time(h, M, N, K, "bf16").flops_time_s /
                       gemm_kernel_time(h, M, N, K, "fp8").flops_time_s;
  EXPECT_NEAR(ratio, 1979 * 0.68 / (989 * 0.78), 1e-9);  // ≈ 1.74, not 2
}

TEST(KernelTimingPrecision, Fp8LayerQuantisesEachGemmInputOnce) {
  const ModelSpec m = model("llama-3.1-8b");
  const auto bf16 = layer_kernels(m, 0, 100, 0, 1, DType::Bf16);
  const auto fp8 = layer_kernels(m, 0, 100, 0, 1, DType::Fp8);
  // qkv, o, gate_up and down each get one quantisation kernel before them.
  ASSERT_EQ(fp8.size(), bf16.size() + 4);
  for (std::size_t i = 0; i + 1 < fp8.size(); ++i)
    if (fp8[i + 1].kind == Kernel::Kind::Gemm) {
      EXPECT_EQ(fp8[i].name, fp8[i + 1].name + "_act_quant");
      EXPECT_EQ(fp8[i].kind, Kernel::Kind::Elementwise);
    }
  // Reads T·K BF16, writes T·K FP8 and one FP32 scale per token (torchao: 2 + 1 B/element).
  EXPECT_DOUBLE_EQ(find(fp8, "qkv_proj_act_quant").hbm_bytes, 100.0 * 4096 * 3 + 100 * 4);
  EXPECT_DOUBLE_EQ(find(fp8, "down_proj_act_quant").hbm_bytes, 100.0 * 14336 * 3 + 100 * 4);
  // The FLOPs are unchanged.
  double f16 = 0, f8 = 0;
  for (const auto& k : bf16) f16 += k.flops;
  for (const auto& k : fp8) f8 += k.flops;
  EXPECT_DOUBLE_EQ(f16, f8);
  // W4A4 (fp4 compute): 4-bit values plus one FP8 scale per 16 elements.
  const auto fp4 = layer_kernels(m, 0, 100, 0, 1, DType::Int4);
  EXPECT_DOUBLE_EQ(find(fp4, "qkv_proj_act_quant").hbm_bytes,
                   100.0 * 4096 * (2 + 0.5 + 1.0 / 16) + 100 * 4);
}

TEST(KernelTimingPrecision, MoeQuantisesTokensBeforeDispatchAndLeavesTheRouterBf16) {
  const ModelSpec m = model("qwen3-30b-a3b");  // top-8 of 128 experts, hidden 2048
  const auto ks = layer_kernels(m, 0, 100, 0, 1, DType::Fp8);
  // gate_up's input is the 100 tokens' hidden states, quantised once (not 800 pairs).
  EXPECT_DOUBLE_EQ(find(ks, "experts_gate_up_act_quant").hbm_bytes, 100.0 * 2048 * 3 + 100 * 4);
  // down's input is the 800 token-expert pairs' intermediate (moe_intermediate_size 768).
  EXPECT_DOUBLE_EQ(find(ks, "experts_down_act_quant").hbm_bytes, 800.0 * 768 * 3 + 800 * 4);
  EXPECT_THROW(find(ks, "router_act_quant"), std::logic_error);
}

TEST(KernelTimingPrecision, PagedKvFactorSlowsOnlyTheAttentionRate) {
  GpuSpec g = test_gpu();
  const ModelSpec m = model("llama-3.1-8b");
  const Kernel at = find(layer_kernels(m, 0, 8192, 0, 1, DType::Bf16), "attention");
  const KernelTime contiguous = kernel_time(at, g, "bf16");
  g.attention_paged_kv_efficiency = 0.8;
  const KernelTime paged = kernel_time(at, g, "bf16");
  EXPECT_NEAR(paged.flops_time_s, contiguous.flops_time_s / 0.8, 1e-15);
  EXPECT_DOUBLE_EQ(paged.memory_time_s, contiguous.memory_time_s);
  const Kernel gemm = find(layer_kernels(m, 0, 8192, 0, 1, DType::Bf16), "o_proj");
  EXPECT_DOUBLE_EQ(kernel_time(gemm, g, "bf16").time_s,
                   kernel_time(gemm, test_gpu(), "bf16").time_s);
}

TEST(KernelTimingPrecision, ForwardOverheadIsChargedOncePerForward) {
  const ModelSpec m = model("llama-3.1-8b");
  GpuSpec g = test_gpu();
  const PrefillTime without = prefill_time(m, g, 1, 512, 0);
  g.forward_overhead_s = 0.5e-3;
  const PrefillTime with = prefill_time(m, g, 1, 512, 0);
  EXPECT_NEAR(with.compute_time_s - without.compute_time_s, 0.5e-3, 1e-12);
  EXPECT_DOUBLE_EQ(with.host_time_s, 0.5e-3);
  EXPECT_DOUBLE_EQ(without.host_time_s, 0);
  EXPECT_EQ(with.kernels, without.kernels);  // host work is not a GPU kernel
  // A step of three sequences is one forward: one host cost.
  g.forward_overhead_s.reset();
  const StepTime s0 = batch_step_time(m, g, 1, {{512, 0}, {256, 1000}, {64, 50}}, "bf16");
  g.forward_overhead_s = 0.5e-3;
  const StepTime s1 = batch_step_time(m, g, 1, {{512, 0}, {256, 1000}, {64, 50}}, "bf16");
  EXPECT_NEAR(s1.total.compute_time_s - s0.total.compute_time_s, 0.5e-3, 1e-12);
  EXPECT_DOUBLE_EQ(s1.total.host_time_s, 0.5e-3);
}

}  // namespace
}  // namespace kernel_timing_test
}  // namespace kappasim

namespace kappasim {
namespace kernel_timing_test {
namespace {

// The new GPU keys are checked like every other: a fraction above 1, an unknown precision and a
// negative time are InputErrors naming the key (docs/bad-inputs.md).
std::string gpu_error(const std::string& override_yaml) {
  ConfigNode n = ConfigNode::make_map({"gpu.yaml", 1, 1});
  n.set("preset", ConfigNode::make_scalar("h100-sxm5"));
  merge_into(n, parse_yaml(override_yaml, "gpu.yaml"));
  try {
    read_preset_config<GpuSpec>(n, "gpu", "system.gpu");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(KernelTimingPrecision, BadPrecisionAndMechanismKeysAreInputErrors) {
  std::string e = gpu_error("gemm_efficiency_by_precision: {fp8: 1.5}\n");
  EXPECT_NE(e.find("system.gpu.gemm_efficiency_by_precision.fp8"), std::string::npos) << e;
  e = gpu_error("gemm_efficiency_by_precision: {fp8: 0}\n");
  EXPECT_NE(e.find("greater than zero"), std::string::npos) << e;
  e = gpu_error("gemm_efficiency_by_precision: {fp9: 0.5}\n");
  EXPECT_NE(e.find("fp9"), std::string::npos) << e;
  EXPECT_NE(e.find("fp8"), std::string::npos) << e;  // the nearest valid precision
  e = gpu_error("hbm_efficiency_by_precision: {fp8: 0}\n");
  EXPECT_NE(e.find("system.gpu.hbm_efficiency_by_precision.fp8"), std::string::npos) << e;
  e = gpu_error("hbm_efficiency_by_precision: {fp8: 1.2}\n");
  EXPECT_NE(e.find("hbm_efficiency_by_precision"), std::string::npos) << e;
  e = gpu_error("attention_paged_kv_efficiency: 0\n");
  EXPECT_NE(e.find("attention_paged_kv_efficiency"), std::string::npos) << e;
  e = gpu_error("forward_overhead: -1 ms\n");
  EXPECT_NE(e.find("forward_overhead"), std::string::npos) << e;
  EXPECT_EQ(gpu_error("forward_overhead: 0 ms\n"), "(no error)");
  // Issue 20: an efficiency whose reference implies more than the peak at long sequences (0.99
  // at S = 8192 with c = 1.69: 0.99 / (32 / 34.19) = 1.06), and one length key without the other.
  e = gpu_error("attention_efficiency: 0.99\n");
  EXPECT_NE(e.find("system.gpu.attention_efficiency"), std::string::npos) << e;
  EXPECT_NE(e.find("at most 1"), std::string::npos) << e;
  EXPECT_EQ(gpu_error("attention_efficiency: 0.9\n"), "(no error)");  // 0.96 at the limit
  ConfigNode n = ConfigNode::make_map({"gpu.yaml", 1, 1});
  n.set("preset", ConfigNode::make_scalar("a100-sxm4-80gb"));
  merge_into(n, parse_yaml("attention_pipeline_tiles: 2\n", "gpu.yaml"));
  try {
    read_preset_config<GpuSpec>(n, "gpu", "system.gpu");
    ADD_FAILURE() << "attention_pipeline_tiles alone was accepted";
  } catch (const InputError& x) {
    EXPECT_NE(std::string(x.what()).find("system.gpu.attention_reference_seqlen"),
              std::string::npos)
        << x.what();
  }
}

// Issue 20: attention's achievable fraction by length. Each CTA pays c KV tiles' worth of
// prologue and epilogue, and a causal query tile computes its diagonal KV tile whole; both
// weigh less as the KV a CTA covers grows. Efficiency = attention_efficiency × the sequence's
// counted / (computed + splits · c) over the reference's.
TEST(KernelTiming, AttentionEfficiencyRisesWithTheKvTilesACtaCovers) {
  GpuSpec g = test_gpu();  // attention_efficiency 0.7, 132 SMs, 1000 TFLOP/s
  g.attention_reference_seqlen = 2048;
  g.attention_pipeline_tiles = 2;
  // Reference: a causal S = 2048 forward, 16 query tiles; tile i computes i + 1 KV tiles (mean
  // 8.5), the FLOP count holds 8 of them: 8 / (8.5 + 2).
  EXPECT_NEAR(g.attention_reference_factor(), 8.0 / 10.5, 1e-12);
  // A 65,536-token prefill from nothing, 32 heads of their own KV: 512 query tiles, 16,384
  // CTAs, no KV split. counted 256, computed 256.5.
  const AttentionShape a = attention_shape(65536, 65536, 32, 32);
  EXPECT_NEAR(a.kv_counted, 256, 1e-12);
  EXPECT_NEAR(a.kv_computed, 256.5, 1e-12);
  const double f = (256.0 / 258.5) / (8.0 / 10.5);  // 1.2998
  EXPECT_NEAR(attention_length_factor(a, 1, g), f, 1e-12);
  // The kernel's FLOP rate: 0.7 · f of peak, × 16,384 CTAs over 125 waves of 132.
  Kernel k;
  k.kind = Kernel::Kind::Attention;
  k.m = 65536;
  k.n = 65536;
  k.heads = 32;
  k.kv_heads = 32;
  k.flops = 1e15;
  const double eff = 0.7 * f * 16384 / (125.0 * 132);
  EXPECT_NEAR(kernel_time(k, g, "bf16").flops_time_s, 1e15 / (1000e12 * eff), 1e-9);
  // At the reference's own shape the factor is 1.
  EXPECT_NEAR(attention_length_factor(attention_shape(2048, 2048, 32, 32), 1, g), 1, 1e-12);
  // One decode token over 4,096 cached keys, split 16 ways: counted 32 + 1/256, computed 33,
  // plus 16 prologues of 2 tiles.
  const AttentionShape d = attention_shape(1, 4097, 32, 8);
  EXPECT_NEAR(attention_length_factor(d, 16, g), (32 + 1.0 / 256) / (33 + 32) / (8.0 / 10.5),
              1e-12);
  // Without a reference the length does not matter.
  EXPECT_DOUBLE_EQ(attention_length_factor(a, 1, test_gpu()), 1);
}

// Issue 20: moe_align_block_size pads each expert's own rows, and under uniform routing one
// expert's rows are Binomial(T, k/E), not T·k/E each.
TEST(KernelTiming, MoeRowBlocksPadEachExpertsBinomialRows) {
  // T = 2 tokens, top-1 of 2 experts: n ~ Bin(2, 1/2): P(0, 1, 2) = 1/4, 1/2, 1/4.
  // 1-row blocks: E[n] = 1 per expert, 2 in all; 2-row blocks: P(n > 0) = 3/4 per expert.
  EXPECT_NEAR(moe_row_blocks(2, 1, 2, 1), 2, 1e-12);
  EXPECT_NEAR(moe_row_blocks(2, 1, 2, 2), 1.5, 1e-12);
  // Every token on every expert (top_k = E): each expert has T rows.
  EXPECT_NEAR(moe_row_blocks(100, 4, 4, 64), 4 * 2, 1e-12);
  // Qwen3-30B-A3B at T = 16 (16-row blocks): at most 16 rows each, so one block per touched
  // expert: 128 · (1 − (15/16)^16).
  EXPECT_NEAR(moe_row_blocks(16, 8, 128, 16), 82.42251130, 1e-6);
  // T = 1024 (64-row blocks): n ~ Bin(1024, 1/16), mean 64, sd √(1024 · 15/256) = 7.746. An
  // even spread would fill exactly one block each (128); P(n ≥ 65) ≈ P(Z > 0.5 / 7.746) = 0.474
  // (normal with continuity correction), P(n ≥ 129) ≈ 0: ≈ 128 · 1.474 = 188.7 blocks.
  EXPECT_NEAR(moe_row_blocks(1024, 8, 128, 64), 188.7, 1.5);
  // A fractional token count interpolates: half-way between T = 2 and T = 3 (Bin(3, 1/2) with
  // 2-row blocks: P(n > 0) + P(n > 2) = 7/8 + 1/8 = 1 per expert).
  EXPECT_NEAR(moe_row_blocks(2.5, 1, 2, 2), (1.5 + 2.0) / 2, 1e-12);
}

}  // namespace
}  // namespace kernel_timing_test
}  // namespace kappasim
