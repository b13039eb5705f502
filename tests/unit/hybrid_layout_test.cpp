// Issue 25, serving.kv_cache: hybrid with layouts beyond TP, partial recompute and sharded
// replicated loads: a pipeline stage's share of the full layers' KV, of the sliding layers'
// windows and of the linear layers' states (its range of the layer pattern), the recompute
// chooser's bytes for a loaded tail, and the copies of attention KV only. Every expected value
// is computed by hand from the checkpoints' config.json values in the comments.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/llm/architecture.hpp"
#include "models/llm/parallelism.hpp"
#include "serving/request_cost.hpp"
#include "serving/run_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace hybrid_layout_test {
namespace {

const auto preset = test::model_preset;
using test::has;

// gpt-oss-120b: 36 layers "SFSF…" (layer i sliding when i is even), 8 KV heads × 64, W = 128:
// 2 (K, V) × 8 × 64 × 2 B = 2048 B per layer and token (BF16, TP 1).
constexpr double kGptOssLayer = 2048;

TEST(HybridLayout, GptOss120bStagesHoldTheirRangesLayerKinds) {
  const ModelSpec m = preset("gpt-oss-120b");
  // pp 4: 9 layers each (vLLM get_pp_indices). Stage 0, layers 0-8: sliding 0, 2, 4, 6, 8 (5),
  // full 1, 3, 5, 7 (4); stage 1, layers 9-17: full 9, 11, 13, 15, 17 (5), sliding 4.
  const HybridKv s0 = stage_hybrid_kv_per_gpu(m, DType::Bf16, 1, 4, 0);
  const HybridKv s1 = stage_hybrid_kv_per_gpu(m, DType::Bf16, 1, 4, 1);
  EXPECT_DOUBLE_EQ(s0.full_Bpt, 4 * kGptOssLayer);
  EXPECT_DOUBLE_EQ(s0.sliding_Bpt, 5 * kGptOssLayer);
  EXPECT_DOUBLE_EQ(s1.full_Bpt, 5 * kGptOssLayer);
  EXPECT_DOUBLE_EQ(s1.sliding_Bpt, 4 * kGptOssLayer);
  EXPECT_DOUBLE_EQ(s0.window, 128.0);
  EXPECT_DOUBLE_EQ(s0.state_B, 0.0);
  // A prefix of K = 1000 on stage 0: 4 × 1000 × 2048 + 5 × 128 × 2048 = 9,502,720 B; stage 1:
  // 5 × 1000 × 2048 + 4 × 128 × 2048 = 11,288,576 B. Two of each: 41,582,592 B =
  // 18 × 1000 × 2048 + 18 × 128 × 2048, the whole model's.
  EXPECT_DOUBLE_EQ(s0.bytes(0, 1000, 1000), 9502720.0);
  EXPECT_DOUBLE_EQ(s1.bytes(0, 1000, 1000), 11288576.0);
  EXPECT_DOUBLE_EQ(2 * (9502720.0 + 11288576.0), kv_bytes_for_prefix(m, DType::Bf16, 1000));
  // The layout's pool unit per token is the fullest stage's full layers: 5 × 2048 = 10,240 B;
  // stage 0 holds 8192 B per token of it.
  ParallelismSpec p;
  p.tp = 1;
  p.pp = 4;
  const LayoutCost c = layout_cost(m, DType::Bf16, "bf16", p, 8, true);
  EXPECT_DOUBLE_EQ(c.kv_bytes_rank, 10240.0);
  EXPECT_DOUBLE_EQ(c.stages[0].kv_bytes_rank, 8192.0);
  EXPECT_DOUBLE_EQ(c.stages[1].kv_bytes_rank, 10240.0);
  // Unified: every layer keeps every token, 9 × 2048 = 18,432 B per stage.
  EXPECT_DOUBLE_EQ(layout_cost(m, DType::Bf16, "bf16", p, 8).kv_bytes_rank, 18432.0);
  // pp 2 and pp 3: 18 and 12 layers from an even index, half of each kind: the stages match.
  p.pp = 2;
  EXPECT_DOUBLE_EQ(layout_cost(m, DType::Bf16, "bf16", p, 8, true).kv_bytes_rank, 9 * 2048.0);
  p.pp = 3;
  const LayoutCost c3 = layout_cost(m, DType::Bf16, "bf16", p, 8, true);
  EXPECT_DOUBLE_EQ(c3.stages[0].kv_bytes_rank, 6 * 2048.0);
  EXPECT_DOUBLE_EQ(c3.stages[2].kv_bytes_rank, 6 * 2048.0);
}

TEST(HybridLayout, StageShareOfALoadFollowsItsKinds) {
  const ModelSpec m = preset("gpt-oss-120b");
  const HybridKv whole = hybrid_kv_per_gpu(m, DType::Bf16, 1);
  const HybridKv s0 = stage_hybrid_kv_per_gpu(m, DType::Bf16, 1, 4, 0);
  // A load inside the window (128 tokens): both kinds carry every token, equal bytes; stage 0
  // holds 4/18 of the full and 5/18 of the sliding bytes: (4 + 5) / 36 = 1/4.
  const std::array<double, 4> short_load = {128.0, 128.0, 0, 0};
  EXPECT_DOUBLE_EQ(hybrid_stage_share(whole, s0, short_load), 0.25);
  // A stored 256-token chunk: 256 full-layer tokens and the last 128 of the sliding layers:
  // (256 × 4/18 + 128 × 5/18) / 384 = (1024 + 640) / 6912 = 13/54.
  const std::array<double, 4> chunk = {256.0, 128.0, 0, 0};
  EXPECT_DOUBLE_EQ(hybrid_stage_share(whole, s0, chunk), 13.0 / 54);
  // The engine's per-GPU share of a stored chunk (GpuUnit::kv_share): the same 13/54, and
  // 14/54 on stage 1; the four stages add up to the chunk.
  ServingSpec sv;
  sv.kv_cache = KvCacheMode::Hybrid;
  sv.tp = 1;
  sv.parallelism.tp = 1;
  sv.parallelism.pp = 4;
  ASSERT_EQ(sv.tier_chunk_tokens(), 256);
  const ServedKv k = served_kv(m, sv, 1);
  ASSERT_EQ(k.stage_share.size(), 4u);
  EXPECT_DOUBLE_EQ(k.stage_share[0], 13.0 / 54);
  EXPECT_DOUBLE_EQ(k.stage_share[1], 14.0 / 54);
  EXPECT_NEAR(k.stage_share[0] + k.stage_share[1] + k.stage_share[2] + k.stage_share[3], 1.0,
              1e-15);
  // The pool: each kind's largest stage share, 5 × 2048 full and 5 × 2048 sliding.
  ASSERT_TRUE(k.pool.has_value());
  EXPECT_DOUBLE_EQ(k.pool->full_Bpt, 10240.0);
  EXPECT_DOUBLE_EQ(k.pool->sliding_Bpt, 10240.0);
  // Without stages the pool is the whole model's per-GPU layout.
  sv.parallelism.pp = 1;
  sv.parallelism.dp_attention = 2;
  const ServedKv d = served_kv(m, sv, 1);
  EXPECT_TRUE(d.stages.empty());
  EXPECT_DOUBLE_EQ(d.pool->full_Bpt, 18 * 2048.0);
}

TEST(HybridLayout, Qwen3NextStagesSplitTheStates) {
  // Qwen3-Next-80B-A3B: 48 layers "LLLF" × 12, 2 KV heads × 256 (2048 B per full layer and token
  // at TP 1), 36 Gated DeltaNet states of 1,097,728 B. pp 3: 16 layers each, 12 linear and 4
  // full: 4 × 2048 = 8192 B per token and 12 × 1,097,728 = 13,172,736 B of state per stage.
  const ModelSpec m = preset("qwen3-next-80b-a3b");
  for (int s = 0; s < 3; ++s) {
    const HybridKv h = stage_hybrid_kv_per_gpu(m, DType::Bf16, 1, 3, s);
    EXPECT_DOUBLE_EQ(h.full_Bpt, 8192.0);
    EXPECT_DOUBLE_EQ(h.state_B, 13172736.0);
  }
  // Kimi-Linear-48B-A3B: 27 layers "LLLF LLLF LLLF LLLF LLLF LLLF LLF", pp 3, 9 each: stage 0
  // (layers 0-8) full 3, 7; stage 1 (9-17) full 11, 15; stage 2 (18-26) full 19, 23, 26. Its 20
  // linear layers: 7, 7 and 6 of them.
  const ModelSpec k = preset("kimi-linear-48b-a3b");
  const HybridKv whole = hybrid_kv_per_gpu(k, DType::Bf16, 1);
  const HybridKv k0 = stage_hybrid_kv_per_gpu(k, DType::Bf16, 1, 3, 0);
  const HybridKv k2 = stage_hybrid_kv_per_gpu(k, DType::Bf16, 1, 3, 2);
  EXPECT_DOUBLE_EQ(k0.full_Bpt * 7, whole.full_Bpt * 2);
  EXPECT_DOUBLE_EQ(k2.full_Bpt * 7, whole.full_Bpt * 3);
  EXPECT_DOUBLE_EQ(k0.state_B, whole.state_B * 7 / 20);
  EXPECT_DOUBLE_EQ(k2.state_B, whole.state_B * 6 / 20);
}

TEST(HybridLayout, ReplicationCountsAttentionKvOnly) {
  // Qwen3-Next at TP 4: its 2 KV heads on 2 GPUs each (r = 2); the states' 32 value heads split
  // 4 ways (never copied). Before issue 25 the factor went through the unified cache and
  // refused the linear layers.
  EXPECT_EQ(kv_replication_factor(preset("qwen3-next-80b-a3b"), DType::Bf16, 4), 2);
  // Kimi-Linear's MLA latent is whole on every GPU: r = tp.
  EXPECT_EQ(kv_replication_factor(preset("kimi-linear-48b-a3b"), DType::Bf16, 4), 4);
  // gpt-oss-120b: 8 KV heads at TP 8, one each: no copies.
  EXPECT_EQ(kv_replication_factor(preset("gpt-oss-120b"), DType::Bf16, 8), 1);
}

TEST(HybridLayout, RecomputeSavesFullLayerBytesAndWindowBytesOnlyInsideTheWindow) {
  // The chooser's load of the tail [R, K) at 10 GB/s with no fixed costs: bytes / 1e10.
  RequestCostModel m;
  m.model = preset("gpt-oss-120b");
  m.gpu = read_preset_config<GpuSpec>(ConfigNode::make_scalar("h100-sxm5"), "gpu", "gpu");
  m.gpu.copy_kernel_block_overhead_s = 0.0;
  m.gpu.dma_copy_overhead_s = 0.0;
  m.load_rate_Bps = 1e10;
  m.kv_bytes_per_token_gpu = 36 * 2048.0;  // unified: every layer's
  const std::int64_t K = 8192, T = 64;
  // Unified, R = 4096: 4096 × 73,728 = 301,989,888 B.
  EXPECT_DOUBLE_EQ(request_cost_parts(m, K, T, 4096).load_s, 301989888.0 / 1e10);
  m.hybrid = hybrid_kv_per_gpu(m.model, DType::Bf16, 1);
  m.kv_bytes_per_token_gpu = 18 * 2048.0;
  // Hybrid, R = 4096: the full layers' 4096 tokens, 18 × 4096 × 2048 = 150,994,944 B, and the
  // window (still all in the tail), 18 × 128 × 2048 = 4,718,592 B: 155,713,536 B. Recomputing
  // 4096 tokens saved 18 × 4096 × 2048 B against R = 0, the full layers' bytes only.
  EXPECT_DOUBLE_EQ(request_cost_parts(m, K, T, 4096).load_s, 155713536.0 / 1e10);
  EXPECT_DOUBLE_EQ(request_cost_parts(m, K, T, 0).load_s,
                   (18.0 * 8192 * 2048 + 18.0 * 128 * 2048) / 1e10);
  // R = 8100, inside the last W = 128 (from 8064): the tail's 92 tokens carry both kinds,
  // 36 × 92 × 2048 = 6,782,976 B.
  EXPECT_DOUBLE_EQ(request_cost_parts(m, K, T, 8100).load_s, 6782976.0 / 1e10);
  // Recomputing costs the same compute either way (the model's layers over R tokens).
  RequestCostModel u = m;
  u.hybrid.reset();
  EXPECT_DOUBLE_EQ(request_cost_parts(m, K, T, 4096).compute_s,
                   request_cost_parts(u, K, T, 4096).compute_s);

  // Qwen3-Next at TP 1: the tail's state comes whatever R < K: R = 8176 leaves 16 tokens,
  // 12 × 16 × 2048 + 39,518,208 = 39,911,424 B; R = K loads nothing.
  RequestCostModel q = m;
  q.model = preset("qwen3-next-80b-a3b");
  q.hybrid = hybrid_kv_per_gpu(q.model, DType::Bf16, 1);
  q.kv_bytes_per_token_gpu = q.hybrid->full_Bpt;
  EXPECT_DOUBLE_EQ(request_cost_parts(q, K, T, K - 16).load_s, 39911424.0 / 1e10);
  EXPECT_DOUBLE_EQ(request_cost_parts(q, K, T, K).load_s, 0.0);
}

TEST(HybridLayout, SettingsOnceRefusedAreModelled) {
  ServingSpec sv;
  sv.kv_cache = KvCacheMode::Hybrid;
  sv.tp = 4;
  sv.recompute.mode = RecomputeMode::Fixed;
  EXPECT_NO_THROW(refuse_hybrid_kv_settings(preset("qwen3-next-80b-a3b"), sv, 8, "run."));
  sv.recompute.mode = RecomputeMode::Auto;
  sv.replicated_kv = ReplicatedKv::ShardAllgather;
  EXPECT_NO_THROW(refuse_hybrid_kv_settings(preset("qwen3-next-80b-a3b"), sv, 8, "run."));
  sv.parallelism.tp = 2;
  sv.parallelism.pp = 2;
  sv.parallelism.dp_attention = 2;
  EXPECT_NO_THROW(refuse_hybrid_kv_settings(preset("qwen3-next-80b-a3b"), sv, 8, "run."));
  // A layout's attention tp that does not divide the linear heads (16 key heads, tp 3 would not
  // divide the 16 query heads either): named under serving.kv_cache with the attention tp.
  sv.parallelism.tp = 3;
  try {
    refuse_hybrid_kv_settings(preset("qwen3-next-80b-a3b"), sv, 8, "run.");
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "run.serving.kv_cache: hybrid")) << e.what();
    EXPECT_TRUE(has(e.what(), "attention tp 3")) << e.what();
  }
}

// `kappasim kappa --layout` on a hybrid model (issue 25): the GPU of the fullest stage.
// gpt-oss-120b at PP 4, TP 1: stage 1 holds 5 full and 4 sliding layers (above). K → ∞: 5 × 2048 =
// 10,240 B per token. At K = 100,000: (5 × 2048 × 100,000 + 4 × 2048 × 128) / 100,000 =
// 10,250.48576 B (stage 0's 4 full and 5 sliding layers: 8,205.1072 B). DP-attention 2: a rank's
// share is half.
TEST(HybridLayout, KappaOnALayoutTakesTheFullestStagesGpu) {
  const ModelSpec m = preset("gpt-oss-120b");
  const SystemSpec s = test::system_preset("h100");
  KappaQuery q;
  q.layout = parse_layout("tp=1,pp=4", "test");
  const KappaPoint inf = evaluate_kappa(m, s, q);
  EXPECT_NEAR(inf.b_kv_gpu, 5 * kGptOssLayer, 1e-9);
  q.context_k = 100000;
  const KappaPoint at = evaluate_kappa(m, s, q);
  EXPECT_NEAR(at.b_kv_gpu, 10250.48576, 1e-9);
  ASSERT_TRUE(at.layout.has_value());
  EXPECT_NEAR(at.layout->b_kv_share, 10250.48576, 1e-9);
  q.layout = parse_layout("tp=1,pp=4,dp_attention=2", "test");
  const KappaPoint dp = evaluate_kappa(m, s, q);
  EXPECT_NEAR(dp.b_kv_gpu, 10250.48576, 1e-9);
  EXPECT_NEAR(dp.layout->b_kv_share, 10250.48576 / 2, 1e-9);
}

}  // namespace
}  // namespace hybrid_layout_test
}  // namespace kappasim
