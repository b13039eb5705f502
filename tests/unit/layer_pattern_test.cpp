// Issue 25: sliding-window and linear-attention layers in the KV and FLOP accounting
// (models/llm/architecture), in the analytic κ (models/analytic/kappa) and the serving engine's
// refusal (serving/run_spec). Every expected value is computed by hand from the checkpoints'
// config.json values in the comments, never taken from the program's output.
#include <gtest/gtest.h>

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "models/llm/architecture.hpp"
#include "serving/paged_kv.hpp"
#include "serving/run_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace layer_pattern_test {
namespace {

const auto preset = test::model_preset;
using test::has;
using test::inline_model;
constexpr auto error_of = test::model_error_of;
const char* const kTiny = test::kTinyModel;  // 4 layers, 4 q / 2 kv heads of 8, hidden 32

TEST(LayerPattern, GptOss120bKvBytesAtK100000) {
  // openai/gpt-oss-120b config.json: 36 layers alternating sliding_attention / full_attention,
  // 8 KV heads of head_dim 64, sliding_window 128. One layer, one token, BF16:
  // 2 (K, V) × 8 × 64 × 2 B = 2048 B.
  // K = 100,000: 18 full × 100,000 × 2048 = 3,686,400,000 B
  //            + 18 sliding × 128 × 2048 =     4,718,592 B  → 3,691,118,592 B.
  const ModelSpec m = preset("gpt-oss-120b");
  EXPECT_EQ(m.count_layers(LayerKind::Full), 18);
  EXPECT_EQ(m.count_layers(LayerKind::Sliding), 18);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 3691118592.0);
  // Below the window every layer keeps every token: K = 100 → 36 × 100 × 2048 = 7,372,800 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100), 7372800.0);
  // The slope beyond the window: the 18 full layers, 18 × 2048 = 36,864 B per token.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 36864.0);
  // TP 8: one KV head per GPU, 1/8 of everything: 3,691,118,592 / 8 = 461,389,824 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix_per_gpu(m, DType::Bf16, 8, 100000), 461389824.0);
  // FP8 halves the bytes.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Fp8, 100000), 3691118592.0 / 2);
}

TEST(LayerPattern, Gemma3_27bFiveLocalToOneGlobal) {
  // google/gemma-3-27b-it text_config: 62 layers, sliding_window_pattern 6 (layer i global when
  // (i + 1) % 6 == 0): 10 global, 52 local; 16 KV heads of 128, window 1024.
  // One layer, one token, BF16: 2 × 16 × 128 × 2 B = 8192 B.
  // K = 100,000: 10 × 100,000 × 8192 = 8,192,000,000 + 52 × 1024 × 8192 = 436,207,616
  //            → 8,628,207,616 B.
  const ModelSpec m = preset("gemma-3-27b");
  EXPECT_EQ(m.count_layers(LayerKind::Full), 10);
  EXPECT_EQ(m.count_layers(LayerKind::Sliding), 52);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 8628207616.0);
}

TEST(LayerPattern, Qwen3NextLinearStateIsFixedPerRequest) {
  // Qwen/Qwen3-Next-80B-A3B-Instruct config.json: 48 layers, full_attention_interval 4 → 12
  // full, 36 Gated DeltaNet. Full layers: 2 KV heads of 256 → 2 × 2 × 256 × 2 B = 2048 B per
  // token and layer. Linear layer state, BF16: recurrent 32 value heads × 128 × 128 = 524,288
  // elements; conv (4 - 1) × (2 × 16 × 128 + 32 × 128) = 3 × 8192 = 24,576 elements;
  // (524,288 + 24,576) × 2 B = 1,097,728 B per layer, × 36 = 39,518,208 B.
  const ModelSpec m = preset("qwen3-next-80b-a3b");
  EXPECT_EQ(m.count_layers(LayerKind::Full), 12);
  EXPECT_EQ(m.count_layers(LayerKind::Linear), 36);
  EXPECT_DOUBLE_EQ(linear_state_bytes_per_layer(m, DType::Bf16), 1097728.0);
  // K = 100,000: 12 × 100,000 × 2048 = 2,457,600,000 + 39,518,208 = 2,497,118,208 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 2497118208.0);
  // K = 1: the state dominates: 12 × 2048 + 39,518,208 = 39,542,784 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 1), 39542784.0);
  // TP 2: 1 KV head per GPU (12 × 100,000 × 1024 = 1,228,800,000) and half the value and key
  // heads' state (39,518,208 / 2 = 19,759,104) → 1,248,559,104 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix_per_gpu(m, DType::Bf16, 2, 100000), 1248559104.0);
}

TEST(LayerPattern, SlidingAttentionFlopsBoundedByWindow) {
  // Tiny model, pattern SFSF, window 4: per (query, key) pair and layer 2 · H_q · (d + d) =
  // 2 · 4 · 16 = 128 FLOPs. K = 10, T = 3: full layers see pairs 3·10 + 3·4/2 = 36 each;
  // sliding layers see min(K + i + 1, 4) = 4 keys for each new token → 12 each.
  // Total = 2 × 36 × 128 + 2 × 12 × 128 = 9216 + 3072 = 12,288.
  const ModelSpec m = inline_model(std::string(kTiny) + "layer_pattern: SFSF\nsliding_window: 4\n");
  EXPECT_DOUBLE_EQ(attention_flops(m, 10, 3), 12288.0);
  // K = 1, T = 3: positions 2, 3, 4 all within the window: sliding pairs 2 + 3 + 4 = 9, equal
  // to the full layers' 3·1 + 6 = 9 → 4 layers × 9 × 128 = 4608.
  EXPECT_DOUBLE_EQ(attention_flops(m, 1, 3), 4608.0);
  // K = 2, T = 4, window 4: positions 3, 4, 5, 6 → 3 + 4 + 4 + 4 = 15 per sliding layer;
  // full 4·2 + 10 = 18 → 2 × 18 × 128 + 2 × 15 × 128 = 8448.
  EXPECT_DOUBLE_EQ(attention_flops(m, 2, 4), 8448.0);
}

// One layer's share: the SFSF tiny model at K = 10, T = 3 (above): a full layer 36 pairs × 128
// = 4608 FLOPs, a sliding layer 12 × 128 = 1536, a linear layer none.
TEST(LayerPattern, OneLayersAttentionFlopsByItsKind) {
  const ModelSpec m = inline_model(std::string(kTiny) + "layer_pattern: SFSF\nsliding_window: 4\n");
  EXPECT_EQ(m.layer_kind(0), LayerKind::Sliding);
  EXPECT_EQ(m.layer_kind(3), LayerKind::Full);
  EXPECT_DOUBLE_EQ(attention_flops_layer(m, LayerKind::Full, 10, 3), 4608.0);
  EXPECT_DOUBLE_EQ(attention_flops_layer(m, LayerKind::Sliding, 10, 3), 1536.0);
  EXPECT_DOUBLE_EQ(attention_flops_layer(m, LayerKind::Linear, 10, 3), 0.0);
  // Without a pattern every layer is a full one: 4 layers × 36 × 128 / 4.
  EXPECT_DOUBLE_EQ(attention_flops_layer(inline_model(kTiny), LayerKind::Full, 10, 3), 4608.0);
}

// A sliding layer's attention kernel (models/gpu/kernel_timing) attends over its window only.
// gpt-oss-20b, TP 1, BF16, layer 0 (sliding, W = 128), K = 4096 cached, T = 256 new: every new
// token sits past the window and sees 128 keys: 256 × 128 pairs × 2 × 64 heads × (64 + 64) =
// 536,870,912 FLOPs. Its KV read: 2 query tiles of 128 rows, each reading the 128 keys of the
// window before it, plus the 256 new tokens: 512 tokens × 2048 B = 1,048,576 B; Q in and O out
// 256 × 64 × (64 + 64) × 2 B = 4,194,304 B. Keys per row as the launch sees them: 128 + 256.
// Layer 1 (full) sees all 4096: (256 × 4096 + 256 × 257 / 2) × 16,384 FLOPs.
TEST(LayerPattern, ASlidingLayersAttentionKernelReadsItsWindowOnly) {
  const ModelSpec m = preset("gpt-oss-20b");
  const auto attention_of = [&](int layer, double K) {
    for (const Kernel& k : layer_kernels(m, layer, 256, K, 1, DType::Bf16))
      if (k.kind == Kernel::Kind::Attention) return k;
    ADD_FAILURE() << "no attention kernel";
    return Kernel{};
  };
  const Kernel s = attention_of(0, 4096);
  EXPECT_DOUBLE_EQ(s.flops, 536870912.0);
  EXPECT_DOUBLE_EQ(s.hbm_bytes, 1048576.0 + 4194304.0);
  EXPECT_DOUBLE_EQ(s.n, 384.0);
  // Past the window, more cached tokens cost a sliding layer nothing.
  const Kernel s2 = attention_of(0, 65536);
  EXPECT_DOUBLE_EQ(s2.flops, s.flops);
  EXPECT_DOUBLE_EQ(s2.hbm_bytes, s.hbm_bytes);
  const Kernel f = attention_of(1, 4096);
  EXPECT_DOUBLE_EQ(f.flops, (256.0 * 4096 + 256.0 * 257 / 2) * 16384);
  // Within the window (K = 0, T = 256): tile 0 reads no cached keys, tile 1 reads 128 before
  // its rows: 128 + 256 tokens × 2048 B, plus Q/O.
  const Kernel s0 = attention_of(0, 0);
  EXPECT_DOUBLE_EQ(s0.hbm_bytes, 384.0 * 2048 + 4194304.0);
}

TEST(LayerPattern, NoPatternStaysDense) {
  // Without a pattern the prefix bytes are K × the per-token bytes: 4 layers × 2 × 2 × 8 × 2 B
  // = 256 B per token → 1000 tokens = 256,000 B.
  const ModelSpec m = inline_model(kTiny);
  EXPECT_FALSE(m.has_layer_pattern());
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 256.0);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 1000), 256000.0);
  // An all-F pattern is the same model.
  const ModelSpec f = inline_model(std::string(kTiny) + "layer_pattern: FFFF\n");
  EXPECT_FALSE(f.has_layer_pattern());
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(f, DType::Bf16, 1000), 256000.0);
}

TEST(LayerPattern, BadPatternsNameTheKey) {
  const std::string t = kTiny;
  EXPECT_NE(error_of(t + "layer_pattern: SFS\nsliding_window: 4\n")
                .find("model.layer_pattern: 3 "
                      "layers given"),
            std::string::npos);
  EXPECT_NE(error_of(t + "layer_pattern: SFXF\nsliding_window: 4\n").find("model.layer_pattern"),
            std::string::npos);
  EXPECT_NE(error_of(t + "layer_pattern: SFSF\n").find("model.sliding_window: required"),
            std::string::npos);
  EXPECT_NE(error_of(t + "layer_pattern: SFSF\nsliding_window: 5000\nmax_position_embeddings: "
                         "4096\n")
                .find("model.sliding_window: 5000 tokens exceeds max_position_embeddings 4096"),
            std::string::npos);
  EXPECT_NE(error_of(t + "sliding_window: 4\n").find("model.sliding_window"), std::string::npos);
  EXPECT_NE(error_of(t + "layer_pattern: SSSS\nsliding_window: 4\n").find("model.layer_pattern"),
            std::string::npos);
}

TEST(LayerPattern, KappaHoldsAtTheContextGiven) {
  // κ_M at K uses B_kv(K) = prefix bytes / K. gpt-oss-120b, BF16, TP 1, K = 100,000:
  // B_kv = 3,691,118,592 / 100,000 = 36,911.18592 B per token; without --context the limit
  // K → ∞: 18 full layers × 2048 = 36,864 B.
  const ModelSpec m = preset("gpt-oss-120b");
  SystemSpec s;  // no GPU: the query gives C and BW
  KappaQuery q;
  q.compute_override = 1e15;
  q.bandwidth_override = 64e9;
  KappaPoint inf = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(inf.b_kv, 36864.0);
  EXPECT_EQ(inf.kv_at, "K → ∞");
  q.context_k = 100000;
  q.new_tokens_t = 1;
  KappaPoint at = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(at.b_kv, 36911.18592);
  EXPECT_DOUBLE_EQ(at.b_kv_gpu, 36911.18592);
  EXPECT_DOUBLE_EQ(at.kappa_m, at.f_pf / 36911.18592);
  EXPECT_EQ(at.kv_at, "K = 100000");
  // Eq. 3's transfer at K is the prefix bytes over BW: 3,691,118,592 / 64e9 s.
  EXPECT_DOUBLE_EQ(at.ttft->t_transfer, 3691118592.0 / 64e9);
  // A dense model says nothing about K.
  KappaPoint dense = evaluate_kappa(inline_model(kTiny), s, q);
  EXPECT_EQ(dense.kv_at, "");
}

// vLLM with a KV connector runs a unified KV cache (the hybrid manager off): every attention
// layer, sliding or full, keeps every token. openai/gpt-oss-20b: 24 layers, 8 KV heads of 64,
// BF16: one layer, one token is 2 × 8 × 64 × 2 B = 2048 B; all 24 layers 49,152 B, against the
// 12 full layers' 24,576 B a hybrid cache keeps beyond the window. At TP 8 each GPU holds one
// KV head: 24 × 2 × 1 × 64 × 2 = 6,144 B. google/gemma-3-27b: 62 layers (10 global), 16 KV
// heads of 128: one layer 2 × 16 × 128 × 2 = 8,192 B; unified 62 × 8,192 = 507,904 B, 6.2×
// the 10 global layers' 81,920 B.
TEST(LayerPattern, AUnifiedCacheKeepsEverySlidingLayersTokens) {
  const ModelSpec oss = preset("gpt-oss-20b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified(oss, DType::Bf16), 49152.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(oss, DType::Bf16), 24576.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified_per_gpu(oss, DType::Bf16, 8), 6144.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_layer_per_gpu(oss, DType::Bf16, 1), 2048.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified(oss, DType::Fp8), 24576.0);
  const ModelSpec gemma = preset("gemma-3-27b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified(gemma, DType::Bf16), 507904.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(gemma, DType::Bf16), 81920.0);
  // A model without a pattern: the unified figure is the ordinary one (Llama-3.1-8B 131,072 B).
  const ModelSpec llama = preset("llama-3.1-8b");
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified(llama, DType::Bf16), 131072.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified_per_gpu(llama, DType::Bf16, 2), 65536.0);
}

// The analytic κ on the engine's accounting (KappaQuery::unified_kv) divides F_pf by the
// unified B_kv: κ_M = F_pf / 49,152 for gpt-oss-20b at TP 1, half what K → ∞ gives.
TEST(LayerPattern, AnalyticKappaOnTheUnifiedCacheUsesEveryLayersBytes) {
  const ModelSpec m = preset("gpt-oss-20b");
  SystemSpec s;  // no GPU: the query gives C and BW
  KappaQuery q;
  q.compute_override = 1e15;
  q.bandwidth_override = 64e9;
  q.unified_kv = true;
  const KappaPoint u = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(u.b_kv, 49152.0);
  EXPECT_DOUBLE_EQ(u.b_kv_gpu, 49152.0);
  EXPECT_EQ(u.kv_at, "unified cache");
  q.unified_kv = false;
  const KappaPoint h = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(h.b_kv_gpu, 24576.0);
  EXPECT_DOUBLE_EQ(u.kappa_m * 2, h.kappa_m);
}

TEST(LayerPattern, ServingEngineServesSlidingLayersAndRefusesLinearOnesNamingTheKey) {
  EXPECT_NO_THROW(refuse_unservable_model(preset("gemma-3-27b"), ""));
  EXPECT_NO_THROW(refuse_unservable_model(preset("gpt-oss-120b"), ""));
  EXPECT_NO_THROW(refuse_unservable_model(preset("llama-3.1-8b"), ""));
  try {
    refuse_unservable_model(preset("qwen3-next-80b-a3b"), "run.");
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("run.model.layer_pattern: model 'qwen3-next-80b-a3b'", 0),
              0u)
        << e.what();
  }
  // The unified accounting refuses it too, naming the key.
  EXPECT_THROW(kv_bytes_per_token_unified(preset("qwen3-next-80b-a3b"), DType::Bf16), InputError);
}

// ---- serving.kv_cache: hybrid (a hybrid-aware connector; issue 25) ---------------------------

TEST(HybridKv, GptOss120bAtK8192LoadsTheFullLayersAndTheSlidingLayersWindow) {
  // 18 full and 18 sliding layers (W = 128), 2 (K, V) × 8 KV heads × 64 × 2 B = 2048 B per
  // layer and token (BF16, TP 1). K = 8192:
  //   18 × 8192 × 2048 = 301,989,888 B (full) + 18 × 128 × 2048 = 4,718,592 B (window)
  //   = 306,708,480 B, against 36 × 8192 × 2048 = 603,979,776 B on the unified cache.
  const ModelSpec m = preset("gpt-oss-120b");
  const HybridKv h = hybrid_kv_per_gpu(m, DType::Bf16, 1);
  EXPECT_DOUBLE_EQ(h.full_Bpt, 36864.0);
  EXPECT_DOUBLE_EQ(h.sliding_Bpt, 36864.0);
  EXPECT_DOUBLE_EQ(h.window, 128.0);
  EXPECT_DOUBLE_EQ(h.state_B, 0.0);
  EXPECT_DOUBLE_EQ(h.bytes(0, 8192, 8192), 306708480.0);
  EXPECT_DOUBLE_EQ(h.bytes(0, 8192, 8192), kv_bytes_for_prefix(m, DType::Bf16, 8192));
  EXPECT_DOUBLE_EQ(8192 * kv_bytes_per_token_unified(m, DType::Bf16), 603979776.0);
  // Split at 8064 = K − W: the first range is the full layers' only, 18 × 8064 × 2048 =
  // 297,271,296 B; the last 128 tokens carry both kinds, 36 × 128 × 2048 = 9,437,184 B.
  EXPECT_DOUBLE_EQ(h.bytes(0, 8064, 8192), 297271296.0);
  EXPECT_DOUBLE_EQ(h.bytes(8064, 8192, 8192), 9437184.0);
  // TP 8: one KV head per GPU, an eighth: 306,708,480 / 8 = 38,338,560 B.
  EXPECT_DOUBLE_EQ(hybrid_kv_per_gpu(m, DType::Bf16, 8).bytes(0, 8192, 8192), 38338560.0);
}

TEST(HybridKv, Qwen3NextLoadsTwelveFullLayersAndThirtySixStatesOnce) {
  // 12 full layers of 2 KV heads × 256 (2 × 2 × 256 × 2 B = 2048 B per layer and token) and 36
  // Gated DeltaNet states of 1,097,728 B (docs/accounting.md). K = 8192:
  //   12 × 8192 × 2048 = 201,326,592 + 36 × 1,097,728 = 39,518,208 → 240,844,800 B.
  const ModelSpec m = preset("qwen3-next-80b-a3b");
  const HybridKv h = hybrid_kv_per_gpu(m, DType::Bf16, 1);
  EXPECT_DOUBLE_EQ(h.full_Bpt, 24576.0);
  EXPECT_DOUBLE_EQ(h.state_B, 39518208.0);
  EXPECT_DOUBLE_EQ(h.bytes(0, 8192, 8192), 240844800.0);
  // The state is independent of K and comes with the range that ends the prefix only:
  // K = 16: 12 × 16 × 2048 + 39,518,208 = 39,911,424 B; [0, 4096) of 8192 has no state.
  EXPECT_DOUBLE_EQ(h.bytes(0, 16, 16), 39911424.0);
  EXPECT_DOUBLE_EQ(h.bytes(0, 4096, 8192), 12.0 * 4096 * 2048);
  // TP 4: the 2 KV heads replicate to 1 per GPU (1024 B per layer and token), the state's
  // heads split 4 ways: 12 × 1024 = 12,288 B per token, 36 × 274,432 = 9,879,552 B.
  const HybridKv h4 = hybrid_kv_per_gpu(m, DType::Bf16, 4);
  EXPECT_DOUBLE_EQ(h4.full_Bpt, 12288.0);
  EXPECT_DOUBLE_EQ(h4.state_B, 9879552.0);
}

TEST(HybridKv, Llama4ScoutChunkedLayersLoadTheTokensOfKsChunk) {
  // 12 full and 36 chunked layers (C = 8192), 8 KV heads × 128: 4096 B per layer and token.
  // K = 10,000: 10,000 − 8192 = 1808 tokens per chunked layer:
  //   12 × 10,000 × 4096 = 491,520,000 + 36 × 1808 × 4096 = 266,600,448 → 758,120,448 B.
  const HybridKv h = hybrid_kv_per_gpu(preset("llama-4-scout"), DType::Bf16, 1);
  EXPECT_DOUBLE_EQ(h.bytes(0, 10000, 10000), 758120448.0);
  // A range before the chunk's start carries the full layers only: [0, 8192) → 12 × 8192 × 4096.
  EXPECT_DOUBLE_EQ(h.bytes(0, 8192, 10000), 402653184.0);
}

TEST(HybridKv, PagedPoolHoldsTheWindowTheChunkAndTheStateInFullLayerBlocks) {
  // gpt-oss-120b, 16-token blocks of the full layers' 36,864 B per token (589,824 B a block).
  // n = 8192: 512 full blocks; the sliding layers keep the blocks from
  // floor((8192 − 128 + 1) / 16) = 504 on, 8 blocks of 36,864 B × 16 = 8 more units: 520.
  PagedKv g(10000, 16);
  g.set_hybrid(hybrid_kv_per_gpu(preset("gpt-oss-120b"), DType::Bf16, 1));
  EXPECT_EQ(g.blocks_for(8192), 520);
  // n = 8200: 513 full; the sliding layers from floor(8073 / 16) = 504 on: 9 → 522.
  EXPECT_EQ(g.blocks_for(8200), 522);
  // Unified (no set_hybrid) counts blocks of every layer: ceil(8192 / 16) = 512 blocks of 36
  // layers' bytes (the engine sizes its pool in those).
  EXPECT_EQ(PagedKv(10000, 16).blocks_for(8192), 512);

  // Qwen3-Next at TP 1: 12 × 2048 = 24,576 B per token, 393,216 B a block; the 36 states,
  // 39,518,208 B = 100.5 blocks → 101. n = 8192: 512 + 101 = 613.
  PagedKv q(10000, 16);
  q.set_hybrid(hybrid_kv_per_gpu(preset("qwen3-next-80b-a3b"), DType::Bf16, 1));
  EXPECT_EQ(q.blocks_for(8192), 613);
  EXPECT_EQ(q.blocks_for(1), 1 + 101);

  // Llama-4-Scout: full 12 × 4096 = 49,152 B per token, chunked 36 × 4096 = 3 full blocks per
  // chunked block. n = 10,000: 625 full blocks; the chunked layers from floor(8192 / 16) = 512
  // on: 113 blocks → 339 units: 964. n = 8191: 512 + 3 × 512 = 2048; n = 8193 crosses the
  // chunk: 513 + 3 × 1 = 516, and growing to it frees 2048 − 516 = 1532 blocks.
  PagedKv s(10000, 16);
  s.set_hybrid(hybrid_kv_per_gpu(preset("llama-4-scout"), DType::Bf16, 1));
  EXPECT_EQ(s.blocks_for(10000), 964);
  s.allocate(1, 8191);
  EXPECT_EQ(s.used_blocks(), 2048);
  EXPECT_TRUE(s.grow(1, 8193));
  EXPECT_EQ(s.used_blocks(), 516);
}

TEST(HybridKv, ServingKvCacheHybridServesLinearModelsAndRefusesWhatItDoesNotModel) {
  EXPECT_NO_THROW(refuse_unservable_model(preset("qwen3-next-80b-a3b"), "", true));
  EXPECT_NO_THROW(refuse_unservable_model(preset("kimi-linear-48b-a3b"), "", true));
  EXPECT_NO_THROW(refuse_unservable_model(preset("minimax-m1"), "", true));
  // DeepSeek-V3.2's indexer stays refused, hybrid or not, naming its key.
  try {
    refuse_unservable_model(preset("deepseek-v3.2-exp"), "run.", true);
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "run.model.attention.index_topk")) << e.what();
  }
  // The unified refusal names the key and the way out.
  try {
    refuse_unservable_model(preset("minimax-m1"), "run.");
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "run.model.layer_pattern")) << e.what();
    EXPECT_TRUE(has(e.what(), "serving.kv_cache: hybrid")) << e.what();
  }
  // Partial recompute and sharded replicated loads are modelled with hybrid (issue 25;
  // tests/unit/hybrid_layout_test.cpp).
  ServingSpec sv;
  sv.kv_cache = KvCacheMode::Hybrid;
  sv.recompute.mode = RecomputeMode::Fixed;
  sv.replicated_kv = ReplicatedKv::ShardAllgather;
  EXPECT_NO_THROW(refuse_hybrid_kv_settings(preset("gpt-oss-120b"), sv, 8, "run."));
  sv.recompute.mode = RecomputeMode::None;
  sv.replicated_kv = ReplicatedKv::EachRank;
  // Issue 25: prefix caching and tiers below DRAM are modelled with hybrid (not refused).
  sv.prefix_caching = true;
  sv.tiers.cxl_capacity_bytes = 1e12;
  EXPECT_NO_THROW(refuse_hybrid_kv_settings(preset("qwen3-next-80b-a3b"), sv, 8, "run."));
  sv.prefix_caching = false;
  sv.tiers.cxl_capacity_bytes = 0;
  // A tp that does not divide the heads (Qwen3-Next's 16 query and 16 key heads, tp 3).
  sv.tp = 3;
  EXPECT_THROW(refuse_hybrid_kv_settings(preset("qwen3-next-80b-a3b"), sv, 8, ""), InputError);
  // A stored chunk (256 tokens) of gpt-oss-120b keeps 256 full-layer tokens and the last 128
  // of the sliding layers: (256 + 128) × 36,864 / 256 = 55,296 B per token; unified: 73,728.
  sv.tp = 1;
  EXPECT_DOUBLE_EQ(served_kv_store_per_gpu(preset("gpt-oss-120b"), sv, 1), 55296.0);
  EXPECT_DOUBLE_EQ(served_kv_unit_per_gpu(preset("gpt-oss-120b"), sv, 1), 36864.0);
  sv.kv_cache = KvCacheMode::Unified;
  EXPECT_DOUBLE_EQ(served_kv_store_per_gpu(preset("gpt-oss-120b"), sv, 1), 73728.0);
}

}  // namespace
}  // namespace layer_pattern_test
}  // namespace kappasim
