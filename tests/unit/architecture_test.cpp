// The LLM accounting of models/llm: parameter counts, KV bytes per token, the per-GPU KV share
// under tensor parallelism (with KV-head replication), attention and linear FLOPs.
//
// Every expected value is computed here by hand from the public Hugging Face config.json numbers
// (written as literals, each naming its source) and compared with the program's count of the
// PRESET loaded through the config system, so a wrong preset number and a wrong formula both
// show up. Published totals are checked within the precision they are published with.
#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/llm/architecture.hpp"

namespace kappasim {
namespace architecture_test {
namespace {

ModelSpec preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}

ModelSpec inline_model(const std::string& yaml) {
  ConfigNode n = parse_yaml(yaml, "inline-model");
  return read_config<ModelSpec>(n, "model");
}

// |actual - expected| <= rel · |expected|
void expect_rel(double actual, double expected, double rel, const char* what) {
  EXPECT_NEAR(actual, expected, rel * (expected < 0 ? -expected : expected)) << what;
}

// ---- parameter counts ---------------------------------------------------------------------

TEST(Architecture, Llama31_8B_Params) {
  // meta-llama/Llama-3.1-8B config.json: hidden 4096, 32 layers, 32 q / 8 kv heads (head_dim
  // 4096/32 = 128), intermediate 14336, vocab 128256, untied embeddings.
  const double h = 4096, L = 32, vocab = 128256;
  const double q = 4096.0 * 4096;            // q_proj: h × 32·128
  const double kv = 2.0 * 4096 * (8 * 128);  // k_proj + v_proj: h × 8·128 each
  const double o = 4096.0 * 4096;            // o_proj
  const double mlp = 3.0 * 4096 * 14336;     // gate, up, down
  const double norms_layer = 2.0 * 4096;     // input + post-attention RMSNorm
  const double per_layer = q + kv + o + mlp + norms_layer;
  const double emb = vocab * h;
  const double total = L * per_layer + h /* final norm */ + 2 * emb /* embed + lm_head */;

  const ParamCounts c = count_params(preset("llama-3.1-8b"));
  EXPECT_DOUBLE_EQ(c.embedding, emb);
  EXPECT_DOUBLE_EQ(c.lm_head, emb);
  EXPECT_DOUBLE_EQ(c.attention, L * (q + kv + o));
  EXPECT_DOUBLE_EQ(c.mlp_dense, L * mlp);
  EXPECT_DOUBLE_EQ(c.norms, L * norms_layer + h);
  EXPECT_DOUBLE_EQ(c.mlp_experts_total, 0);
  EXPECT_DOUBLE_EQ(c.router, 0);
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), total);    // dense: everything is active
  EXPECT_DOUBLE_EQ(total, 8030261248.0);  // safetensors total on the HF model page
  expect_rel(c.total(), 8.0e9, 0.01, "Meta: Llama 3.1 8B");
}

TEST(Architecture, Llama31_70B_Params) {
  // meta-llama/Llama-3.1-70B config.json: hidden 8192, 80 layers, 64 q / 8 kv heads (head_dim
  // 8192/64 = 128), intermediate 28672, vocab 128256, untied embeddings.
  const double h = 8192, L = 80, vocab = 128256;
  const double q = 8192.0 * 8192;
  const double kv = 2.0 * 8192 * (8 * 128);
  const double o = 8192.0 * 8192;
  const double mlp = 3.0 * 8192 * 28672;
  const double norms_layer = 2.0 * 8192;
  const double per_layer = q + kv + o + mlp + norms_layer;
  const double emb = vocab * h;
  const double total = L * per_layer + h + 2 * emb;

  const ModelSpec m = preset("llama-3.1-70b");
  const ParamCounts c = count_params(m);
  EXPECT_DOUBLE_EQ(c.attention, L * (q + kv + o));
  EXPECT_DOUBLE_EQ(attention_params_per_layer(m), q + kv + o);
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 0), mlp);
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 79), mlp);
  EXPECT_DOUBLE_EQ(c.mlp_dense, L * mlp);
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), total);
  EXPECT_DOUBLE_EQ(total, 70553706496.0);  // safetensors total on the HF model page
  expect_rel(c.total(), 70.6e9, 0.01, "Meta: 70.6 B");
  // Weight bytes in BF16: 2 bytes per parameter.
  EXPECT_DOUBLE_EQ(weight_bytes(m, DType::Bf16), 2 * total);
  EXPECT_DOUBLE_EQ(weight_bytes(m, DType::Fp8), total);
}

TEST(Architecture, Llama31_405B_Params) {
  // meta-llama/Llama-3.1-405B config.json: hidden 16384, 126 layers, 128 q / 8 kv heads
  // (head_dim 16384/128 = 128), intermediate 53248, vocab 128256, untied embeddings.
  const double h = 16384, L = 126, vocab = 128256;
  const double q = 16384.0 * 16384;
  const double kv = 2.0 * 16384 * (8 * 128);
  const double o = 16384.0 * 16384;
  const double mlp = 3.0 * 16384 * 53248;
  const double norms_layer = 2.0 * 16384;
  const double total = L * (q + kv + o + mlp + norms_layer) + h + 2 * vocab * h;

  const ParamCounts c = count_params(preset("llama-3.1-405b"));
  EXPECT_DOUBLE_EQ(c.attention, L * (q + kv + o));
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), total);
  expect_rel(c.total(), 405.9e9, 0.01, "405.9 B (HF model page)");
}

TEST(Architecture, Qwen3_235B_A22B_Params) {
  // Qwen/Qwen3-235B-A22B config.json: hidden 4096, 94 layers, 64 q / 4 kv heads, head_dim 128
  // (explicit; 64·128 = 8192 != hidden), q/k RMSNorm, every layer MoE: 128 experts, top-8,
  // moe_intermediate 1536, no shared expert; vocab 151936, untied.
  const double h = 4096, L = 94, vocab = 151936;
  const double q = 4096.0 * (64 * 128);
  const double kv = 2.0 * 4096 * (4 * 128);
  const double o = (64.0 * 128) * 4096;
  const double qk_norm = 2.0 * 128;
  const double attn = q + kv + o + qk_norm;
  const double expert = 3.0 * 4096 * 1536;
  const double router = 4096.0 * 128;
  const double norms_layer = 2.0 * 4096;
  const double emb = vocab * h;
  const double total = L * (attn + 128 * expert + router + norms_layer) + h + 2 * emb;
  const double active = L * (attn + 8 * expert + router + norms_layer) + h + 2 * emb;

  const ModelSpec m = preset("qwen3-235b-a22b");
  const ParamCounts c = count_params(m);
  EXPECT_DOUBLE_EQ(attention_params_per_layer(m), attn);
  EXPECT_DOUBLE_EQ(c.attention, L * attn);
  EXPECT_DOUBLE_EQ(c.mlp_dense, 0);
  EXPECT_DOUBLE_EQ(c.mlp_experts_total, L * 128 * expert);
  EXPECT_DOUBLE_EQ(c.mlp_experts_active, L * 8 * expert);
  EXPECT_DOUBLE_EQ(c.router, L * router);
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 0), 8 * expert + router);
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), active);
  EXPECT_DOUBLE_EQ(active, 22190763520.0);  // the value the κ_crit calibration uses
  expect_rel(c.total(), 235e9, 0.01, "Qwen: 235 B total");
  expect_rel(c.active(), 22.2e9, 0.01, "Qwen: 22 B activated (22.2 B)");
}

TEST(Architecture, Qwen3_30B_A3B_Params) {
  // Qwen/Qwen3-30B-A3B config.json: hidden 2048, 48 layers, 32 q / 4 kv heads, head_dim 128,
  // q/k RMSNorm, 128 experts top-8, moe_intermediate 768, vocab 151936, untied.
  const double h = 2048, L = 48, vocab = 151936;
  const double attn = 2048.0 * (32 * 128)       // q_proj
                      + 2.0 * 2048 * (4 * 128)  // k_proj, v_proj
                      + (32.0 * 128) * 2048     // o_proj
                      + 2.0 * 128;              // q_norm, k_norm
  const double expert = 3.0 * 2048 * 768;
  const double router = 2048.0 * 128;
  const double norms_layer = 2.0 * 2048;
  const double emb = vocab * h;
  const double total = L * (attn + 128 * expert + router + norms_layer) + h + 2 * emb;
  const double active = L * (attn + 8 * expert + router + norms_layer) + h + 2 * emb;

  const ParamCounts c = count_params(preset("qwen3-30b-a3b"));
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), active);
  expect_rel(c.total(), 30.5e9, 0.01, "Qwen: 30.5 B total");
  // Qwen publishes "3.3 B activated" (two significant digits; the count is 3.353 B, so the
  // published figure is truncated): allow the 2% that the rounding implies.
  expect_rel(c.active(), 3.3e9, 0.02, "Qwen: 3.3 B activated");
}

TEST(Architecture, DeepSeekV3_Params) {
  // deepseek-ai/DeepSeek-V3 config.json: hidden 7168, 61 layers (MTP layer excluded), 128 heads,
  // MLA with q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128;
  // first_k_dense_replace 3 (intermediate 18432), then 256 routed + 1 shared expert, top-8,
  // moe_intermediate 2048; vocab 129280, untied.
  const double h = 7168, L = 61, vocab = 129280;
  const double attn = 7168.0 * 1536 + 1536         // q_a_proj + q_a_layernorm
                      + 1536.0 * 128 * (128 + 64)  // q_b_proj
                      + 7168.0 * (512 + 64) + 512  // kv_a_proj_with_mqa + kv_a_layernorm
                      + 512.0 * 128 * (128 + 128)  // kv_b_proj
                      + 128.0 * 128 * 7168;        // o_proj
  const double dense_mlp = 3.0 * 7168 * 18432;
  const double expert = 3.0 * 7168 * 2048;
  const double router = 7168.0 * 256;
  const double norms_layer = 2.0 * 7168;
  const double moe_layers = 61 - 3;
  const double emb = vocab * h;
  const double total = L * (attn + norms_layer) + 3 * dense_mlp +
                       moe_layers * ((256 + 1) * expert + router) + h + 2 * emb;
  const double active = L * (attn + norms_layer) + 3 * dense_mlp +
                        moe_layers * ((8 + 1) * expert + router) + h + 2 * emb;

  const ModelSpec m = preset("deepseek-v3");
  const ParamCounts c = count_params(m);
  EXPECT_DOUBLE_EQ(attention_params_per_layer(m), attn);
  EXPECT_DOUBLE_EQ(c.mlp_dense, 3 * dense_mlp);
  EXPECT_DOUBLE_EQ(c.mlp_experts_total, moe_layers * 257 * expert);
  EXPECT_DOUBLE_EQ(c.mlp_experts_active, moe_layers * 9 * expert);
  EXPECT_DOUBLE_EQ(c.router, moe_layers * router);
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 2), dense_mlp);            // last dense layer
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 3), 9 * expert + router);  // first MoE
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), active);
  expect_rel(c.total(), 671e9, 0.01, "DeepSeek: 671 B total (main model, no MTP)");
  // DeepSeek publishes "37 B activated" (two significant digits; the count with embedding and
  // LM head is 37.55 B): allow 2%.
  expect_rel(c.active(), 37e9, 0.02, "DeepSeek: 37 B activated");
}

TEST(Architecture, Mixtral8x7B_Params) {
  // mistralai/Mixtral-8x7B-v0.1 config.json: hidden 4096, 32 layers, 32 q / 8 kv heads
  // (head_dim 128), 8 local experts top-2 of SwiGLU 14336, vocab 32000, untied.
  const double h = 4096, L = 32, vocab = 32000;
  const double attn = 4096.0 * 4096 + 2.0 * 4096 * (8 * 128) + 4096.0 * 4096;
  const double expert = 3.0 * 4096 * 14336;
  const double router = 4096.0 * 8;
  const double norms_layer = 2.0 * 4096;
  const double emb = vocab * h;
  const double total = L * (attn + 8 * expert + router + norms_layer) + h + 2 * emb;
  const double active = L * (attn + 2 * expert + router + norms_layer) + h + 2 * emb;

  const ParamCounts c = count_params(preset("mixtral-8x7b"));
  EXPECT_DOUBLE_EQ(c.total(), total);
  EXPECT_DOUBLE_EQ(c.active(), active);
  expect_rel(c.total(), 46.7e9, 0.01, "Mistral: 46.7 B total");
  expect_rel(c.active(), 12.9e9, 0.01, "Mistral: 12.9 B active");
}

// ---- a tiny inline model, every field by hand -------------------------------------------

const char* kTinyDense = R"(
name: tiny
num_layers: 2
hidden_size: 16
vocab_size: 10
attention: {type: gqa, num_q_heads: 4, num_kv_heads: 2, head_dim: 4}
mlp: {type: dense, intermediate_size: 32}
)";

TEST(Architecture, TinyDenseEveryField) {
  const ModelSpec m = inline_model(kTinyDense);
  const ParamCounts c = count_params(m);
  // per layer: q 16·(4·4) + k,v 2·16·(2·4) + o (4·4)·16 = 256 + 256 + 256 = 768
  EXPECT_DOUBLE_EQ(attention_params_per_layer(m), 768);
  EXPECT_DOUBLE_EQ(c.embedding, 10 * 16);          // 160
  EXPECT_DOUBLE_EQ(c.lm_head, 10 * 16);            // untied by default
  EXPECT_DOUBLE_EQ(c.attention, 2 * 768);          // 1536
  EXPECT_DOUBLE_EQ(c.mlp_dense, 2 * 3 * 16 * 32);  // 3072
  EXPECT_DOUBLE_EQ(c.mlp_experts_total, 0);
  EXPECT_DOUBLE_EQ(c.mlp_experts_active, 0);
  EXPECT_DOUBLE_EQ(c.router, 0);
  EXPECT_DOUBLE_EQ(c.norms, (2 * 2 + 1) * 16);                // 80
  EXPECT_DOUBLE_EQ(c.total(), 160 + 160 + 1536 + 3072 + 80);  // 5008
  EXPECT_DOUBLE_EQ(c.active(), 5008);
  EXPECT_DOUBLE_EQ(c.active_matmul(true), 1536 + 3072 + 160);  // 4768
  EXPECT_DOUBLE_EQ(c.active_matmul(false), 1536 + 3072);       // 4608
  EXPECT_DOUBLE_EQ(linear_flops_per_token(m, true), 2 * 4768);
  EXPECT_DOUBLE_EQ(linear_flops_per_token(m, false), 2 * 4608);
  // KV: 2 layers · (K and V) · 2 heads · 4 dims · bytes
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 2 * 2 * 2 * 4 * 2);  // 64
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Fp32), 128);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Int4), 16);
  // TP 2: one KV head per GPU; TP 4: 4 q heads, 2 KV heads replicated to one per GPU.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, DType::Bf16, 2), 2 * 2 * 1 * 4 * 2);  // 32
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, DType::Bf16, 4), 32);
  EXPECT_THROW(kv_bytes_per_token_per_gpu(m, DType::Bf16, 8), InputError);  // 4 q heads
  // Attention slope: 2 layers · 2 (QKᵀ, PV) · 2 FLOPs · 4 heads · 4 dims = 128
  EXPECT_DOUBLE_EQ(attention_flops_per_token_per_cached(m), 4 * 2 * 4 * 4);
  // K = 2 cached, T = 3 new: token 0 sees 2+1, token 1 sees 2+2, token 2 sees 2+3 = 12 pairs.
  EXPECT_DOUBLE_EQ(attention_flops(m, 2, 3), 12 * 128.0);
  EXPECT_DOUBLE_EQ(weight_bytes(m, DType::Bf16), 2 * 5008);
}

TEST(Architecture, TinyTiedEmbeddingHeadStillAMatmul) {
  const ModelSpec m = inline_model(std::string(kTinyDense) + "tie_word_embeddings: true\n");
  const ParamCounts c = count_params(m);
  EXPECT_DOUBLE_EQ(c.lm_head, 0);
  EXPECT_DOUBLE_EQ(c.total(), 5008 - 160);
  // The tied LM head is still a matmul a token passes through.
  EXPECT_DOUBLE_EQ(c.active_matmul(true), 4768);
  EXPECT_DOUBLE_EQ(c.active_matmul(false), 4608);
}

TEST(Architecture, TinyMoeWithDenseLeadAndSharedExpert) {
  const ModelSpec m = inline_model(R"(
num_layers: 3
hidden_size: 8
vocab_size: 5
tie_word_embeddings: true
attention: {type: gqa, num_q_heads: 2, num_kv_heads: 1, head_dim: 4, qk_norm: true}
mlp: {type: moe, first_dense_layers: 1, intermediate_size: 16, num_experts: 4,
      experts_per_token: 2, moe_intermediate_size: 6, num_shared_experts: 1}
)");
  const ParamCounts c = count_params(m);
  // attention per layer: q 8·8 + k,v 2·8·4 + o 8·8 + q/k norm 2·4 = 64 + 64 + 64 + 8 = 200
  EXPECT_DOUBLE_EQ(attention_params_per_layer(m), 200);
  const double expert = 3 * 8 * 6;  // 144
  EXPECT_DOUBLE_EQ(c.embedding, 40);
  EXPECT_DOUBLE_EQ(c.lm_head, 0);
  EXPECT_DOUBLE_EQ(c.attention, 3 * 200);
  EXPECT_DOUBLE_EQ(c.mlp_dense, 1 * 3 * 8 * 16);                 // 384, layer 0 only
  EXPECT_DOUBLE_EQ(c.mlp_experts_total, 2 * (4 + 1) * expert);   // 1440
  EXPECT_DOUBLE_EQ(c.mlp_experts_active, 2 * (2 + 1) * expert);  // 864
  EXPECT_DOUBLE_EQ(c.router, 2 * 8 * 4);                         // 64
  EXPECT_DOUBLE_EQ(c.norms, (2 * 3 + 1) * 8);                    // 56
  EXPECT_DOUBLE_EQ(c.total(), 40 + 600 + 384 + 1440 + 64 + 56);  // 2584
  EXPECT_DOUBLE_EQ(c.active(), 40 + 600 + 384 + 864 + 64 + 56);  // 2008
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 0), 384);
  EXPECT_DOUBLE_EQ(mlp_active_params_per_layer(m, 1), 3 * expert + 32);
  EXPECT_DOUBLE_EQ(c.active_matmul(true), 600 + 384 + 864 + 64 + 40);
}

TEST(Architecture, TinyMlaEveryFlopAndByte) {
  const ModelSpec m = inline_model(R"(
num_layers: 1
hidden_size: 8
vocab_size: 3
attention: {type: mla, num_q_heads: 2, kv_lora_rank: 4, qk_nope_head_dim: 2,
            qk_rope_head_dim: 1, v_head_dim: 2}
mlp: {type: dense, intermediate_size: 4}
)");
  // q_proj 8·2·(2+1) = 48; kv_a 8·(4+1) = 40; kv_a_norm 4; kv_b 4·2·(2+2) = 32; o 2·2·8 = 32
  EXPECT_DOUBLE_EQ(attention_params_per_layer(m), 48 + 40 + 4 + 32 + 32);
  // Latent + rope key: (4 + 1) values per layer.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), 1 * 5 * 2);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, DType::Bf16, 2), 10);  // latent replicated
  // slope: 1 layer · 2 FLOPs · 2 heads · (qk 3 + v 2) = 20
  EXPECT_DOUBLE_EQ(attention_flops_per_token_per_cached(m), 20);
  // K = 3, T = 2: pairs 3+1 + 3+2 = 9; up-projection of 3 latents: 3·1·2·4·2·(2+2) = 192
  EXPECT_DOUBLE_EQ(attention_flops(m, 3, 2), 9 * 20 + 192);
}

// ---- KV bytes ---------------------------------------------------------------------------

TEST(Architecture, KvBytesPerTokenPublished) {
  // 2 (K, V) · layers · kv_heads · head_dim · 2 B (BF16)
  const double llama70 = 2.0 * 80 * 8 * 128 * 2;
  const double llama405 = 2.0 * 126 * 8 * 128 * 2;
  const double qwen235 = 2.0 * 94 * 4 * 128 * 2;
  const double dsv3 = 61.0 * (512 + 64) * 2;  // MLA: latent 512 + rope key 64 per layer
  EXPECT_DOUBLE_EQ(llama70, 327680);
  EXPECT_DOUBLE_EQ(llama405, 516096);
  EXPECT_DOUBLE_EQ(qwen235, 192512);
  EXPECT_DOUBLE_EQ(dsv3, 70272);

  struct Case {
    const char* name;
    double bf16;
  };
  for (const Case& k : {Case{"llama-3.1-70b", 327680}, Case{"llama-3.1-405b", 516096},
                        Case{"qwen3-235b-a22b", 192512}, Case{"deepseek-v3", 70272}}) {
    const ModelSpec m = preset(k.name);
    EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Bf16), k.bf16) << k.name;
    EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Fp16), k.bf16) << k.name;
    EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Fp8), k.bf16 / 2) << k.name;
    EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Int8), k.bf16 / 2) << k.name;
    EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, DType::Int4), k.bf16 / 4) << k.name;
  }
  // Llama-3.1-8B: 2 · 32 · 8 · 128 · 2 = 131072
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(preset("llama-3.1-8b"), DType::Bf16), 2.0 * 32 * 8 * 128 * 2);
}

TEST(Architecture, KvSharePerGpuWithReplication) {
  const ModelSpec qwen = preset("qwen3-235b-a22b");  // 64 q heads, 4 KV heads, 94 layers
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 1), 192512);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 2), 2.0 * 94 * 2 * 128 * 2);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 2), 96256);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 4), 2.0 * 94 * 1 * 128 * 2);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 4), 48128);
  // TP 8 > 4 KV heads: each head replicated on 2 GPUs, so twice the fair share 192512 / 8.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 8), 48128);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 8), 2 * (192512.0 / 8));
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(qwen, DType::Fp8, 8), 48128.0 / 2);
  EXPECT_DOUBLE_EQ(kv_heads_per_gpu(qwen, 8), 1);
  EXPECT_DOUBLE_EQ(kv_heads_per_gpu(qwen, 2), 2);

  const ModelSpec llama = preset("llama-3.1-70b");  // 64 q heads, 8 KV heads, 80 layers
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(llama, DType::Bf16, 8), 2.0 * 80 * 1 * 128 * 2);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(llama, DType::Bf16, 8), 40960);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(llama, DType::Bf16, 4), 2.0 * 80 * 2 * 128 * 2);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(llama, DType::Bf16, 16), 40960);  // replicated

  const ModelSpec ds = preset("deepseek-v3");  // MLA: the latent is whole on every GPU
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(ds, DType::Bf16, 8), 70272);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(ds, DType::Bf16, 1), 70272);
}

TEST(Architecture, InvalidTensorParallelismThrows) {
  const ModelSpec llama = preset("llama-3.1-70b");
  EXPECT_THROW(kv_bytes_per_token_per_gpu(llama, DType::Bf16, 3), InputError);
  EXPECT_THROW(kv_bytes_per_token_per_gpu(llama, DType::Bf16, 0), InputError);
  EXPECT_THROW(kv_bytes_per_token_per_gpu(llama, DType::Bf16, -8), InputError);
  EXPECT_THROW(kv_heads_per_gpu(llama, 3), InputError);
  EXPECT_THROW(kv_heads_per_gpu(llama, 128), InputError);  // more ranks than q heads
  const ModelSpec qwen = preset("qwen3-235b-a22b");
  EXPECT_THROW(kv_bytes_per_token_per_gpu(qwen, DType::Bf16, 6), InputError);
  // MLA: the latent is replicated, but TP still splits the 128 query heads, so it must divide
  // them (vLLM: num_heads % tp == 0).
  const ModelSpec ds = preset("deepseek-v3");
  EXPECT_THROW(kv_bytes_per_token_per_gpu(ds, DType::Bf16, 0), InputError);
  EXPECT_THROW(kv_bytes_per_token_per_gpu(ds, DType::Bf16, 3), InputError);
  EXPECT_THROW(kv_bytes_per_token_per_gpu(ds, DType::Bf16, 256), InputError);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(ds, DType::Bf16, 16), 70272);
}

// ---- FLOPs ------------------------------------------------------------------------------

TEST(Architecture, AttentionFlopsLlama70B) {
  const ModelSpec m = preset("llama-3.1-70b");
  const double slope = 4.0 * 80 * 64 * 128;  // 4·L·H_q·d_h
  EXPECT_DOUBLE_EQ(slope, 2621440);
  EXPECT_DOUBLE_EQ(attention_flops_per_token_per_cached(m), slope);
  // Hand-counted causal pairs: new token i attends to K cached + tokens 0..i.
  for (int K : {0, 1, 5, 17}) {
    for (int T : {1, 2, 3, 8}) {
      double pairs = 0;
      for (int i = 0; i < T; ++i) pairs += K + i + 1;
      EXPECT_DOUBLE_EQ(pairs, T * K + T * (T + 1) / 2.0);
      EXPECT_DOUBLE_EQ(attention_flops(m, K, T), pairs * slope) << "K=" << K << " T=" << T;
    }
  }
  // mission.md: at K = 65k attention adds ~172 GFLOP per new token.
  EXPECT_NEAR(attention_flops(m, 65536, 1) / 1e9, 171.8, 0.1);
}

TEST(Architecture, AttentionFlopsDeepSeekMla) {
  const ModelSpec m = preset("deepseek-v3");
  // 61 layers · 2 (QKᵀ, PV) · 128 heads · 2 FLOPs... i.e. L·2·H·(d_qk + d_v), d_qk = 128 + 64
  const double slope = 61.0 * 2 * 128 * ((128 + 64) + 128);
  EXPECT_DOUBLE_EQ(attention_flops_per_token_per_cached(m), slope);
  // Expanded: up-project each cached latent once, L · 2 · kv_lora · H · (nope + v).
  const double up = 61.0 * 2 * 512 * 128 * (128 + 128);
  // Absorbed: per pair L·2·H·((kv_lora + rope) + kv_lora); per new token the query goes through
  // W_UK (H·nope·kv_lora) and the output through W_UV (H·kv_lora·v): L·2·H·kv_lora·(nope + v).
  const double slope_absorbed = 61.0 * 2 * 128 * ((512 + 64) + 512);
  const double per_new_absorbed = 61.0 * 2 * 128 * 512 * (128 + 128);
  for (int K : {0, 3, 10, 5000}) {
    for (int T : {1, 4, 1000}) {
      double pairs = 0;
      for (int i = 0; i < T; ++i) pairs += K + i + 1;
      const double expanded = pairs * slope + K * up;
      const double absorbed = pairs * slope_absorbed + T * per_new_absorbed;
      EXPECT_DOUBLE_EQ(attention_flops(m, K, T), std::min(expanded, absorbed))
          << "K=" << K << " T=" << T;
    }
  }
  // Long prefills over a long prefix run expanded, one-token steps absorbed.
  EXPECT_DOUBLE_EQ(attention_flops(m, 5000, 1000),
                   (1000.0 * 5000 + 1000.0 * 1001 / 2) * slope + 5000 * up);
  EXPECT_DOUBLE_EQ(attention_flops(m, 5000, 1), 5001 * slope_absorbed + per_new_absorbed);
}

TEST(Architecture, LinearFlopsHeadIsTwoVocabHidden) {
  struct Case {
    const char* name;
    double vocab, hidden;
  };
  for (const Case& k : {Case{"llama-3.1-8b", 128256, 4096}, Case{"llama-3.1-70b", 128256, 8192},
                        Case{"llama-3.1-405b", 128256, 16384},
                        Case{"qwen3-235b-a22b", 151936, 4096}, Case{"qwen3-30b-a3b", 151936, 2048},
                        Case{"deepseek-v3", 129280, 7168}, Case{"mixtral-8x7b", 32000, 4096}}) {
    const ModelSpec m = preset(k.name);
    EXPECT_DOUBLE_EQ(linear_flops_per_token(m, true) - linear_flops_per_token(m, false),
                     2 * k.vocab * k.hidden)
        << k.name;
  }
  // Llama-3.1-70B without head: 2 · 80 · (attention + MLP matmuls).
  const double per_layer = 8192.0 * 8192 + 2.0 * 8192 * 1024 + 8192.0 * 8192 + 3.0 * 8192 * 28672;
  EXPECT_DOUBLE_EQ(linear_flops_per_token(preset("llama-3.1-70b"), false), 2 * 80 * per_layer);
}

TEST(Architecture, DtypeNames) {
  EXPECT_EQ(parse_dtype("fp8", "kv"), DType::Fp8);
  EXPECT_STREQ(dtype_name(DType::Int4), "int4");
  EXPECT_DOUBLE_EQ(bytes_per_element(DType::Int4), 0.5);
  EXPECT_THROW(parse_dtype("fp9", "kv"), InputError);
}

TEST(Architecture, InvalidModelsRejected) {
  // More KV heads than query heads, q heads not a multiple of KV heads, top-k over experts.
  EXPECT_THROW(inline_model(R"(
num_layers: 1
hidden_size: 8
vocab_size: 3
attention: {type: gqa, num_q_heads: 2, num_kv_heads: 4, head_dim: 4}
mlp: {type: dense, intermediate_size: 4}
)"),
               InputError);
  EXPECT_THROW(inline_model(R"(
num_layers: 1
hidden_size: 8
vocab_size: 3
attention: {type: gqa, num_q_heads: 6, num_kv_heads: 4, head_dim: 4}
mlp: {type: dense, intermediate_size: 4}
)"),
               InputError);
  EXPECT_THROW(inline_model(R"(
num_layers: 1
hidden_size: 8
vocab_size: 3
attention: {type: gqa, num_q_heads: 2, num_kv_heads: 1, head_dim: 4}
mlp: {type: moe, num_experts: 2, experts_per_token: 3, moe_intermediate_size: 4}
)"),
               InputError);
}

}  // namespace
}  // namespace architecture_test
}  // namespace kappasim
