// Issue 25 item 2: the architectures whose KV accounting differs from full attention beyond
// sliding windows and Gated DeltaNet: Llama 4's chunked local attention and interleaved MoE,
// DeepSeek-V3.2-Exp's sparse attention with its lightning indexer. Every expected value is
// computed by hand from the checkpoints' config.json values in the comments, never taken from
// the program's output.
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
namespace model_variants_test {
namespace {

const auto preset = test::model_preset;
using test::has;
using test::inline_model;
constexpr auto error_of = test::model_error_of;
const char* const kTiny = test::kTinyModel;  // 4 layers, 4 q / 2 kv heads of 8, hidden 32

// ---- Llama 4: chunked local attention ------------------------------------------------------

// meta-llama/Llama-4-Scout-17B-16E-Instruct text_config: 48 layers, no_rope_layers [1,1,1,0]×12
// → 36 chunked (RoPE) and 12 full (NoPE) layers; 8 KV heads of head_dim 128;
// attention_chunk_size 8192. One layer, one token, BF16: 2 × 8 × 128 × 2 B = 4096 B.
TEST(ModelVariants, Llama4ScoutChunkedLayersKeepTheCurrentChunk) {
  const ModelSpec m = preset("llama-4-scout");
  EXPECT_EQ(m.count_layers(LayerKind::Full), 12);
  EXPECT_EQ(m.count_layers(LayerKind::Chunked), 36);
  EXPECT_EQ(m.layer_kind(0), LayerKind::Chunked);
  EXPECT_EQ(m.layer_kind(3), LayerKind::Full);
  // K → ∞: the full layers' 12 × 4096 = 49,152 B per token.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 49152.0);
  // K = 100,000: full 12 × 100,000 × 4096 = 4,915,200,000 B; each chunked layer keeps
  // 100,000 − floor(100,000 / 8192) · 8192 = 100,000 − 12 · 8192 = 1,696 tokens:
  // 36 × 1,696 × 4096 = 250,085,376 B → 5,165,285,376 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 5165285376.0);
  // K = 16,384 (two whole chunks): the chunked layers keep nothing: 12 × 16,384 × 4096
  // = 805,306,368 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 16384), 805306368.0);
  // K = 5000 (inside the first chunk): every layer keeps every token: 48 × 5000 × 4096
  // = 983,040,000 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 5000), 983040000.0);
  // TP 8: one KV head per GPU, 1/8 of it: 5,165,285,376 / 8 = 645,660,672 B.
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix_per_gpu(m, DType::Bf16, 8, 100000), 645660672.0);
  // The unified cache (vLLM with a KV connector): all 48 layers keep every token,
  // 48 × 4096 = 196,608 B per token.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified(m, DType::Bf16), 196608.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_unified_per_gpu(m, DType::Bf16, 8), 24576.0);
}

// Maverick's attention is Scout's (40 q / 8 kv heads of 128, the same pattern and chunk), so its
// KV is the same: at K = 100,000, 5,165,285,376 B (above).
TEST(ModelVariants, Llama4MaverickKvEqualsScouts) {
  const ModelSpec m = preset("llama-4-maverick");
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 5165285376.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Fp8), 24576.0);  // 12 × 2 × 8 × 128 × 1 B
}

// The pairs of a chunked layer, C = 8192: token at 0-based position q attends to q − 8192·
// floor(q / 8192) + 1 keys.
//  K = 10,000, T = 1,000: q = 10,000 .. 10,999 all in chunk 1 (8192 .. 16,383): keys 1,809 ..
//    2,808, Σ = 1,000 × (1,809 + 2,808) / 2 = 2,308,500.
//  K = 8,000, T = 400: q = 8,000 .. 8,191 see 8,001 .. 8,192 keys (192 tokens, Σ = 192 ×
//    8,096.5 = 1,554,528); q = 8,192 .. 8,399 start chunk 1 and see 1 .. 208 (Σ = 21,736):
//    1,576,264.
//  K = 0, T = 3: 1 + 2 + 3 = 6 (as full attention inside one chunk).
TEST(ModelVariants, ChunkedAttentionPairsByHand) {
  EXPECT_DOUBLE_EQ(chunked_attention_pairs(8192, 10000, 1000), 2308500.0);
  EXPECT_DOUBLE_EQ(chunked_attention_pairs(8192, 8000, 400), 1576264.0);
  EXPECT_DOUBLE_EQ(chunked_attention_pairs(8192, 0, 3), 6.0);
  // Two whole chunks from K = 0: 2 × 8192 × 8193 / 2 = 67,117,056.
  EXPECT_DOUBLE_EQ(chunked_attention_pairs(8192, 0, 16384), 67117056.0);
}

// Scout's attention FLOPs, K = 10,000, T = 1,000: per (query, key) pair and layer 2 × 40 heads ×
// (128 + 128) = 20,480 FLOPs. Full layers: pairs 1,000 × 10,000 + 1,000 × 1,001 / 2 =
// 10,500,500, × 12 × 20,480 = 2,580,602,880,000. Chunked layers: 2,308,500 pairs (above) × 36 ×
// 20,480 = 1,702,010,880,000. Total 4,282,613,760,000.
TEST(ModelVariants, Llama4AttentionFlopsByWindow) {
  const ModelSpec m = preset("llama-4-scout");
  EXPECT_DOUBLE_EQ(attention_flops(m, 10000, 1000), 4282613760000.0);
  EXPECT_DOUBLE_EQ(attention_flops_layer(m, LayerKind::Chunked, 10000, 1000), 2308500.0 * 20480);
  EXPECT_DOUBLE_EQ(attention_flops_layer(m, LayerKind::Full, 10000, 1000), 10500500.0 * 20480);
}

// The chunked layer's attention kernel (models/gpu/kernel_timing), Scout, TP 1, BF16, layer 0,
// T = 256 new tokens:
//  K = 10,000: K mod 8192 = 1,808 keys of the current chunk before the first new token; pairs
//   256 × (1,809 + 2,064) / 2 = 495,744 → × 20,480 = 10,152,837,120 FLOPs. KV read: 2 query
//   tiles of 128 rows, 2 × 1,808 + 128 (tile 1 reads tile 0's rows) + 256 new = 4,000 tokens ×
//   4096 B = 16,384,000 B; Q in and O out 256 × 40 × (128 + 128) × 2 B = 5,242,880 B. Keys per
//   row as the launch sees them: 1,808 + 256 = 2,064.
//  K = 8,000: 192 new tokens finish chunk 0 (a virtual sequence of 8,000 cached and 192 new:
//   2 tiles, 2 × 8,000 + 128 + 192 = 16,320 tokens read), 64 start chunk 1 (0 cached: 64 read):
//   16,384 tokens × 4096 B; pairs 1,554,528 + 64 × 65 / 2 = 1,556,608.
TEST(ModelVariants, AChunkedLayersAttentionKernelReadsItsChunkOnly) {
  const ModelSpec m = preset("llama-4-scout");
  const auto attention_of = [&](int layer, double K) {
    for (const Kernel& k : layer_kernels(m, layer, 256, K, 1, DType::Bf16))
      if (k.kind == Kernel::Kind::Attention) return k;
    ADD_FAILURE() << "no attention kernel";
    return Kernel{};
  };
  const Kernel c = attention_of(0, 10000);
  EXPECT_DOUBLE_EQ(c.flops, 10152837120.0);
  EXPECT_DOUBLE_EQ(c.hbm_bytes, 4000.0 * 4096 + 5242880.0);
  EXPECT_DOUBLE_EQ(c.n, 2064.0);
  const Kernel x = attention_of(0, 8000);
  EXPECT_DOUBLE_EQ(x.flops, 1556608.0 * 20480);
  EXPECT_DOUBLE_EQ(x.hbm_bytes, 16384.0 * 4096 + 5242880.0);
  // Layer 3 (NoPE, full) sees all 10,000 cached keys: (256 × 10,000 + 256 × 257 / 2) × 20,480.
  EXPECT_DOUBLE_EQ(attention_of(3, 10000).flops, (256.0 * 10000 + 256.0 * 257 / 2) * 20480);
}

// Parameters from the config numbers (text decoder): h = 5120, V = 202,048.
//  Embedding and LM head 2 × 202,048 × 5120 = 2,068,971,520.
//  Attention per layer q 5120 × 5120 + k, v 2 × 5120 × 1024 + o 5120 × 5120 = 62,914,560,
//   × 48 = 3,019,898,880.
//  One expert (SwiGLU, 8192): 3 × 5120 × 8192 = 125,829,120. Norms (2 × 48 + 1) × 5120 =
//   496,640.
//  Scout: 48 MoE layers of 16 routed + 1 shared experts: 48 × 17 × 125,829,120 =
//   102,676,561,920; router 48 × 5120 × 16 = 3,932,160. Total 107,769,861,120 (HF reports
//   109,676,279,296 with the 1.9 B vision tower). Active: 48 × 2 experts = 12,079,595,520 →
//   17,172,894,720 ("17B active").
//  Maverick: 24 dense layers (0, 2, ..., 46) 3 × 5120 × 16,384 = 251,658,240 each:
//   6,039,797,760; 24 MoE layers of 129 experts: 389,566,955,520; router 24 × 5120 × 128 =
//   15,728,640. Total 400,711,848,960 ("400B"). Active: dense 6,039,797,760 + 24 × 2 experts
//   6,039,797,760 → 17,184,691,200.
TEST(ModelVariants, Llama4ParametersByHand) {
  const ParamCounts s = count_params(preset("llama-4-scout"));
  EXPECT_DOUBLE_EQ(s.total(), 107769861120.0);
  EXPECT_DOUBLE_EQ(s.active(), 17172894720.0);
  const ModelSpec mav = preset("llama-4-maverick");
  EXPECT_FALSE(mav.is_moe_layer(0));
  EXPECT_TRUE(mav.is_moe_layer(1));
  EXPECT_TRUE(mav.is_moe_layer(47));
  EXPECT_EQ(mav.dense_mlp_layers(), 24);
  const ParamCounts v = count_params(mav);
  EXPECT_DOUBLE_EQ(v.mlp_dense, 6039797760.0);
  EXPECT_DOUBLE_EQ(v.total(), 400711848960.0);
  EXPECT_DOUBLE_EQ(v.active(), 17184691200.0);
}

// κ_M at K = 100,000 divides F_pf by B_kv(K) = 5,165,285,376 / 100,000 = 51,652.85376 B.
TEST(ModelVariants, KappaOfLlama4AtTheContextGiven) {
  const ModelSpec m = preset("llama-4-scout");
  SystemSpec s;  // no GPU: the query gives C and BW
  KappaQuery q;
  q.compute_override = 1e15;
  q.bandwidth_override = 64e9;
  q.context_k = 100000;
  q.new_tokens_t = 1;
  const KappaPoint at = evaluate_kappa(m, s, q);
  EXPECT_DOUBLE_EQ(at.b_kv, 51652.85376);
  EXPECT_EQ(at.kv_at, "K = 100000");
  q.unified_kv = true;
  EXPECT_DOUBLE_EQ(evaluate_kappa(m, s, q).b_kv, 196608.0);
}

TEST(ModelVariants, BadChunkedInputsNameTheKey) {
  const std::string t = kTiny;
  EXPECT_TRUE(has(error_of(t + "layer_pattern: CCF\nattention_chunk_size: 4\n"),
                  "model.layer_pattern: 3 layers given, but num_layers is 4"));
  EXPECT_TRUE(has(error_of(t + "layer_pattern: CCCF\n"), "model.attention_chunk_size: required"));
  EXPECT_TRUE(has(error_of(t + "layer_pattern: CCCF\nattention_chunk_size: 0\n"),
                  "model.attention_chunk_size: required"));
  EXPECT_TRUE(
      has(error_of(t + "layer_pattern: CCCF\nattention_chunk_size: -8\n"), "attention_chunk_size"));
  EXPECT_TRUE(has(error_of(t + "attention_chunk_size: 8\n"), "model.attention_chunk_size"));
  EXPECT_TRUE(has(error_of(t + "layer_pattern: FFFF\nattention_chunk_size: 8\n"),
                  "model.attention_chunk_size: given, but layer_pattern has no C layer"));
  EXPECT_TRUE(has(error_of(t + "layer_pattern: CCCF\nattention_chunk_size: 9000\n"
                               "max_position_embeddings: 4096\n"),
                  "model.attention_chunk_size: 9000 tokens exceeds max_position_embeddings 4096"));
  EXPECT_TRUE(has(error_of(t + "layer_pattern: CCCC\nattention_chunk_size: 8\n"),
                  "model.layer_pattern: at least one F"));
  // Interleaved MoE needs the dense layers' size.
  EXPECT_TRUE(has(error_of(R"(
name: tiny-moe
num_layers: 4
hidden_size: 32
vocab_size: 100
attention: {type: gqa, num_q_heads: 4, num_kv_heads: 2, head_dim: 8}
mlp: {type: moe, num_experts: 4, experts_per_token: 1, moe_intermediate_size: 16, moe_layer_step: 2}
)"),
                  "model.mlp.intermediate_size: required (> 0) when moe_layer_step > 1"));
}

TEST(ModelVariants, ServingEngineServesChunkedLayers) {
  EXPECT_NO_THROW(refuse_unservable_model(preset("llama-4-scout"), ""));
  EXPECT_NO_THROW(refuse_unservable_model(preset("llama-4-maverick"), ""));
}

// ---- DeepSeek-V3.2-Exp: DeepSeek Sparse Attention ---------------------------------------------

// deepseek-ai/DeepSeek-V3.2-Exp config.json: 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64 =
// 576 latent values per token and layer; index_head_dim 128 → the indexer key is 128 FP8 bytes +
// 128 / 128 = 1 FP32 scale (4 B) = 132 B per token and layer, whatever the KV dtype.
//  BF16: 61 × (576 × 2 + 132) = 61 × 1,284 = 78,324 B per token (DeepSeek-V3: 70,272).
//  FP8:  61 × (576 + 132) = 61 × 708 = 43,188 B.
// MLA keeps every token, so KV(K) = K × B_kv: K = 100,000 → 7,832,400,000 B.
TEST(ModelVariants, DeepSeekV32KvIsTheLatentPlusTheIndexerKey) {
  const ModelSpec m = preset("deepseek-v3.2-exp");
  EXPECT_DOUBLE_EQ(indexer_key_bytes_per_token_per_layer(m), 132.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 78324.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Fp8), 43188.0);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 7832400000.0);
  // MLA's latent is whole on every GPU: TP 8 holds all 78,324 B.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, DType::Bf16, 8), 78324.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_layer_per_gpu(m, DType::Bf16, 8), 1284.0);
  // DeepSeek-V3 without the indexer is unchanged: 61 × 576 × 2 = 70,272 B.
  EXPECT_DOUBLE_EQ(indexer_key_bytes_per_token_per_layer(preset("deepseek-v3")), 0.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(preset("deepseek-v3"), DType::Bf16), 70272.0);
}

// Attention FLOPs at K = 100,000, T = 1 (one new token at p = 100,001 > 2048):
//  main attention, absorbed MLA over min(p, 2048) = 2048 keys: 2048 × 61 × 2 × 128 heads ×
//   ((512 + 64) + 512) = 2048 × 61 × 256 × 1088 = 34,795,945,984;
//  W_UK / W_UV for the one query: 1 × 61 × 2 × 128 × 512 × (128 + 128) = 2,046,820,352;
//  indexer: 100,001 pairs × 61 × 2 × 64 heads × 128 = 100,001 × 999,424 = 99,943,399,424.
//  Total 136,786,165,760.
// K = 0, T = 3 (inside the top-k): sparse pairs 1 + 2 + 3 = 6, as dense.
TEST(ModelVariants, DeepSeekV32AttentionFlopsCappedAtTopK) {
  const ModelSpec m = preset("deepseek-v3.2-exp");
  EXPECT_DOUBLE_EQ(indexer_flops(m, 100000, 1), 99943399424.0);
  EXPECT_DOUBLE_EQ(attention_flops(m, 100000, 1), 136786165760.0);
  // Beyond the top-k, more cached tokens cost the main attention nothing: the difference
  // between K = 200,000 and K = 100,000 is the indexer's 100,000 × 999,424 = 99,942,400,000.
  EXPECT_DOUBLE_EQ(attention_flops(m, 200000, 1) - attention_flops(m, 100000, 1), 99942400000.0);
  // K = 0, T = 3: 6 pairs × 61 × 256 × 1088 = 101,941,248 main; 3 × 61 × 2 × 128 × 512 × 256 =
  // 6,140,461,056 for W_UK / W_UV; indexer 6 × 999,424 = 5,996,544 → 6,248,398,848.
  EXPECT_DOUBLE_EQ(attention_flops(m, 0, 3), 6248398848.0);
}

// Indexer parameters per layer (DeepSeek-V3.2-Exp inference/model.py Indexer): wq_b 1536 × 64 ×
// 128 = 12,582,912; wk 7168 × 128 = 917,504; k_norm 2 × 128 = 256; weights_proj 7168 × 64 =
// 458,752 → 13,959,424, × 61 = 851,524,864 beyond DeepSeek-V3's parameters.
TEST(ModelVariants, DeepSeekV32IndexerParameters) {
  EXPECT_DOUBLE_EQ(count_params(preset("deepseek-v3.2-exp")).total() -
                       count_params(preset("deepseek-v3")).total(),
                   851524864.0);
}

TEST(ModelVariants, BadSparseInputsNameTheKey) {
  const std::string mla = R"(
name: tiny-mla
num_layers: 2
hidden_size: 32
vocab_size: 100
mlp: {type: dense, intermediate_size: 64}
attention: {type: mla, num_q_heads: 4, kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 4,
            v_head_dim: 8, index_n_heads: 2, index_head_dim: 8)";
  EXPECT_TRUE(has(error_of(mla + ", index_topk: 0}\n"), "model.attention.index_topk"));
  EXPECT_TRUE(has(error_of(mla + ", index_topk: -1}\n"), "index_topk"));
  EXPECT_EQ(error_of(mla + ", index_topk: 16}\n"), "");
}

TEST(ModelVariants, ServingEngineRefusesSparseAttentionNamingTheKey) {
  try {
    refuse_unservable_model(preset("deepseek-v3.2-exp"), "");
    ADD_FAILURE() << "DeepSeek-V3.2-Exp should be refused";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "model.attention.index_topk"));
  }
}

// ---- Kimi-Linear: KDA linear layers beside MLA full layers -----------------------------------

// moonshotai/Kimi-Linear-48B-A3B-Instruct config.json: 27 layers, full_attn_layers [4, 8, 12,
// 16, 20, 24, 27] (1-based) → 7 MLA and 20 KDA; MLA latent 512 + 64 = 576 values; KDA 32 heads of
// 128, short_conv_kernel_size 4. BF16:
//  MLA: 576 × 2 = 1,152 B per token and layer; K → ∞: 7 × 1,152 = 8,064 B per token.
//  KDA state per layer: recurrent 32 × 128 × 128 = 524,288 values; the q, k, v convolutions'
//   last 4 − 1 = 3 inputs of 3 × 32 × 128 = 12,288 channels = 36,864 values; 561,152 × 2 B =
//   1,122,304 B, × 20 layers = 22,446,080 B per request.
//  K = 100,000: 7 × 100,000 × 1,152 = 806,400,000 + 22,446,080 = 828,846,080 B.
//  TP 4: the latent is whole on every GPU, the state's heads split 4 ways: 806,400,000 +
//   22,446,080 / 4 = 5,611,520 → 812,011,520 B.
TEST(ModelVariants, KimiLinearKdaStateBesideMlaLatent) {
  const ModelSpec m = preset("kimi-linear-48b-a3b");
  EXPECT_EQ(m.count_layers(LayerKind::Full), 7);
  EXPECT_EQ(m.count_layers(LayerKind::Linear), 20);
  EXPECT_EQ(m.layer_kind(26), LayerKind::Full);
  EXPECT_DOUBLE_EQ(linear_state_bytes_per_layer(m, DType::Bf16), 1122304.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 8064.0);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 828846080.0);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix_per_gpu(m, DType::Bf16, 4, 100000), 812011520.0);
}

// Parameters: one KDA layer (h = 2304, 32 heads of d = 128, P = 4096, kernel 4): q, k, v 3 × 2304
// × 4096 = 28,311,552; convs 3 × 4096 × 4 = 49,152; f_a 2304 × 128 = 294,912, f_b 128 × 4096 =
// 524,288, dt_bias 4,096; A_log 32; b_proj 2304 × 32 = 73,728; g_a 294,912, g_b 524,288; o_norm
// 128; o_proj 4096 × 2304 = 9,437,184 → 39,514,272. One MLA layer (no q LoRA): q_proj 2304 × 32 ×
// 192 = 14,155,776; kv_a 2304 × 576 = 1,327,104; kv_a norm 512; kv_b 512 × 32 × 256 = 4,194,304;
// o 32 × 128 × 2304 = 9,437,184 → 29,114,880. Whole model: attention 7 × 29,114,880 + 20 ×
// 39,514,272 = 994,089,600; embedding + LM head 2 × 163,840 × 2304 = 754,974,720; the dense layer
// 3 × 2304 × 9216 = 63,700,992; 26 MoE layers of 257 experts of 3 × 2304 × 1024 = 7,077,888:
// 47,294,447,616; routers 26 × 2304 × 256 = 15,335,424; norms 55 × 2304 = 126,720. Total
// 49,122,675,072 ("48B"); active (8 routed + 1 shared per MoE layer) 3,484,453,248 ("A3B", of
// which 754,974,720 embedding and LM head).
TEST(ModelVariants, KimiLinearParametersByHand) {
  const ParamCounts c = count_params(preset("kimi-linear-48b-a3b"));
  EXPECT_DOUBLE_EQ(c.attention, 994089600.0);
  EXPECT_DOUBLE_EQ(c.total(), 49122675072.0);
  EXPECT_DOUBLE_EQ(c.active(), 3484453248.0);
}

// Attention FLOPs, K = 100,000, T = 1, the 7 MLA layers (KDA layers have no (query, key) pairs):
// absorbed 100,001 pairs × 7 × 2 × 32 × (576 + 512) = 48,742,887,424 plus W_UK / W_UV 7 × 2 × 32
// × 512 × 256 = 58,720,256 → 48,801,607,680, cheaper than expanded (its up-projection alone is
// 100,000 × 7 × 2 × 512 × 32 × 256 = 5.87e12).
TEST(ModelVariants, KimiLinearAttentionFlopsOverItsMlaLayers) {
  EXPECT_DOUBLE_EQ(attention_flops(preset("kimi-linear-48b-a3b"), 100000, 1), 48801607680.0);
}

TEST(ModelVariants, KimiLinearRefusedByTheServingEngineNamingTheKey) {
  try {
    refuse_unservable_model(preset("kimi-linear-48b-a3b"), "");
    ADD_FAILURE() << "Kimi-Linear should be refused";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "model.layer_pattern: model 'kimi-linear-48b-a3b' has 20"));
  }
}

// Lightning attention (MiniMax): a per-head d × d state and no convolution. Tiny model, 4 heads
// of 8: 4 × 8 × 8 = 256 values × 2 B = 512 B per layer; 3 L layers → 1,536 B, plus the F layer's
// 2 × 2 × 8 × 2 = 64 B per token: K = 10 → 640 + 1,536 = 2,176 B. Parameters per lightning layer
// (h = 32, P = 32): qkv 3 × 32 × 32 = 3,072, output gate 1,024, norm 32, out_proj 1,024 → 5,152.
TEST(ModelVariants, LightningStateHasNoConvolution) {
  const std::string lightning =
      std::string(kTiny) +
      "layer_pattern: LLLF\nlinear_attention: {type: lightning, num_key_heads: 4, "
      "num_value_heads: 4, key_head_dim: 8, value_head_dim: 8}\n";
  const ModelSpec m = inline_model(lightning);
  EXPECT_DOUBLE_EQ(linear_state_bytes_per_layer(m, DType::Bf16), 512.0);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 10), 2176.0);
  const ModelSpec dense = inline_model(kTiny);
  // One F layer's attention plus 3 lightning layers: the dense model's 4 layers' attention / 4
  // + 3 × 5,152.
  EXPECT_DOUBLE_EQ(count_params(m).attention - count_params(dense).attention / 4, 3 * 5152.0);
}

// MiniMax-M1 (MiniMaxAI/MiniMax-M1-80k config.json): 80 layers, attn_type_list 7 lightning : 1
// softmax → 70 L, 10 F; 64 heads of 128; GQA 8 KV heads of 128 on the softmax layers. BF16:
//  lightning state per layer 64 × 128 × 128 = 1,048,576 values × 2 B = 2,097,152 B, × 70 =
//   146,800,640 B per request; softmax layers 2 × 8 × 128 × 2 = 4,096 B per token and layer,
//   × 10 = 40,960 B per token (K → ∞).
//  K = 100,000: 10 × 100,000 × 4,096 = 4,096,000,000 + 146,800,640 = 4,242,800,640 B.
// Parameters: softmax attention q 6144 × 8192 = 50,331,648, k and v 2 × 6144 × 1024 =
// 12,582,912, o 50,331,648 → 113,246,208, × 10 = 1,132,462,080; lightning (P = 8192) qkv 3 ×
// 50,331,648 + output gate 50,331,648 + norm 8,192 + out_proj 50,331,648 = 251,666,432, × 70 =
// 17,616,650,240; experts 3 × 6144 × 9216 = 169,869,312, × 32 × 80 = 434,865,438,720; routers
// 80 × 6144 × 32 = 15,728,640; embedding + LM head 2 × 200,064 × 6144 = 2,458,386,432; norms
// 161 × 6144 = 989,184. Total 456,089,655,296; active (2 experts) 48,403,306,496, of which
// 45,944,920,064 without the embedding and LM head (the report's 456 B / 45.9 B).
// Attention FLOPs K = 100,000, T = 1: the softmax layers only, 100,001 pairs × 10 × 2 × 64 ×
// (128 + 128) = 32,768,327,680.
TEST(ModelVariants, MiniMaxM1LightningStateAndParameters) {
  const ModelSpec m = preset("minimax-m1");
  EXPECT_EQ(m.count_layers(LayerKind::Linear), 70);
  EXPECT_EQ(m.layer_kind(7), LayerKind::Full);
  EXPECT_DOUBLE_EQ(linear_state_bytes_per_layer(m, DType::Bf16), 2097152.0);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 40960.0);
  EXPECT_DOUBLE_EQ(kv_bytes_for_prefix(m, DType::Bf16, 100000), 4242800640.0);
  const ParamCounts c = count_params(m);
  EXPECT_DOUBLE_EQ(c.total(), 456089655296.0);
  EXPECT_DOUBLE_EQ(c.active(), 48403306496.0);
  EXPECT_DOUBLE_EQ(c.active_matmul(false), 45944920064.0 - 989184.0);
  EXPECT_DOUBLE_EQ(attention_flops(m, 100000, 1), 32768327680.0);
  EXPECT_THROW(refuse_unservable_model(m, ""), InputError);
}

TEST(ModelVariants, BadLinearVariantsNameTheKey) {
  const std::string t = std::string(kTiny) + "layer_pattern: LLLF\n";
  EXPECT_TRUE(has(error_of(t + "linear_attention: {type: kda, num_key_heads: 4, num_value_heads: "
                               "2, key_head_dim: 8, value_head_dim: 8, conv_kernel: 4}\n"),
                  "model.linear_attention.num_value_heads: kda layers have one set of heads"));
  EXPECT_TRUE(has(error_of(t + "linear_attention: {type: lightning, num_key_heads: 4, "
                               "num_value_heads: 4, key_head_dim: 8, value_head_dim: 8, "
                               "conv_kernel: 4}\n"),
                  "model.linear_attention.conv_kernel: lightning attention has no short"));
  EXPECT_TRUE(has(error_of(t + "linear_attention: {type: mamba, num_key_heads: 4, "
                               "num_value_heads: 4, key_head_dim: 8, value_head_dim: 8}\n"),
                  "model.linear_attention.type"));
  // MLA with sliding layers is not modelled; with linear ones it is (Kimi-Linear).
  const std::string mla = R"(
name: tiny-mla
num_layers: 4
hidden_size: 32
vocab_size: 100
mlp: {type: dense, intermediate_size: 64}
attention: {type: mla, num_q_heads: 4, kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 4,
            v_head_dim: 8}
)";
  EXPECT_TRUE(has(error_of(mla + "layer_pattern: SFSF\nsliding_window: 2\n"),
                  "model.layer_pattern: S and C layers only with attention type gqa"));
}

}  // namespace
}  // namespace model_variants_test
}  // namespace kappasim
