#include "models/llm/architecture.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace kappasim {

double bytes_per_element(DType t) {
  switch (t) {
    case DType::Fp32:
      return 4;
    case DType::Bf16:
      return 2;
    case DType::Fp16:
      return 2;
    case DType::Fp8:
      return 1;
    case DType::Int8:
      return 1;
    case DType::Int4:
      return 0.5;
    case DType::Nvfp4:
      return 0.5 + 1.0 / 16;  // E2M1 pairs + one E4M3 scale per 16 elements
    case DType::Mxfp4:
      return 0.5 + 1.0 / 32;  // E2M1 pairs + one E8M0 scale per 32 elements
  }
  return 0;
}

bool is_fp4_kv(DType t) { return t == DType::Nvfp4 || t == DType::Mxfp4; }

const std::vector<std::pair<const char*, DType>>& dtype_names() {
  static const std::vector<std::pair<const char*, DType>> n = {
      {"fp32", DType::Fp32},   {"bf16", DType::Bf16},  {"fp16", DType::Fp16},
      {"fp8", DType::Fp8},     {"int8", DType::Int8},  {"int4", DType::Int4},
      {"nvfp4", DType::Nvfp4}, {"mxfp4", DType::Mxfp4}};
  return n;
}

DType parse_dtype(const std::string& s, const std::string& what) {
  std::string all;
  std::vector<std::string> names;
  for (const auto& [n, t] : dtype_names()) {
    if (s == n) return t;
    all += (all.empty() ? "" : ", ") + std::string(n);
    names.emplace_back(n);
  }
  std::string near = nearest(s, names);
  throw InputError(what + ": unknown dtype '" + s + "'" +
                   (near.empty() ? "" : "; did you mean '" + near + "'?") + " (expected " + all +
                   ")");
}

const char* dtype_name(DType t) {
  for (const auto& [n, d] : dtype_names())
    if (d == t) return n;
  return "?";
}

void AttentionSpec::validate(const std::string& path) const {
  if (type == AttentionType::Gqa) {
    if (num_kv_heads > num_q_heads)
      throw InputError(path + ".num_kv_heads: " + std::to_string(num_kv_heads) +
                       " KV heads cannot exceed the " + std::to_string(num_q_heads) +
                       " query heads");
    if (num_q_heads % num_kv_heads != 0)
      throw InputError(path + ".num_kv_heads: query heads (" + std::to_string(num_q_heads) +
                       ") must be a multiple of KV heads (" + std::to_string(num_kv_heads) + ")");
    return;
  }
  // Issue 25: DeepSeek Sparse Attention needs all three indexer keys or none.
  if (index_topk > 0 || index_n_heads > 0 || index_head_dim > 0) {
    if (index_topk < 1)
      throw InputError(path +
                       ".index_topk: must be >= 1 token when the lightning indexer is "
                       "given (index_n_heads, index_head_dim), got " +
                       std::to_string(index_topk));
    if (index_n_heads < 1)
      throw InputError(path + ".index_n_heads: required (>= 1) with index_topk");
    if (index_head_dim < 1)
      throw InputError(path + ".index_head_dim: required (>= 1) with index_topk");
  }
}

void MlpSpec::validate(const std::string& path) const {
  if (type != MlpType::Moe) return;
  if (experts_per_token > num_experts)
    throw InputError(path + ".experts_per_token: top-" + std::to_string(experts_per_token) +
                     " cannot exceed the " + std::to_string(num_experts) + " experts");
  if (first_dense_layers > 0 && intermediate_size <= 0)
    throw InputError(path + ".intermediate_size: required (> 0) when first_dense_layers > 0");
  if (moe_layer_step > 1 && intermediate_size <= 0)
    throw InputError(path +
                     ".intermediate_size: required (> 0) when moe_layer_step > 1 (the dense "
                     "layers between the MoE ones)");
  // Group-limited routing (issue 14).
  if (num_expert_groups > 0) {
    if (num_experts % num_expert_groups != 0)
      throw InputError(path + ".num_expert_groups: " + std::to_string(num_expert_groups) +
                       " does not divide the " + std::to_string(num_experts) + " experts");
    if (topk_groups < 1 || topk_groups > num_expert_groups)
      throw InputError(path + ".topk_groups: must be from 1 to num_expert_groups (" +
                       std::to_string(num_expert_groups) + "), got " + std::to_string(topk_groups));
    if (static_cast<long long>(topk_groups) * (num_experts / num_expert_groups) < experts_per_token)
      throw InputError(path + ".topk_groups: " + std::to_string(topk_groups) +
                       " groups hold fewer experts than the top-" +
                       std::to_string(experts_per_token));
  } else if (topk_groups != 0) {
    throw InputError(path + ".topk_groups: only with num_expert_groups > 0");
  }
}

void LinearAttentionSpec::validate(const std::string& path) const {
  if (type == LinearAttentionType::GatedDeltaNet) return;
  // KDA and lightning attention: one set of heads for q, k and v (num_heads of head_dim).
  if (num_key_heads != num_value_heads || key_head_dim != value_head_dim)
    throw InputError(path + ".num_value_heads: " +
                     (type == LinearAttentionType::Kda ? std::string("kda") : "lightning") +
                     " layers have one set of heads for q, k and v (num_key_heads " +
                     std::to_string(num_key_heads) + ", num_value_heads " +
                     std::to_string(num_value_heads) + ", key_head_dim " +
                     std::to_string(key_head_dim) + ", value_head_dim " +
                     std::to_string(value_head_dim) + ")");
  if (type == LinearAttentionType::Lightning && conv_kernel > 0)
    throw InputError(path + ".conv_kernel: lightning attention has no short convolution");
}

void ModelSpec::validate(const std::string& path) const {
  if (mlp.first_dense_layers > num_layers)
    throw InputError(path + ".mlp.first_dense_layers: " + std::to_string(mlp.first_dense_layers) +
                     " exceeds num_layers " + std::to_string(num_layers));
  // ---- issue 25: layer pattern ----
  if (layer_pattern.empty()) {
    if (sliding_window > 0)
      throw InputError(path +
                       ".sliding_window: given, but no layer_pattern says which layers "
                       "slide (one letter per layer: F full, S sliding, L linear)");
    if (attention_chunk_size > 0)
      throw InputError(path +
                       ".attention_chunk_size: given, but no layer_pattern says which layers "
                       "are chunked (one letter per layer: F full, C chunked)");
    return;
  }
  std::size_t n = 0;
  for (char c : layer_pattern) {
    if (c == ' ') continue;
    if (c != 'F' && c != 'S' && c != 'L' && c != 'C')
      throw InputError(path + ".layer_pattern: unexpected letter '" + std::string(1, c) +
                       "' (expected F full, S sliding-window, L linear, C chunked attention, one "
                       "per layer)");
    ++n;
  }
  if (n != static_cast<std::size_t>(num_layers))
    throw InputError(path + ".layer_pattern: " + std::to_string(n) +
                     " layers given, but num_layers is " + std::to_string(num_layers) +
                     " (one letter per layer)");
  // Issue 25: MLA full layers beside linear ones (Kimi-Linear); MLA with sliding or chunked
  // layers is not modelled.
  if (attention.type == AttentionType::Mla &&
      (count_layers(LayerKind::Sliding) > 0 || count_layers(LayerKind::Chunked) > 0))
    throw InputError(path +
                     ".layer_pattern: S and C layers only with attention type gqa (an MLA "
                     "model with sliding or chunked layers is not modelled)");
  if (attention.type == AttentionType::Mla && attention.sparse())
    throw InputError(path +
                     ".layer_pattern: a sparse-attention (index_topk) model with a layer "
                     "pattern is not modelled");
  const bool sliding = count_layers(LayerKind::Sliding) > 0;
  if (sliding && sliding_window < 1)
    throw InputError(path +
                     ".sliding_window: required (>= 1 token) when layer_pattern has S layers");
  if (!sliding && sliding_window > 0)
    throw InputError(path + ".sliding_window: given, but layer_pattern has no S layer");
  if (max_position_embeddings > 0 && sliding_window > max_position_embeddings)
    throw InputError(path + ".sliding_window: " + std::to_string(sliding_window) +
                     " tokens exceeds max_position_embeddings " +
                     std::to_string(max_position_embeddings) +
                     " (the window cannot be longer than "
                     "the context)");
  const bool chunked = count_layers(LayerKind::Chunked) > 0;
  if (chunked && attention_chunk_size < 1)
    throw InputError(path +
                     ".attention_chunk_size: required (>= 1 token) when layer_pattern has "
                     "C layers, got " +
                     std::to_string(attention_chunk_size));
  if (!chunked && attention_chunk_size > 0)
    throw InputError(path + ".attention_chunk_size: given, but layer_pattern has no C layer");
  if (max_position_embeddings > 0 && attention_chunk_size > max_position_embeddings)
    throw InputError(path + ".attention_chunk_size: " + std::to_string(attention_chunk_size) +
                     " tokens exceeds max_position_embeddings " +
                     std::to_string(max_position_embeddings) +
                     " (the chunk cannot be longer than the context)");
  if (count_layers(LayerKind::Full) == 0)
    throw InputError(path +
                     ".layer_pattern: at least one F (full attention) layer is needed: the "
                     "KV per token of a model without one is zero and κ_M is unbounded");
}

std::vector<LayerKind> ModelSpec::layer_kinds() const {
  std::vector<LayerKind> k;
  if (layer_pattern.empty()) return std::vector<LayerKind>(num_layers, LayerKind::Full);
  for (char c : layer_pattern) {
    if (c == 'S')
      k.push_back(LayerKind::Sliding);
    else if (c == 'L')
      k.push_back(LayerKind::Linear);
    else if (c == 'C')
      k.push_back(LayerKind::Chunked);
    else if (c == 'F')
      k.push_back(LayerKind::Full);
  }
  return k;
}

int ModelSpec::count_layers(LayerKind kind) const {
  if (layer_pattern.empty()) return kind == LayerKind::Full ? num_layers : 0;
  const char letter = kind == LayerKind::Sliding   ? 'S'
                      : kind == LayerKind::Linear  ? 'L'
                      : kind == LayerKind::Chunked ? 'C'
                                                   : 'F';
  return static_cast<int>(std::count(layer_pattern.begin(), layer_pattern.end(), letter));
}

bool ModelSpec::has_layer_pattern() const { return count_layers(LayerKind::Full) != num_layers; }

LayerKind ModelSpec::layer_kind(int layer) const {
  if (layer_pattern.empty()) return LayerKind::Full;
  int i = 0;
  for (char c : layer_pattern) {
    if (c == ' ') continue;
    if (i++ != layer) continue;
    return c == 'S'   ? LayerKind::Sliding
           : c == 'L' ? LayerKind::Linear
           : c == 'C' ? LayerKind::Chunked
                      : LayerKind::Full;
  }
  throw std::logic_error("ModelSpec::layer_kind: layer " + std::to_string(layer) + " out of range");
}

bool ModelSpec::is_moe_layer(int layer) const {
  if (mlp.type != MlpType::Moe || layer < mlp.first_dense_layers) return false;
  return mlp.moe_layer_step <= 1 || (layer + 1) % mlp.moe_layer_step == 0;
}

int ModelSpec::dense_mlp_layers() const {
  int n = 0;
  for (int l = 0; l < num_layers; ++l) n += is_moe_layer(l) ? 0 : 1;
  return n;
}

// ---- parameters ----------------------------------------------------------------------------

double attention_params_per_layer(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden_size);
  const AttentionSpec& a = m.attention;
  const double H = a.num_q_heads;
  if (a.type == AttentionType::Gqa) {
    const double d = a.head_dim;
    double p = h * H * d                     // q_proj
               + 2 * h * a.num_kv_heads * d  // k_proj, v_proj
               + H * d * h;                  // o_proj
    if (a.qk_norm) p += 2 * d;               // q_norm, k_norm (per-head RMSNorm weights)
    if (a.output_gate) p += h * H * d;       // q_proj's second half: the output gate
    if (a.attention_sinks) p += H;           // one sink logit per head
    return p;
  }
  const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  double p = 0;
  if (a.q_lora_rank > 0) {
    p += h * a.q_lora_rank + a.q_lora_rank               // q_a_proj + q_a_layernorm
         + static_cast<double>(a.q_lora_rank) * H * qk;  // q_b_proj
  } else {
    p += h * H * qk;  // q_proj
  }
  p += h * (a.kv_lora_rank + a.qk_rope_head_dim)  // kv_a_proj_with_mqa
       + a.kv_lora_rank                           // kv_a_layernorm
       + static_cast<double>(a.kv_lora_rank) * H * (a.qk_nope_head_dim + a.v_head_dim)  // kv_b
       + H * a.v_head_dim * h;                                                          // o_proj
  if (a.sparse()) {
    // DeepSeek-V3.2 lightning indexer (inference/model.py Indexer): wq_b from the query latent
    // (q_lora_rank, or h without one) to index_n_heads × index_head_dim, wk h → index_head_dim,
    // k_norm (LayerNorm weight + bias), weights_proj h → index_n_heads.
    const double HI = a.index_n_heads, dI = a.index_head_dim;
    const double q_in = a.q_lora_rank > 0 ? a.q_lora_rank : h;
    p += q_in * HI * dI + h * dI + 2 * dI + h * HI;
  }
  return p;
}

// One Gated DeltaNet layer (Qwen3-Next): in_proj_qkvz (q, k: key heads × key dim; v, z: value
// heads × value dim), in_proj_ba (β and α per value head), the depthwise causal conv over q, k, v,
// A_log and dt_bias per value head, the gated RMSNorm over value dim, out_proj.
// One KDA layer (Kimi-Linear, vLLM kimi_linear KimiDeltaAttention), P = heads × head_dim:
// q_proj, k_proj, v_proj h → P each; q/k/v_conv1d (depthwise, P × kernel each); the low-rank
// forget gate f_a_proj h → d, f_b_proj d → P, dt_bias P, A_log per head; b_proj h → heads; the
// low-rank output gate g_a_proj h → d, g_b_proj d → P; o_norm d; o_proj P → h.
// One lightning-attention layer (MiniMax, vLLM MiniMaxText01LinearAttention), P = heads ×
// head_dim: qkv_proj h → 3·P, output_gate h → P, norm P, out_proj P → h.
double linear_attention_params_per_layer(const ModelSpec& m) {
  const LinearAttentionSpec& l = m.linear;
  const double h = static_cast<double>(m.hidden_size);
  if (l.type == LinearAttentionType::Kda) {
    const double d = l.key_head_dim, heads = l.num_key_heads, P = heads * d;
    return 3 * h * P                // q_proj, k_proj, v_proj
           + 3 * P * l.conv_kernel  // q/k/v_conv1d
           + h * d + d * P + P      // f_a_proj, f_b_proj, dt_bias
           + heads                  // A_log
           + h * heads              // b_proj
           + h * d + d * P          // g_a_proj, g_b_proj
           + d                      // o_norm
           + P * h;                 // o_proj
  }
  if (l.type == LinearAttentionType::Lightning) {
    const double P = static_cast<double>(l.num_key_heads) * l.key_head_dim;
    return 3 * h * P + h * P + P + P * h;  // qkv_proj, output_gate, norm, out_proj
  }
  const double qk = static_cast<double>(l.num_key_heads) * l.key_head_dim;
  const double v = static_cast<double>(l.num_value_heads) * l.value_head_dim;
  return h * (2 * qk + 2 * v)            // in_proj_qkvz
         + h * 2.0 * l.num_value_heads   // in_proj_ba
         + (2 * qk + v) * l.conv_kernel  // conv1d (depthwise)
         + 2.0 * l.num_value_heads       // A_log, dt_bias
         + l.value_head_dim              // norm
         + v * h;                        // out_proj
}
namespace {
bool is_moe_layer(const ModelSpec& m, int layer) { return m.is_moe_layer(layer); }
double swiglu(double h, double inter) { return 3 * h * inter; }
}  // namespace

double mlp_active_params_per_layer(const ModelSpec& m, int layer) {
  const double h = static_cast<double>(m.hidden_size);
  if (!is_moe_layer(m, layer)) return swiglu(h, static_cast<double>(m.mlp.intermediate_size));
  const double e = swiglu(h, static_cast<double>(m.mlp.moe_intermediate_size));
  return (m.mlp.experts_per_token + m.mlp.num_shared_experts) * e + h * m.mlp.num_experts;
}

double ParamCounts::total() const {
  return embedding + lm_head + attention + mlp_dense + mlp_experts_total + router + norms;
}
double ParamCounts::active() const {
  return embedding + lm_head + attention + mlp_dense + mlp_experts_active + router + norms;
}
double ParamCounts::active_matmul(bool with_lm_head) const {
  // The LM head is a matmul even when tied to the embedding table.
  double head = with_lm_head ? (lm_head > 0 ? lm_head : embedding) : 0;
  return attention + mlp_dense + mlp_experts_active + router + head;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden_size);
  c.embedding = static_cast<double>(m.vocab_size) * h;
  c.lm_head = m.tie_word_embeddings ? 0 : c.embedding;
  const int linear_layers = m.count_layers(LayerKind::Linear);
  c.attention = (m.num_layers - linear_layers) * attention_params_per_layer(m) +
                linear_layers * (linear_layers ? linear_attention_params_per_layer(m) : 0.0);
  c.norms = (2.0 * m.num_layers + 1) * h;
  for (int l = 0; l < m.num_layers; ++l) {
    if (!is_moe_layer(m, l)) {
      c.mlp_dense += swiglu(h, static_cast<double>(m.mlp.intermediate_size));
      continue;
    }
    const double e = swiglu(h, static_cast<double>(m.mlp.moe_intermediate_size));
    c.mlp_experts_total += (m.mlp.num_experts + m.mlp.num_shared_experts) * e;
    c.mlp_experts_active += (m.mlp.experts_per_token + m.mlp.num_shared_experts) * e;
    c.router += h * m.mlp.num_experts;
  }
  return c;
}

double weight_bytes(const ModelSpec& m, DType weights) {
  return count_params(m).total() * bytes_per_element(weights);
}

// ---- KV ------------------------------------------------------------------------------------

namespace {
double kv_elements_per_token_per_layer(const ModelSpec& m) {
  const AttentionSpec& a = m.attention;
  return a.type == AttentionType::Gqa ? 2.0 * a.num_kv_heads * a.head_dim
                                      : static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim);
}
double linear_state_elements(const ModelSpec& m, double value_heads_share) {
  const LinearAttentionSpec& l = m.linear;
  const double recurrent = l.num_value_heads * value_heads_share * l.key_head_dim *
                           static_cast<double>(l.value_head_dim);
  const double conv_channels =
      (2.0 * l.num_key_heads * l.key_head_dim + l.num_value_heads * l.value_head_dim) *
      value_heads_share;
  if (l.type == LinearAttentionType::Lightning) return recurrent;  // no convolution
  return recurrent + (l.conv_kernel - 1) * conv_channels;
}
// Σ over layers of the tokens each keeps for a prefix of K (K, min(K, W), K mod C, or 0 for
// linear).
double kv_tokens_kept(const ModelSpec& m, double K) {
  const double W = m.sliding_window;
  double kept =
      m.count_layers(LayerKind::Full) * K + m.count_layers(LayerKind::Sliding) * std::min(K, W);
  if (const int chunked = m.count_layers(LayerKind::Chunked); chunked > 0) {
    const double C = m.attention_chunk_size;
    kept += chunked * (K - std::floor(K / C) * C);  // the tokens of the chunk K falls in
  }
  return kept;
}
// `layers` attention layers' bytes for one token each, whole model's heads: the K and V (or MLA
// latent) in the KV dtype, plus DeepSeek Sparse Attention's indexer key (its own FP8 format).
double attention_layers_bytes(const ModelSpec& m, DType kv, double layers) {
  return layers * kv_elements_per_token_per_layer(m) * bytes_per_element(kv) +
         layers * indexer_key_bytes_per_token_per_layer(m);
}
}  // namespace

double indexer_key_bytes_per_token_per_layer(const ModelSpec& m) {
  const AttentionSpec& a = m.attention;
  if (a.type != AttentionType::Mla || !a.sparse()) return 0;
  constexpr int kIndexerQuantBlock = 128;  // vLLM / DeepGEMM: one FP32 scale per 128 values
  const double scales = std::ceil(static_cast<double>(a.index_head_dim) / kIndexerQuantBlock);
  return a.index_head_dim * 1.0 + scales * 4.0;
}

double kv_bytes_per_token(const ModelSpec& m, DType kv) {
  return attention_layers_bytes(m, kv, m.count_layers(LayerKind::Full));
}

double linear_state_bytes_per_layer(const ModelSpec& m, DType kv) {
  return linear_state_elements(m, 1.0) * bytes_per_element(kv);
}

double kv_bytes_for_prefix(const ModelSpec& m, DType kv, double K) {
  if (!m.has_layer_pattern()) return K * kv_bytes_per_token(m, kv);
  return attention_layers_bytes(m, kv, kv_tokens_kept(m, K)) +
         m.count_layers(LayerKind::Linear) * linear_state_bytes_per_layer(m, kv);
}

double kv_bytes_for_prefix_per_gpu(const ModelSpec& m, DType kv, int tp, double K) {
  if (!m.has_layer_pattern()) return K * kv_bytes_per_token_per_gpu(m, kv, tp);
  const double per_layer_token = kv_bytes_per_token_per_layer_per_gpu(m, kv, tp);
  double bytes = kv_tokens_kept(m, K) * per_layer_token;
  const int linear_layers = m.count_layers(LayerKind::Linear);
  if (linear_layers > 0) {
    if (m.linear.num_value_heads % tp != 0 || m.linear.num_key_heads % tp != 0)
      throw InputError("tensor parallelism " + std::to_string(tp) +
                       " does not divide the linear-attention heads of " + m.name + " (" +
                       std::to_string(m.linear.num_key_heads) + " key, " +
                       std::to_string(m.linear.num_value_heads) + " value)");
    bytes += linear_layers * linear_state_elements(m, 1.0 / tp) * bytes_per_element(kv);
  }
  return bytes;
}

double kv_heads_per_gpu(const ModelSpec& m, int tp) {
  if (tp < 1) throw InputError("tensor parallelism must be at least 1, got " + std::to_string(tp));
  const AttentionSpec& a = m.attention;
  if (a.num_q_heads % tp != 0)
    throw InputError("tensor parallelism " + std::to_string(tp) + " does not divide the " +
                     std::to_string(a.num_q_heads) + " query heads of " + m.name);
  if (a.type == AttentionType::Mla) return 1;  // the latent is whole on every GPU
  if (tp >= a.num_kv_heads) {
    if (tp % a.num_kv_heads != 0)
      throw InputError("tensor parallelism " + std::to_string(tp) + " is not a multiple of the " +
                       std::to_string(a.num_kv_heads) + " KV heads of " + m.name);
    return 1;  // each KV head replicated tp / kv_heads times
  }
  if (a.num_kv_heads % tp != 0)
    throw InputError("tensor parallelism " + std::to_string(tp) + " does not divide the " +
                     std::to_string(a.num_kv_heads) + " KV heads of " + m.name);
  return static_cast<double>(a.num_kv_heads / tp);
}

double kv_bytes_per_token_per_gpu(const ModelSpec& m, DType kv, int tp) {
  const AttentionSpec& a = m.attention;
  if (a.type == AttentionType::Mla) {
    kv_heads_per_gpu(m, tp);  // validates tp
    return kv_bytes_per_token(m, kv);
  }
  return m.count_layers(LayerKind::Full) * 2.0 * kv_heads_per_gpu(m, tp) * a.head_dim *
         bytes_per_element(kv);
}

double kv_bytes_per_token_per_layer_per_gpu(const ModelSpec& m, DType kv, int tp) {
  const AttentionSpec& a = m.attention;
  const double heads = kv_heads_per_gpu(m, tp);  // validates tp
  if (a.type == AttentionType::Mla) return attention_layers_bytes(m, kv, 1);
  return 2.0 * heads * a.head_dim * bytes_per_element(kv);
}

namespace {
int unified_kv_layers(const ModelSpec& m) {
  if (const int linear = m.count_layers(LayerKind::Linear); linear > 0)
    throw InputError(
        "model.layer_pattern: model '" + m.name + "' has " + std::to_string(linear) +
        " linear-attention layers; a unified KV cache (vLLM with a KV connector, which turns "
        "the hybrid KV cache manager off) cannot hold their per-request state beside per-token "
        "KV: vLLM raises ValueError when unifying attention and Mamba-style layers "
        "(kv_cache_utils.unify_hybrid_kv_cache_specs)");
  return m.num_layers;  // every layer is full, sliding or chunked, each keeping every token
}
}  // namespace

double kv_bytes_per_token_unified(const ModelSpec& m, DType kv) {
  if (!m.has_layer_pattern()) return kv_bytes_per_token(m, kv);
  return attention_layers_bytes(m, kv, unified_kv_layers(m));
}

double kv_bytes_per_token_unified_per_gpu(const ModelSpec& m, DType kv, int tp) {
  if (!m.has_layer_pattern()) return kv_bytes_per_token_per_gpu(m, kv, tp);
  return unified_kv_layers(m) * kv_bytes_per_token_per_layer_per_gpu(m, kv, tp);
}

HybridKv hybrid_kv_per_gpu(const ModelSpec& m, DType kv, int tp) {
  HybridKv h;
  if (!m.has_layer_pattern()) {
    h.full_Bpt = kv_bytes_per_token_per_gpu(m, kv, tp);
    return h;
  }
  const double b = kv_bytes_per_token_per_layer_per_gpu(m, kv, tp);
  h.full_Bpt = m.count_layers(LayerKind::Full) * b;
  h.sliding_Bpt = m.count_layers(LayerKind::Sliding) * b;
  h.chunked_Bpt = m.count_layers(LayerKind::Chunked) * b;
  if (h.sliding_Bpt > 0) h.window = m.sliding_window;
  if (h.chunked_Bpt > 0) h.chunk = m.attention_chunk_size;
  // The state: what the prefix leaves at K = 0 (no attention token), heads split tp ways.
  h.state_B = kv_bytes_for_prefix_per_gpu(m, kv, tp, 0.0);
  if (!(h.full_Bpt > 0))
    throw InputError("model.layer_pattern: model '" + m.name +
                     "' has no full-attention layer; a hybrid-aware KV cache is modelled with "
                     "the full layers' blocks as the pool's unit");
  return h;
}

double HybridKv::bytes(double lo, double hi, double K) const {
  if (!(hi > lo)) return 0;
  const auto overlap = [&](double from) { return std::max(0.0, hi - std::max(lo, from)); };
  double b = full_Bpt * (hi - lo);
  if (sliding_Bpt > 0) b += sliding_Bpt * overlap(K - window);
  if (chunked_Bpt > 0) b += chunked_Bpt * overlap(std::floor(K / chunk) * chunk);
  if (hi >= K) b += state_B;
  return b;
}

double HybridKv::pool_bytes(double n, int block_tokens) const {
  if (!(n > 0)) return 0;
  const double bt = block_tokens;
  const double blocks = std::ceil(n / bt);
  double bytes = full_Bpt * blocks * bt + state_B;
  if (sliding_Bpt > 0)
    bytes += sliding_Bpt * (blocks - std::floor(std::max(0.0, n - window + 1) / bt)) * bt;
  if (chunked_Bpt > 0)
    bytes += chunked_Bpt * (blocks - std::floor(std::floor(n / chunk) * chunk / bt)) * bt;
  return bytes;
}

// ---- FLOPs ---------------------------------------------------------------------------------

double linear_flops_per_token(const ModelSpec& m, bool with_lm_head) {
  return 2.0 * count_params(m).active_matmul(with_lm_head);
}

double attention_flops_per_token_per_cached(const ModelSpec& m) {
  const AttentionSpec& a = m.attention;
  const double dqk =
      a.type == AttentionType::Gqa ? a.head_dim : a.qk_nope_head_dim + a.qk_rope_head_dim;
  const double dv = a.type == AttentionType::Gqa ? a.head_dim : a.v_head_dim;
  return m.count_layers(LayerKind::Full) * 2.0 * a.num_q_heads * (dqk + dv);
}

double chunked_attention_pairs(double C, double K, double T) {
  // f(n): the pairs of the first n tokens, Σ_{q < n} (q mod C + 1): each whole chunk gives
  // 1 + 2 + ... + C, the partial one 1 + ... + r.
  const auto f = [C](double n) {
    const double chunks = std::floor(n / C), r = n - chunks * C;
    return chunks * C * (C + 1) / 2 + r * (r + 1) / 2;
  };
  return f(K + T) - f(K);
}

double indexer_flops(const ModelSpec& m, double K, double T) {
  const AttentionSpec& a = m.attention;
  if (a.type != AttentionType::Mla || !a.sparse()) return 0;
  const double pairs = T * K + T * (T + 1) / 2;  // causal: every earlier token is scored
  return pairs * m.num_layers * 2.0 * a.index_n_heads * a.index_head_dim;
}

double attention_flops_layer(const ModelSpec& m, LayerKind kind, double K, double T) {
  if (kind == LayerKind::Linear) return 0;
  if (!m.has_layer_pattern()) return attention_flops(m, K, T) / m.num_layers;  // every layer alike
  // A pattern with MLA has F and L layers only (ModelSpec::validate): the F layers share it.
  if (m.attention.type == AttentionType::Mla)
    return attention_flops(m, K, T) / m.count_layers(LayerKind::Full);
  if (kind == LayerKind::Full)
    return (T * K + T * (T + 1) / 2) * attention_flops_per_token_per_cached(m) /
           m.count_layers(LayerKind::Full);
  const AttentionSpec& a = m.attention;
  if (kind == LayerKind::Chunked)
    return chunked_attention_pairs(m.attention_chunk_size, K, T) * 2.0 * a.num_q_heads *
           (2.0 * a.head_dim);
  // Sliding: as in attention_flops, one layer.
  const double W = m.sliding_window;
  const double n1 = std::clamp(W - K, 0.0, T);
  const double sliding_pairs = n1 * K + n1 * (n1 + 1) / 2 + (T - n1) * W;
  return sliding_pairs * 2.0 * a.num_q_heads * (2.0 * a.head_dim);
}

namespace {
double mla_dense_flops(const ModelSpec& m, double K, double T, double L) {
  const AttentionSpec& a = m.attention;
  const double pairs = T * K + T * (T + 1) / 2;
  // MLA: the cheaper of the two ways a kernel library runs it (vLLM picks by query length).
  const double H = a.num_q_heads, r = a.kv_lora_rank;
  // Expanded: up-project the K cached latents to per-head K/V once (kv_b_proj), then ordinary
  // attention with d_qk = nope + rope, d_v = v.
  const double expanded = pairs * attention_flops_per_token_per_cached(m) +
                          K * L * 2.0 * r * H * (a.qk_nope_head_dim + a.v_head_dim);
  // Absorbed: attend in latent space (d_qk = r + rope, d_v = r); each new token's query is
  // multiplied into the latent by W_UK and its output back out by W_UV.
  const double absorbed = pairs * L * 2.0 * H * ((r + a.qk_rope_head_dim) + r) +
                          T * L * 2.0 * H * r * (a.qk_nope_head_dim + a.v_head_dim);
  return std::min(expanded, absorbed);
}
}  // namespace

double attention_flops(const ModelSpec& m, double K, double T) {
  // Causal: new token i (0-based) attends to the K cached tokens and to new tokens 0..i.
  const double pairs = T * K + T * (T + 1) / 2;
  const AttentionSpec& a = m.attention;
  if (m.has_layer_pattern() && a.type == AttentionType::Mla)  // F and L layers (Kimi-Linear)
    return mla_dense_flops(m, K, T, m.count_layers(LayerKind::Full));
  if (m.has_layer_pattern()) {
    // Issue 25. Full layers: `pairs` as above (the slope is over the F layers only). Sliding
    // layers: new token i sits at position p = K + i + 1 and attends to min(p, W) keys; for
    // p ≤ W that is p, beyond it W. Linear layers: no (query, key) pairs; their chunked
    // recurrence is linear in T and not counted here (as norms and activations are not).
    const double W = m.sliding_window;
    const double n1 = std::clamp(W - K, 0.0, T);  // new tokens whose position p ≤ W
    const double sliding_pairs = n1 * K + n1 * (n1 + 1) / 2 + (T - n1) * W;
    const double per_pair_layer =
        2.0 * a.num_q_heads * (2.0 * a.head_dim);  // QKᵀ and PV, per (query, key) and layer
    double flops = pairs * attention_flops_per_token_per_cached(m) +
                   m.count_layers(LayerKind::Sliding) * sliding_pairs * per_pair_layer;
    // Chunked layers: new token at 0-based position q attends to the keys of its chunk,
    // floor(q / C)·C to q.
    if (const int chunked = m.count_layers(LayerKind::Chunked); chunked > 0)
      flops += chunked * chunked_attention_pairs(m.attention_chunk_size, K, T) * per_pair_layer;
    return flops;
  }
  if (a.type == AttentionType::Gqa) return pairs * attention_flops_per_token_per_cached(m);
  if (a.sparse()) {
    // DeepSeek Sparse Attention runs MLA in its MQA (absorbed) mode (DeepSeek-V3.2-Exp report;
    // vLLM's FlashMLA sparse kernels take the latent cache, d_qk = r + rope, d_v = r): new token
    // i at position p = K + i + 1 attends to min(p, k) selected keys, k = index_topk; each
    // query and output is mapped through W_UK / W_UV. Plus the indexer, which scores all p.
    const double L = m.num_layers, H = a.num_q_heads, r = a.kv_lora_rank;
    const double k = a.index_topk;
    const double n1 = std::clamp(k - K, 0.0, T);  // new tokens with p ≤ k
    const double sparse_pairs = n1 * K + n1 * (n1 + 1) / 2 + (T - n1) * k;
    return sparse_pairs * L * 2.0 * H * ((r + a.qk_rope_head_dim) + r) +
           T * L * 2.0 * H * r * (a.qk_nope_head_dim + a.v_head_dim) + indexer_flops(m, K, T);
  }
  return mla_dense_flops(m, K, T, m.num_layers);
}

}  // namespace kappasim
