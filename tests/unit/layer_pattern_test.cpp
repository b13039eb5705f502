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

}  // namespace
}  // namespace layer_pattern_test
}  // namespace kappasim
