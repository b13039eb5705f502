// LLM architecture and its FLOP / byte accounting: parameters (total, active), weight bytes, KV
// bytes per token, prefill FLOPs per new token (linear layers, and attention over K cached + T
// new tokens, causal), and the per-GPU share under tensor parallelism including KV-head
// replication. Dense GQA, MoE (routed + shared experts, top-k) and MLA (DeepSeek latent KV).
// Pure functions, no SystemC: the analytic κ model and the GPU timing model both call these.
//
// Conventions (see docs/accounting.md):
//  - a matmul of an [n × in] activation by an [in × out] weight costs 2·n·in·out FLOPs;
//  - SwiGLU MLP = gate, up, down projections (3 matrices); norms and activations are not FLOPs
//    that matter here and are not counted;
//  - attention FLOPs count QKᵀ and PV only: 2·d per (query, key) pair and head for each;
//  - MLA runs the cheaper of "expanded" (the cached latents up-projected to per-head K and V by
//    kv_b_proj once per request, then ordinary attention) and "absorbed" (attention in latent
//    space, queries and outputs mapped through W_UK / W_UV): vLLM chooses by query length, and
//    expanded wins for long prefills.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace kappasim {

// Issue 25: Nvfp4 and Mxfp4 are the block-scaled 4-bit KV formats, their scales counted in the
// bytes per element: NVFP4 packs two E2M1 values per byte with one FP8 E4M3 scale per 16
// elements (and one FP32 scale per tensor, negligible): 0.5 + 1/16 = 0.5625 B (FlashInfer
// nvfp4_kv_quantize: fp4 data [M, K/2] uint8, block scales [M, K/16]); MXFP4 (OCP Microscaling
// Formats v1.0) one E8M0 scale per 32 elements: 0.5 + 1/32 = 0.53125 B. Int4 is a 4-bit integer
// cache without counted scales (0.5 B).
enum class DType { Fp32, Bf16, Fp16, Fp8, Int8, Int4, Nvfp4, Mxfp4 };
double bytes_per_element(DType t);
// True for the FP4 KV formats (a GPU must have FP4 support to write them).
bool is_fp4_kv(DType t);
const std::vector<std::pair<const char*, DType>>& dtype_names();
DType parse_dtype(const std::string& s, const std::string& what);
const char* dtype_name(DType t);

enum class AttentionType { Gqa, Mla };
// Per-layer attention kind (issue 25): full causal attention over every earlier token, sliding
// window attention over the last `sliding_window` tokens, linear attention (Gated DeltaNet)
// that keeps a fixed-size recurrent state per request instead of per-token KV, or chunked local
// attention (Llama 4): a token at 0-based position q attends to the keys from
// floor(q / C)·C to q, C = `attention_chunk_size`.
enum class LayerKind { Full, Sliding, Linear, Chunked };
enum class MlpType { Dense, Moe };

struct AttentionSpec {
  AttentionType type = AttentionType::Gqa;
  int num_q_heads = 0;
  // GQA
  int num_kv_heads = 0;
  int head_dim = 0;
  bool qk_norm = false;
  // MLA
  int q_lora_rank = 0;  // 0: no low-rank query compression
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // Issue 25 (absent: off). Learned per-head softmax sinks (gpt-oss): one logit per query head
  // and layer in the softmax denominator, no cached token, so no KV bytes.
  bool attention_sinks = false;
  // Sigmoid output gate on the attention output (Qwen3-Next "gated attention"): q_proj emits
  // the query and a same-sized gate per head.
  bool output_gate = false;
  // DeepSeek Sparse Attention (DeepSeek-V3.2, MLA only; 0: off). A lightning indexer of
  // index_n_heads heads of index_head_dim scores every earlier token (its per-token key is
  // cached: index_head_dim FP8 values + one FP32 scale per 128, vLLM's indexer cache) and the
  // main attention attends to the index_topk best-scoring tokens only.
  int index_n_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
  bool sparse() const { return index_topk > 0; }

  template <class V>
  void visit(V& v) {
    static const std::vector<std::pair<const char*, AttentionType>> types = {
        {"gqa", AttentionType::Gqa}, {"mla", AttentionType::Mla}};
    v.choice("type", type, types, req("attention type: gqa (MHA/GQA/MQA) or mla"));
    v.integer("num_q_heads", num_q_heads, req("query heads"));
    if (type == AttentionType::Gqa) {
      v.integer("num_kv_heads", num_kv_heads, req("key/value heads"));
      v.integer("head_dim", head_dim, req("dimension per head"));
      v.boolean("qk_norm", qk_norm, opt("per-head RMSNorm on q and k (Qwen3)"));
      if (!V::kWriting || attention_sinks)
        v.boolean("attention_sinks", attention_sinks,
                  opt("learned per-head softmax sink logits (gpt-oss); no KV"));
      if (!V::kWriting || output_gate)
        v.boolean("output_gate", output_gate,
                  opt("sigmoid gate on the attention output (Qwen3-Next gated attention)"));
    } else {
      v.integer("q_lora_rank", q_lora_rank,
                opt("query low-rank dimension (0: none)", Range::NonNegative));
      v.integer("kv_lora_rank", kv_lora_rank, req("compressed KV latent dimension"));
      v.integer("qk_nope_head_dim", qk_nope_head_dim, req("non-rotary q/k dimension per head"));
      v.integer("qk_rope_head_dim", qk_rope_head_dim, req("rotary q/k dimension (shared key)"));
      v.integer("v_head_dim", v_head_dim, req("value dimension per head"));
      // ---- issue 25: DeepSeek Sparse Attention (absent: dense MLA) ----
      if (!V::kWriting || index_topk > 0) {
        v.integer("index_n_heads", index_n_heads,
                  opt("lightning-indexer heads (DeepSeek-V3.2 index_n_heads)", Range::NonNegative));
        v.integer("index_head_dim", index_head_dim,
                  opt("lightning-indexer key dimension (index_head_dim)", Range::NonNegative));
        v.integer("index_topk", index_topk,
                  opt("tokens the sparse attention selects per query (index_topk; 0: dense)",
                      Range::NonNegative));
      }
    }
  }
  void validate(const std::string& path) const;
};

struct MlpSpec {
  MlpType type = MlpType::Dense;
  std::int64_t intermediate_size = 0;  // dense layers' SwiGLU size
  int first_dense_layers = 0;          // MoE models whose first layers are dense
  int num_experts = 0;                 // routed experts
  int experts_per_token = 0;
  std::int64_t moe_intermediate_size = 0;
  int num_shared_experts = 0;
  // Group-limited routing (DeepSeek-V3 n_group / topk_group): a token's top-k experts come from
  // its best topk_groups of num_expert_groups groups. 0: no groups. Used by the EP all-to-all
  // accounting (models/llm/parallelism).
  int num_expert_groups = 0;
  int topk_groups = 0;
  // Interleaved MoE (Llama 4 interleave_moe_layer_step): beyond first_dense_layers, layer l is MoE
  // when (l + 1) % moe_layer_step == 0 and dense (intermediate_size) otherwise; HF's
  // moe_layers = range(step - 1, num_layers, step). 0 or 1: every layer MoE.
  int moe_layer_step = 0;

  template <class V>
  void visit(V& v) {
    static const std::vector<std::pair<const char*, MlpType>> types = {{"dense", MlpType::Dense},
                                                                       {"moe", MlpType::Moe}};
    v.choice("type", type, types, req("MLP type: dense or moe"));
    if (type == MlpType::Dense) {
      v.integer("intermediate_size", intermediate_size, req("SwiGLU intermediate size"));
    } else {
      v.integer("first_dense_layers", first_dense_layers,
                opt("leading dense layers", Range::NonNegative));
      v.integer("intermediate_size", intermediate_size,
                opt("intermediate size of the dense layers", Range::NonNegative));
      v.integer("num_experts", num_experts, req("routed experts per MoE layer"));
      v.integer("experts_per_token", experts_per_token, req("routed experts per token (top-k)"));
      v.integer("moe_intermediate_size", moe_intermediate_size, req("expert intermediate size"));
      v.integer("num_shared_experts", num_shared_experts,
                opt("always-active shared experts", Range::NonNegative));
      // ---- group-limited routing (issue 14, EP all-to-all) ----
      v.integer(
          "num_expert_groups", num_expert_groups,
          opt("expert groups of group-limited routing (n_group; 0: none)", Range::NonNegative));
      v.integer("topk_groups", topk_groups,
                opt("groups a token's experts may come from (topk_group)", Range::NonNegative));
      // ---- issue 25: interleaved MoE (Llama 4 Maverick) ----
      if (!V::kWriting || moe_layer_step > 1)
        v.integer("moe_layer_step", moe_layer_step,
                  opt("every moe_layer_step-th layer is MoE, the others dense "
                      "(interleave_moe_layer_step; 0 or 1: every layer)",
                      Range::NonNegative));
    }
  }
  void validate(const std::string& path) const;
};

// Linear-attention layers, per request and layer a fixed state instead of per-token KV:
//  - gated_deltanet (Qwen3-Next): a recurrent state of value_heads × key_head_dim ×
//    value_head_dim and a causal-conv state of (conv_kernel − 1) positions ×
//    (2·key_heads·key_head_dim + value_heads·value_head_dim) channels;
//  - kda (Kimi Delta Attention, Kimi-Linear): the same state shapes with key heads = value
//    heads (num_heads of head_dim; q, k and v each have their short convolution), its own
//    projections (low-rank forget and output gates);
//  - lightning (MiniMax lightning attention): a per-head d_k × d_v state only, no convolution.
enum class LinearAttentionType { GatedDeltaNet, Kda, Lightning };
struct LinearAttentionSpec {
  LinearAttentionType type = LinearAttentionType::GatedDeltaNet;
  int num_key_heads = 0;
  int num_value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;

  template <class V>
  void visit(V& v) {
    static const std::vector<std::pair<const char*, LinearAttentionType>> types = {
        {"gated_deltanet", LinearAttentionType::GatedDeltaNet},
        {"kda", LinearAttentionType::Kda},
        {"lightning", LinearAttentionType::Lightning}};
    if (!V::kWriting || type != LinearAttentionType::GatedDeltaNet)
      v.choice("type", type, types,
               opt("gated_deltanet (Qwen3-Next, default), kda (Kimi Delta Attention) or lightning "
                   "(MiniMax)"));
    v.integer("num_key_heads", num_key_heads, req("key (and query) heads (linear_num_key_heads)"));
    v.integer("num_value_heads", num_value_heads, req("value heads (linear_num_value_heads)"));
    v.integer("key_head_dim", key_head_dim, req("key dimension per head (linear_key_head_dim)"));
    v.integer("value_head_dim", value_head_dim,
              req("value dimension per head (linear_value_head_dim)"));
    if (type == LinearAttentionType::Lightning) {
      if (!V::kWriting || conv_kernel > 0)
        v.integer("conv_kernel", conv_kernel,
                  opt("lightning attention has no short convolution (0)", Range::NonNegative));
    } else {
      v.integer("conv_kernel", conv_kernel,
                req("causal short-convolution width (linear_conv_kernel_dim)"));
    }
  }
  void validate(const std::string& path) const;
};

struct ModelSpec {
  std::string name;
  std::string display_name;
  std::string hf_config;
  int num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t vocab_size = 0;
  bool tie_word_embeddings = false;
  AttentionSpec attention;
  MlpSpec mlp;
  // Issue 25: one letter per layer, F full attention, S sliding window, L linear attention,
  // C chunked local attention (spaces ignored). Empty: every layer full attention (dense models,
  // unchanged).
  std::string layer_pattern;
  int sliding_window = 0;           // tokens a sliding layer attends to (and keeps)
  int attention_chunk_size = 0;     // C: the chunk a chunked layer attends within
  int max_position_embeddings = 0;  // 0: not given (the window is then not checked)
  LinearAttentionSpec linear;       // read when the pattern has L layers

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.text("hf_config", hf_config, opt("Hugging Face repository of config.json"));
    v.integer("num_layers", num_layers, req("transformer layers"));
    v.integer("hidden_size", hidden_size, req("model (residual) dimension"));
    v.integer("vocab_size", vocab_size, req("vocabulary size"));
    v.boolean("tie_word_embeddings", tie_word_embeddings,
              opt("LM head shares the embedding matrix"));
    v.object("attention", attention, req("attention block"));
    v.object("mlp", mlp, req("MLP / MoE block"));
    // ---- issue 25: per-layer attention kinds (absent: all full attention) ----
    if (!V::kWriting || !layer_pattern.empty())
      v.text("layer_pattern", layer_pattern,
             opt("per layer: F full, S sliding-window, L linear, C chunked attention (HF "
                 "layer_types)"));
    if (!V::kWriting || sliding_window > 0)
      v.integer(
          "sliding_window", sliding_window,
          opt("window of the sliding layers, tokens (HF sliding_window)", Range::NonNegative));
    if (!V::kWriting || attention_chunk_size > 0)
      v.integer("attention_chunk_size", attention_chunk_size,
                opt("chunk of the chunked-attention layers, tokens (Llama 4 attention_chunk_size)",
                    Range::NonNegative));
    if (!V::kWriting || max_position_embeddings > 0)
      v.integer("max_position_embeddings", max_position_embeddings,
                opt("longest context the model takes (0: not given)", Range::NonNegative));
    if (layer_pattern.find('L') != std::string::npos)
      v.object("linear_attention", linear,
               req("linear-attention (Gated DeltaNet, KDA or lightning) layers"));
  }
  void validate(const std::string& path) const;
  // The kind of each layer (the pattern with spaces removed; all Full when empty).
  std::vector<LayerKind> layer_kinds() const;
  int count_layers(LayerKind k) const;
  // True when some layer is not full attention.
  bool has_layer_pattern() const;
  // The kind of layer `layer` (0-based; Full without a pattern), without building a vector.
  LayerKind layer_kind(int layer) const;
  // True when layer `layer` (0-based) runs the MoE block: beyond first_dense_layers, and on every
  // moe_layer_step-th layer when the MoE layers interleave with dense ones (Llama 4 Maverick).
  bool is_moe_layer(int layer) const;
  // The number of dense-MLP layers (first_dense_layers, plus the interleaved dense ones).
  int dense_mlp_layers() const;
};

// ---- accounting ---------------------------------------------------------------------------

struct ParamCounts {
  double embedding = 0;           // token embedding table
  double lm_head = 0;             // 0 when tied to the embedding
  double attention = 0;           // all layers: projections (+ q/k norms, MLA latent norms)
  double mlp_dense = 0;           // all dense-MLP layers
  double mlp_experts_total = 0;   // all routed + shared experts, all MoE layers
  double mlp_experts_active = 0;  // top-k routed + shared, all MoE layers
  double router = 0;              // MoE gate matrices
  double norms = 0;               // layer norms (2 per layer + final)
  double total() const;
  double active() const;
  // Parameters that are matmul weights a new token passes through (no embedding lookup, no
  // norms), with or without the LM head.
  double active_matmul(bool with_lm_head) const;
};
ParamCounts count_params(const ModelSpec& m);

// Per layer, for the compute model.
double attention_params_per_layer(const ModelSpec& m);
double mlp_active_params_per_layer(const ModelSpec& m, int layer);
// One linear-attention layer's parameters (its variant's projections, convolution, gates, norm).
double linear_attention_params_per_layer(const ModelSpec& m);

// KV bytes per token over all layers (K and V, or the MLA latent + rope key). With a layer
// pattern: the bytes per token of the full-attention layers only, i.e. the slope of
// kv_bytes_for_prefix in K once K exceeds the window (K → ∞).
double kv_bytes_per_token(const ModelSpec& m, DType kv);
// Issue 25: the KV bytes a prefix of K tokens leaves behind, whole model:
//   Σ_full K·b + Σ_sliding min(K, W)·b + Σ_chunked (K mod C)·b + Σ_linear state,
// b = one layer's bytes per token. A chunked layer keeps only the tokens of the chunk K falls
// in, K − floor(K / C)·C (vLLM ChunkedLocalAttentionManager: the blocks before
// floor(K / C)·C are skipped, and a prefix-cache hit marks them null).
// For a model without a pattern: K · kv_bytes_per_token.
double kv_bytes_for_prefix(const ModelSpec& m, DType kv, double K);
// One GPU's share under tensor parallelism tp (KV heads as kv_heads_per_gpu; the linear state's
// value heads split tp ways).
double kv_bytes_for_prefix_per_gpu(const ModelSpec& m, DType kv, int tp, double K);
// One linear-attention layer's state per request (recurrent + conv), in `kv`'s element size.
double linear_state_bytes_per_layer(const ModelSpec& m, DType kv);
// DeepSeek Sparse Attention: the indexer key one token leaves in one layer, independent of the
// KV dtype: index_head_dim FP8 bytes + 4 B (one FP32 scale) per 128 of them (vLLM
// DeepseekV32IndexerCache, uint8, head size index_head_dim + index_head_dim / 128 · 4). 0
// without sparse attention.
double indexer_key_bytes_per_token_per_layer(const ModelSpec& m);

// KV heads each GPU holds under tensor parallelism `tp`; when tp exceeds the KV heads they are
// replicated (vLLM: max(1, kv_heads / tp)). MLA's latent is not split by head: every GPU holds
// all of it. Throws InputError when tp does not divide (or is not divided by) the KV heads.
double kv_heads_per_gpu(const ModelSpec& m, int tp);
double kv_bytes_per_token_per_gpu(const ModelSpec& m, DType kv, int tp);
// One attention layer's KV bytes per token on one GPU (K and V of its KV heads, or MLA's latent).
double kv_bytes_per_token_per_layer_per_gpu(const ModelSpec& m, DType kv, int tp);

// Issue 25: the KV a serving stack keeps and moves when its KV cache is one unified layout, as
// vLLM's is whenever a KV connector is configured and the connector does not declare hybrid
// support (SupportsHMA): VllmConfig turns the hybrid KV cache manager off ("Hybrid KV cache
// manager is not compatible with KV transfer", vllm/config; every stack preset here runs such a
// connector: LMCache 0.3.x, vLLM's OffloadingConnector before 0.28), and
// kv_cache_utils.unify_hybrid_kv_cache_specs then turns each sliding-window layer's spec into a
// full-attention one, and each chunked-local layer's likewise (ChunkedLocalAttentionSpec →
// FullAttentionSpec with attention_chunk_size). So every attention layer, full, sliding or
// chunked, keeps, stores and loads every token's KV: B_kv = (F + S + C) layers × one layer's
// bytes per token, the same at every K. The window or chunk still bounds the attention the
// layer computes (the kernel gets it).
// Linear-attention (Mamba-style state) layers cannot be unified with attention layers: vLLM
// raises ValueError, and so does this (InputError naming model.layer_pattern).
// For a model without a pattern these equal kv_bytes_per_token(_per_gpu).
double kv_bytes_per_token_unified(const ModelSpec& m, DType kv);
double kv_bytes_per_token_unified_per_gpu(const ModelSpec& m, DType kv, int tp);

// Issue 25: what a hybrid-aware KV cache keeps and moves on one GPU (vLLM's hybrid KV cache
// manager, HybridKVCacheCoordinator, kept on: a connector that declares hybrid support): every
// layer kind its own group, as kv_bytes_for_prefix_per_gpu accounts a prefix. Per GPU under
// tensor parallelism tp, in `kv`'s element size.
struct HybridKv {
  double full_Bpt = 0;           // bytes per token of the layers that keep every token (F)
  double sliding_Bpt = 0;        // of the sliding-window layers (S), which keep the last W tokens
  double chunked_Bpt = 0;        // of the chunked layers (C), which keep the tokens of K's chunk
  double state_B = 0;            // the linear layers' (L) state, one per request
  double window = 0, chunk = 0;  // W, C in tokens (0 when the model has no such layer)

  // Bytes of the prefix tokens [lo, hi) a prefix of K tokens leaves (lo <= hi <= K): every
  // token of the full layers; the sliding layers' tokens in [K − W, K); the chunked layers'
  // tokens in [floor(K / C)·C, K); the state once, with the range that ends at K.
  // bytes(0, K, K) = kv_bytes_for_prefix_per_gpu(m, kv, tp, K).
  double bytes(double lo, double hi, double K) const;
  // Bytes a request of n tokens holds in vLLM's paged pool with the hybrid allocator, blocks of
  // `block_tokens`: the full layers ceil(n / b) blocks; a sliding layer the blocks from
  // floor(max(0, n − W + 1) / b) on (SlidingWindowManager.get_num_skipped_tokens: n − W + 1
  // tokens fall out of the window, their whole blocks are freed); a chunked layer the blocks
  // from floor(floor(n / C)·C / b) on (ChunkedLocalAttentionManager); the state once.
  double pool_bytes(double n, int block_tokens) const;
};
// InputError naming model.layer_pattern when the model keeps nothing per token in full layers
// (no F layer: the pool's block unit below is a full layer's).
HybridKv hybrid_kv_per_gpu(const ModelSpec& m, DType kv, int tp);

// Linear-layer FLOPs per new token (2 × active matmul parameters).
double linear_flops_per_token(const ModelSpec& m, bool with_lm_head);

// Attention FLOPs for one prefill of T new tokens over K cached tokens, causal, all layers, for
// the whole model (divide by tp for one GPU's share). For MLA, the cheaper of expanded (with
// the up-projection of the K cached latents) and absorbed. With DeepSeek Sparse Attention: the
// absorbed MLA over min(p, index_topk) keys per query, plus indexer_flops.
double attention_flops(const ModelSpec& m, double K, double T);
// DeepSeek Sparse Attention's lightning indexer, all layers: every new token's query scores
// every earlier token (p keys at position p, causal), QKᵀ only, 2·index_n_heads·index_head_dim
// FLOPs per (query, key) pair and layer (FP8 on the GPU). 0 without sparse attention.
double indexer_flops(const ModelSpec& m, double K, double T);
// Chunked local attention: the (query, key) pairs of T new tokens after K cached ones when a
// token at 0-based position q attends to the keys from floor(q / C)·C to q: f(K + T) − f(K),
// f(n) = floor(n / C)·C(C + 1)/2 + r(r + 1)/2, r = n − floor(n / C)·C.
double chunked_attention_pairs(double C, double K, double T);
// One layer's share: attention FLOPs of one layer of kind `kind` (whole model's heads) for T new
// tokens over K cached. A sliding layer's new token at position p attends to min(p, W) keys;
// a chunked layer's to the keys of its chunk; a linear layer has no (query, key) pairs (0). Σ over
// the layers equals attention_flops for a GQA model.
double attention_flops_layer(const ModelSpec& m, LayerKind kind, double K, double T);
// Attention FLOPs per new token per cached token (4·L·H_q·d for GQA), the slope in K.
double attention_flops_per_token_per_cached(const ModelSpec& m);

double weight_bytes(const ModelSpec& m, DType weights);

}  // namespace kappasim
