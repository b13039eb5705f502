#include "models/gpu/kernel_timing.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/random.hpp"
#include "core/shared_memo.hpp"

namespace kappasim {

namespace {

// vLLM's MoE routing kernels (fused_topk's ops.topk_softmax, ops.moe_align_block_size) write per
// token-expert pair an FP32 weight, an INT32 expert id and an INT32 source row; ids are INT32.
constexpr double kIndexBytes = 4;
constexpr double kRoutingPairBytes = 4 + 2 * kIndexBytes;

// ceil that forgives the rounding error of a quotient that should be whole.
double ceil_q(double x) { return std::ceil(x - 1e-9); }

// Names are taken by value and moved in (issue 24: a literal made a temporary string, then a
// copy of it).
Kernel gemm(std::string name, double M, double N, double K, double wb, double groups = 1) {
  Kernel k;
  k.name = std::move(name);
  k.kind = Kernel::Kind::Gemm;
  k.m = M;
  k.n = N;
  k.k = K;
  k.groups = groups;
  k.flops = 2 * M * N * K;
  // Weights once (every group's), activations in and out once.
  k.hbm_bytes = groups * N * K * wb + M * K * kActivationBytes + M * N * kActivationBytes;
  return k;
}

Kernel elementwise(std::string name, double bytes) {
  Kernel k;
  k.name = std::move(name);
  k.kind = Kernel::Kind::Elementwise;
  k.hbm_bytes = bytes;
  return k;
}

Kernel all_reduce(std::string name, double bytes, int tp) {
  Kernel k;
  k.name = std::move(name);
  k.kind = Kernel::Kind::AllReduce;
  k.comm_bytes = bytes;
  k.ranks = tp;
  return k;
}

// Fused residual add + RMSNorm (vLLM fused_add_rms_norm): reads x and the residual, writes both.
Kernel rms_norm(std::string name, double T, double h) {
  return elementwise(std::move(name), 4 * T * h * kActivationBytes);
}

bool is_moe_layer(const ModelSpec& m, int layer) { return m.is_moe_layer(layer); }

// The kernels that run once per sequence (over its own context): the KV dequantisation of an
// int8/int4 cache, then attention.
// Issue 25: a sliding-window layer (kind Sliding) attends to the last W keys of each query and
// reads (and dequantises) only those; a chunked layer (kind Chunked) attends within its chunk
// (vLLM splits each sequence into per-chunk virtual sequences); a linear-attention layer's
// recurrence is not modelled.
// What add_sequence_kernels needs that depends on the model, tp, KV dtype and layer kind only,
// not on the sequence: computed once per layer class and step (issue 23: a decode batch holds
// many sequences).
struct SequenceConstants {
  LayerKind kind = LayerKind::Full;
  double state = 0;  // Linear: this GPU's share of one layer's state
  double Hq = 0, dqk = 0, dv = 0, kv_heads = 0;
  double kv_bytes_per_token = 0;  // as attention reads the cache
};

SequenceConstants sequence_constants(const ModelSpec& m, int tp, DType kv_dtype, LayerKind kind) {
  SequenceConstants c;
  c.kind = kind;
  if (kind == LayerKind::Linear) {
    c.state = kv_bytes_for_prefix_per_gpu(m, kv_dtype, tp, 0.0) /
              std::max(1, m.count_layers(LayerKind::Linear));
    return c;
  }
  const AttentionSpec& a = m.attention;
  c.Hq = static_cast<double>(a.num_q_heads) / tp;
  if (a.type == AttentionType::Gqa) {
    c.dqk = c.dv = a.head_dim;
    c.kv_heads = kv_heads_per_gpu(m, tp);
  } else {
    c.dqk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    c.dv = a.v_head_dim;
    c.kv_heads = c.Hq;  // expanded MLA: per-head K and V, no GQA grouping
  }
  // The cache as attention reads it: fp8 as stored, int8/int4 after the dequant pass (BF16).
  const DType read_as =
      kv_dequant_mode(kv_dtype) == KvDequant::SeparatePass ? DType::Bf16 : kv_dtype;
  c.kv_bytes_per_token =
      m.layer_pattern.empty()
          ? kv_bytes_per_token_per_gpu(m, read_as, tp) / m.num_layers  // every layer alike
          : kv_bytes_per_token_per_layer_per_gpu(m, read_as, tp);
  return c;
}

// One sequence's attention kernel as batch_attention_time reads it (issue 24: the step model
// builds one per sequence and layer class; a Kernel carries a name string besides).
struct AttentionSeq {
  double m = 0, n = 0, k = 0, heads = 0, kv_heads = 0, flops = 0, hbm_bytes = 0;
};
// The per-sequence kernels of one sequence: an elementwise one before attention (the linear
// recurrence, else the KV dequantisation) and attention (none for a linear layer).
struct SequenceWork {
  const char* side_name = nullptr;  // the elementwise kernel's name, null when there is none
  double side_flops = 0, side_bytes = 0;
  bool has_attention = false;
  AttentionSeq at;
};

SequenceWork sequence_work(const ModelSpec& m, const SequenceConstants& c, double T, double K,
                           int tp, DType kv_dtype) {
  SequenceWork out;
  const LayerKind kind = c.kind;
  if (kind == LayerKind::Linear) {
    // Issue 25: the recurrence over T new tokens from the sequence's state, timed as a
    // memory-bound kernel: it reads and writes this GPU's share of the layer's state once (the
    // KV dtype, the accounting's assumption) and its q, k, v inputs and output in BF16. Its
    // FLOPs (≈ 4·H_v·d_k·d_v per token for the state update and read-out, the chunked form's
    // intra-chunk terms more) are recorded, not charged: an assumption (docs/accounting.md).
    const LinearAttentionSpec& l = m.linear;
    const double state = c.state;
    const double io =
        T * (2.0 * l.num_key_heads * l.key_head_dim + 2.0 * l.num_value_heads * l.value_head_dim) /
        tp * kActivationBytes;
    out.side_name = "linear_recurrence";
    out.side_bytes = 2 * state + io;
    out.side_flops = 4.0 * T * l.num_value_heads / tp * l.key_head_dim * l.value_head_dim;
    return out;
  }
  const double Hq = c.Hq, dqk = c.dqk, dv = c.dv, kv_heads = c.kv_heads;
  const double ab = kActivationBytes;
  const bool sliding = kind == LayerKind::Sliding;
  const bool chunked = kind == LayerKind::Chunked;
  const double W = m.sliding_window;
  const double C = m.attention_chunk_size;
  // A chunked layer's keys before the first new token: those of the chunk K falls in.
  const double K_chunk = chunked ? K - std::floor(K / C) * C : K;

  const double dq = kv_dequant_bytes(m, tp,
                                     sliding   ? std::min(K, W)
                                     : chunked ? K_chunk
                                               : K,
                                     kv_dtype);
  if (dq > 0) {
    out.side_name = "kv_dequant";
    out.side_bytes = dq;
  }

  out.has_attention = true;
  AttentionSeq& at = out.at;
  at.m = T;
  at.n = sliding ? std::min(K, W) + T : chunked ? std::min(K_chunk + T, C) : K + T;
  at.k = dqk;
  at.heads = Hq;
  at.kv_heads = kv_heads;
  at.flops = attention_flops_layer(m, kind, K, T) / tp;
  // KV of this GPU's heads, read once per query tile: tile i (of n) reads the K cached tokens
  // and the new tokens up to its last row (causal). Query heads of one GQA group share the read
  // (L2). Plus Q in and O out. A sliding layer's tile i reads the min(K + i·M, W) keys before
  // its first row (FlashAttention skips KV tiles wholly outside the window) and its own rows.
  const double n_tiles = ceil_q(T / kAttentionTileM);
  double kv_tokens_read = n_tiles * K + kAttentionTileM * n_tiles * (n_tiles - 1) / 2 + T;
  if (sliding) {
    // Tiles i < i0 start inside the window (K + i·M < W), the rest read W keys each.
    const double i0 = std::clamp(ceil_q((W - K) / kAttentionTileM), 0.0, n_tiles);
    kv_tokens_read = i0 * K + kAttentionTileM * i0 * (i0 - 1) / 2 + (n_tiles - i0) * W + T;
  }
  if (chunked) {
    // One virtual sequence per chunk the new tokens reach (vLLM
    // make_local_attention_virtual_batches): the first has K_chunk cached keys and
    // min(T, C − K_chunk) new tokens, each later one 0 cached and up to C new. Each reads as a
    // full-attention sequence of its own.
    const auto read = [](double cached, double t) {
      const double tiles = ceil_q(t / kAttentionTileM);
      return tiles * cached + kAttentionTileM * tiles * (tiles - 1) / 2 + t;
    };
    const double first = std::min(T, C - K_chunk);
    kv_tokens_read = read(K_chunk, first);
    const double rest = T - first, whole = std::floor(rest / C);
    kv_tokens_read += whole * read(0, C) + read(0, rest - whole * C);
  }
  at.hbm_bytes = kv_tokens_read * c.kv_bytes_per_token + T * Hq * (dqk + dv) * ab;
  return out;
}

void add_sequence_kernels(std::vector<Kernel>& out, const ModelSpec& m, const SequenceConstants& c,
                          double T, double K, int tp, DType kv_dtype) {
  const SequenceWork w = sequence_work(m, c, T, K, tp, kv_dtype);
  if (w.side_name) {
    Kernel& k = out.emplace_back();
    k.name = w.side_name;
    k.kind = Kernel::Kind::Elementwise;
    k.hbm_bytes = w.side_bytes;
    k.flops = w.side_flops;
    k.per_sequence = true;
  }
  if (w.has_attention) {
    Kernel& k = out.emplace_back();
    k.name = "attention";
    k.per_sequence = true;
    k.kind = Kernel::Kind::Attention;
    k.m = w.at.m;
    k.n = w.at.n;
    k.k = w.at.k;
    k.heads = w.at.heads;
    k.kv_heads = w.at.kv_heads;
    k.flops = w.at.flops;
    k.hbm_bytes = w.at.hbm_bytes;
  }
}

void add_sequence_kernels(std::vector<Kernel>& out, const ModelSpec& m, double T, double K, int tp,
                          DType kv_dtype, LayerKind kind) {
  add_sequence_kernels(out, m, sequence_constants(m, tp, kv_dtype, kind), T, K, tp, kv_dtype);
}

// `sequences`: with the per-sequence kernels (batch_step_time times those per sequence and asks
// for the rest alone).
void add_attention_block(std::vector<Kernel>& out, const ModelSpec& m, double T, double K, int tp,
                         double wb, DType kv_dtype, LayerKind kind, bool sequences) {
  const AttentionSpec& a = m.attention;
  const double h = static_cast<double>(m.hidden_size);
  const double Hq = static_cast<double>(a.num_q_heads) / tp;
  const double ab = kActivationBytes;
  if (kind == LayerKind::Linear) {
    // Issue 25: a linear-attention layer's projections (in, gates, out; each variant's
    // linear_attention_params_per_layer) as one GEMM of their weights split tp ways, then the
    // recurrence per sequence, then the all-reduce of its output.
    out.push_back(
        gemm("linear_attn_proj", T, linear_attention_params_per_layer(m) / h / tp, h, wb));
    if (sequences) add_sequence_kernels(out, m, T, K, tp, kv_dtype, kind);
    if (tp > 1) out.push_back(all_reduce("attn_all_reduce", T * h * ab, tp));
    return;
  }
  double dv = 0;
  if (a.type == AttentionType::Gqa) {
    const double d = a.head_dim;
    const double Hkv = kv_heads_per_gpu(m, tp);
    dv = d;
    out.push_back(gemm("qkv_proj", T, (Hq + 2 * Hkv) * d, h, wb));
    if (a.qk_norm) out.push_back(elementwise("qk_norm", 2 * T * (Hq + Hkv) * d * ab));
    out.push_back(elementwise("rotary_emb", 2 * T * (Hq + Hkv) * d * ab));
    out.push_back(elementwise("kv_cache_write", 2 * T * 2 * Hkv * d * ab));
  } else {
    const double rq = a.q_lora_rank, r = a.kv_lora_rank, dr = a.qk_rope_head_dim,
                 dn = a.qk_nope_head_dim;
    const double dqk = dn + dr;
    dv = a.v_head_dim;
    if (rq > 0) {
      // vLLM fuses q_a and kv_a into one replicated GEMM.
      out.push_back(gemm("qkv_a_proj", T, rq + r + dr, h, wb));
      out.push_back(elementwise("latent_norm", 2 * T * (rq + r) * ab));
      out.push_back(gemm("q_b_proj", T, Hq * dqk, rq, wb));
    } else {
      out.push_back(gemm("q_proj", T, Hq * dqk, h, wb));
      out.push_back(gemm("kv_a_proj", T, r + dr, h, wb));
      out.push_back(elementwise("latent_norm", 2 * T * r * ab));
    }
    out.push_back(gemm("kv_b_proj", T, Hq * (dn + dv), r, wb));
    out.push_back(elementwise("rotary_emb", 2 * T * (Hq * dr + dr) * ab));
    out.push_back(elementwise("kv_cache_write", 2 * T * (r + dr) * ab));
  }
  if (sequences) add_sequence_kernels(out, m, T, K, tp, kv_dtype, kind);
  out.push_back(gemm("o_proj", T, h, Hq * dv, wb));
  if (tp > 1) out.push_back(all_reduce("attn_all_reduce", T * h * ab, tp));
}

void add_mlp_block(std::vector<Kernel>& out, const ModelSpec& m, int layer, double T, int tp,
                   double wb) {
  const double h = static_cast<double>(m.hidden_size);
  const double ab = kActivationBytes;
  if (!is_moe_layer(m, layer)) {
    const double I = static_cast<double>(m.mlp.intermediate_size) / tp;
    out.push_back(gemm("gate_up_proj", T, 2 * I, h, wb));
    out.push_back(elementwise("silu_and_mul", 3 * T * I * ab));
    out.push_back(gemm("down_proj", T, h, I, wb));
  } else {
    const MlpSpec& p = m.mlp;
    const double E = p.num_experts;
    const double I = static_cast<double>(p.moe_intermediate_size) / tp;
    const double rows = T * p.experts_per_token;  // token-expert pairs
    // Experts whose weights must be read: the expected distinct experts of T tokens' top-k.
    const double touched = expected_experts_touched(T, p.experts_per_token, E);
    // Router: replicated on every GPU (vLLM ReplicatedLinear).
    out.push_back(gemm("router", T, E, h, wb));
    // Routing: vLLM's fused_topk runs one fused CUDA kernel (ops.topk_softmax: softmax, top-k
    // and renormalisation over the T x E logits), writing each token-expert pair's FP32 weight,
    // INT32 expert id and INT32 source row.
    out.push_back(elementwise("moe_topk_softmax", T * E * ab + rows * kRoutingPairBytes));
    Kernel gu = gemm("experts_gate_up", rows, 2 * I, h, wb, touched);
    Kernel dn = gemm("experts_down", rows, h, I, wb, touched);
    for (Kernel* k : {&gu, &dn}) {
      k->moe_tokens = T;
      k->moe_experts = E;
    }
    // fused_experts sorts the pairs by expert and pads each expert's rows to BLOCK_SIZE_M
    // (ops.moe_align_block_size) before the first grouped GEMM: it reads the INT32 expert ids and
    // writes the sorted row ids (the padding entries, at most E·(BLOCK_SIZE_M − 1), left out).
    out.push_back(elementwise("experts_align_block_size", rows * 2 * kIndexBytes));
    out.push_back(std::move(gu));
    out.push_back(elementwise("experts_silu_and_mul", 3 * rows * I * ab));
    out.push_back(std::move(dn));
    out.push_back(elementwise("moe_sum", rows * h * ab + T * h * ab));
    if (p.num_shared_experts > 0) {
      const double S = p.num_shared_experts;
      out.push_back(gemm("shared_gate_up", T, 2 * S * I, h, wb));
      out.push_back(elementwise("shared_silu_and_mul", 3 * T * S * I * ab));
      out.push_back(gemm("shared_down", T, h, S * I, wb));
    }
  }
  if (tp > 1) out.push_back(all_reduce("mlp_all_reduce", T * h * ab, tp));
}

// Inserts the activation-quantisation kernel before each quantised GEMM (W8A8 / W4A4). The MoE
// router stays BF16 in vLLM (ReplicatedLinear without a quant method), so it gets none. The
// grouped gate_up GEMM's input is quantised once per token before the experts are dispatched
// (fused_moe quantises hidden_states, T rows, not the T·k token-expert pairs).
// Into `ks`, through `out` (cleared first; the two swap, so both keep their capacity).
void add_activation_quant(std::vector<Kernel>& ks, std::vector<Kernel>& out, const ModelSpec& m,
                          DType weights) {
  const double qb = activation_quant_bytes(weights);
  if (qb <= 0) return;
  out.clear();
  out.reserve(ks.size() * 2);
  for (Kernel& k : ks) {
    if (k.kind == Kernel::Kind::Gemm && k.name != "router") {
      double rows = k.m;
      if (k.name == "experts_gate_up" && m.mlp.experts_per_token > 0)
        rows = k.m / m.mlp.experts_per_token;
      out.push_back(elementwise(k.name + "_act_quant",
                                rows * k.k * (kActivationBytes + qb) + rows * kActQuantScaleBytes));
    }
    out.push_back(std::move(k));
  }
  ks.swap(out);
}

double safe_fraction(double f) {
  if (!(f > 0 && f <= 1)) throw std::logic_error("kernel_time: sm_fraction must be in (0, 1]");
  return f;
}

}  // namespace

const char* kernel_kind_name(Kernel::Kind k) {
  switch (k) {
    case Kernel::Kind::Gemm:
      return "gemm";
    case Kernel::Kind::Attention:
      return "attention";
    case Kernel::Kind::Elementwise:
      return "elementwise";
    case Kernel::Kind::AllReduce:
      return "all_reduce";
    case Kernel::Kind::Host:
      return "host";
  }
  return "?";
}

namespace {
void check_tokens(double T, double K) {
  if (!(T >= 1) || !std::isfinite(T))
    throw InputError("new tokens T must be at least 1, got " + std::to_string(T));
  if (!(K >= 0) || !std::isfinite(K))
    throw InputError("cached tokens K must not be negative, got " + std::to_string(K));
}
}  // namespace

void check_prefill_args(const ModelSpec& m, int tp, double T, double K) {
  check_tokens(T, K);
  if (tp < 1) throw InputError("tensor parallelism must be at least 1, got " + std::to_string(tp));
  kv_heads_per_gpu(m, tp);  // tp must divide the query heads and fit the KV heads
}

double activation_quant_bytes(DType weights) {
  switch (weights) {
    case DType::Fp8:
    case DType::Int8:
      return 1;
    case DType::Int4:
    case DType::Nvfp4:
      return 0.5 + 1.0 / 16;  // NVFP4: 4-bit values + one FP8 scale per 16
    case DType::Mxfp4:
      return 0.5 + 1.0 / 32;  // MXFP4: 4-bit values + one E8M0 scale per 32
    case DType::Fp32:
    case DType::Bf16:
    case DType::Fp16:
      return 0;
  }
  return 0;
}

KvDequant kv_dequant_mode(DType kv_dtype) {
  switch (kv_dtype) {
    case DType::Fp32:
    case DType::Bf16:
    case DType::Fp16:
      return KvDequant::Native;
    case DType::Fp8:
    case DType::Nvfp4:
    case DType::Mxfp4:
      return KvDequant::FusedDequant;
    case DType::Int8:
    case DType::Int4:
      return KvDequant::SeparatePass;
  }
  return KvDequant::Native;
}

bool kv_dtype_supported(const GpuSpec& gpu, DType kv_dtype) {
  return !is_fp4_kv(kv_dtype) || gpu.peak_flops.empty() || gpu.peak_flops.count("fp4");
}

void require_kv_dtype_support(const GpuSpec& gpu, DType kv_dtype, const std::string& key) {
  if (kv_dtype_supported(gpu, kv_dtype)) return;
  throw InputError(key + ": " + dtype_name(kv_dtype) + " KV needs a GPU that writes FP4 (one " +
                   "with an fp4 peak: Blackwell, Rubin, MI355X); GPU '" + gpu.name +
                   "' has none (use fp8, or a GPU with FP4)");
}

double kv_dequant_bytes(const ModelSpec& m, int tp, double cached_tokens, DType kv_dtype) {
  if (kv_dequant_mode(kv_dtype) != KvDequant::SeparatePass || !(cached_tokens > 0)) return 0;
  if (!m.layer_pattern.empty())  // one attention layer's bytes (issue 25)
    return cached_tokens * (kv_bytes_per_token_per_layer_per_gpu(m, kv_dtype, tp) +
                            kv_bytes_per_token_per_layer_per_gpu(m, DType::Bf16, tp));
  const double L = m.num_layers;
  return cached_tokens *
         (kv_bytes_per_token_per_gpu(m, kv_dtype, tp) +
          kv_bytes_per_token_per_gpu(m, DType::Bf16, tp)) /
         L;
}

namespace {
// layer_kernels, with the per-sequence kernels or without them (`sequences`).
void layer_kernels_into(std::vector<Kernel>& out, const ModelSpec& m, int layer, double T, double K,
                        int tp, DType weights, DType kv_dtype, bool sequences) {
  check_prefill_args(m, tp, T, K);
  if (layer < 0 || layer >= m.num_layers)
    throw std::logic_error("layer_kernels: layer " + std::to_string(layer) + " out of range");
  const double h = static_cast<double>(m.hidden_size);
  const double wb = bytes_per_element(weights);
  out.clear();
  out.push_back(rms_norm("input_norm", T, h));
  add_attention_block(out, m, T, K, tp, wb, kv_dtype, m.layer_kind(layer), sequences);
  out.push_back(rms_norm("post_attention_norm", T, h));
  add_mlp_block(out, m, layer, T, tp, wb);
  if (activation_quant_bytes(weights) > 0) {
    thread_local std::vector<Kernel> scratch;  // kept between calls (issue 24)
    add_activation_quant(out, scratch, m, weights);
  }
}
}  // namespace

void layer_kernels(std::vector<Kernel>& out, const ModelSpec& m, int layer, double T, double K,
                   int tp, DType weights, DType kv_dtype) {
  layer_kernels_into(out, m, layer, T, K, tp, weights, kv_dtype, true);
}

std::vector<Kernel> layer_kernels(const ModelSpec& m, int layer, double T, double K, int tp,
                                  DType weights, DType kv_dtype) {
  std::vector<Kernel> out;
  out.reserve(20);
  layer_kernels(out, m, layer, T, K, tp, weights, kv_dtype);
  return out;
}

namespace {
// prefill_head_kernels and prefill_tail_kernels into `ks` (cleared first; its capacity is
// reused: batch_step_time's, issue 24).
void head_kernels_into(std::vector<Kernel>& ks, const ModelSpec& m, double T) {
  const double h = static_cast<double>(m.hidden_size);
  ks.clear();
  ks.push_back(elementwise("embedding", 2 * T * h * kActivationBytes));
}

// The tail in two parts: the kernels over the T tokens, then those of the logits rows alone
// (batch_step_time keeps the two apart).
void tail_token_kernels_into(std::vector<Kernel>& ks, const ModelSpec& m, double T) {
  const double h = static_cast<double>(m.hidden_size);
  ks.clear();
  ks.push_back(rms_norm("final_norm", T, h));
}

void tail_logits_kernels_into(std::vector<Kernel>& ks, const ModelSpec& m, int tp, DType weights,
                              double logits_rows) {
  const double h = static_cast<double>(m.hidden_size);
  const double V = static_cast<double>(m.vocab_size) / tp;
  ks.clear();
  if (logits_rows > 0) ks.push_back(gemm("lm_head", logits_rows, V, h, bytes_per_element(weights)));
  Kernel& host = ks.emplace_back();
  host.name = "forward_overhead";
  host.kind = Kernel::Kind::Host;
}

void tail_kernels_into(std::vector<Kernel>& ks, const ModelSpec& m, double T, int tp, DType weights,
                       double logits_rows) {
  std::vector<Kernel> rest;
  tail_token_kernels_into(ks, m, T);
  tail_logits_kernels_into(rest, m, tp, weights, logits_rows);
  for (Kernel& k : rest) ks.push_back(std::move(k));
}
}  // namespace

std::vector<Kernel> prefill_head_kernels(const ModelSpec& m, double T) {
  std::vector<Kernel> ks;
  head_kernels_into(ks, m, T);
  return ks;
}

std::vector<Kernel> prefill_tail_kernels(const ModelSpec& m, double T, int tp, DType weights,
                                         double logits_rows) {
  std::vector<Kernel> ks;
  ks.reserve(3);
  tail_kernels_into(ks, m, T, tp, weights, logits_rows);
  return ks;
}

DType weight_dtype_for(const std::string& compute_dtype) {
  if (compute_dtype == "bf16") return DType::Bf16;
  if (compute_dtype == "fp16") return DType::Fp16;
  if (compute_dtype == "fp8") return DType::Fp8;
  if (compute_dtype == "int8") return DType::Int8;
  // NVFP4 weights (Blackwell FP4 GEMMs): E2M1 pairs + one FP8 scale per 16, 0.5625 B per weight
  // (issue 25: the scales were not counted before, 0.5 B).
  if (compute_dtype == "fp4") return DType::Nvfp4;
  if (compute_dtype == "tf32") return DType::Fp32;
  throw InputError("unknown compute precision '" + compute_dtype +
                   "' (expected tf32, fp16, bf16, fp8, fp4 or int8)");
}

double gemm_shape_efficiency(double M, double N, double K, double groups, int sms,
                             const GpuSpec::Tiles& tiles) {
  if (!(M > 0 && N > 0 && K > 0 && groups >= 1 && sms >= 1))
    throw std::logic_error("gemm_shape_efficiency: bad shape");
  const double rows_per_group = M / groups;
  // The library's tile by size: a short row tile when every group's rows fit in it.
  const double tm = rows_per_group <= tiles.gemm_small_m
                        ? std::min(tiles.gemm_small_m, tiles.gemm_m)
                        : tiles.gemm_m;
  const double tn = tiles.gemm_n;
  const double tiles_m = groups * ceil_q(rows_per_group / tm);
  const double tiles_n = ceil_q(N / tn);
  const double tile_eff = (M * N) / (tiles_m * tm * tiles_n * tn);
  double ctas = tiles_m * tiles_n;
  // Fewer tiles than SMs: split K to fill one wave, at most one K-tile per slice.
  if (ctas < sms) {
    const double k_tiles = std::max(1.0, ceil_q(K / tiles.gemm_k));
    ctas *= std::max(1.0, std::min(k_tiles, std::floor(sms / ctas)));
  }
  const double waves = ceil_q(ctas / sms);
  return tile_eff * ctas / (waves * sms);
}

double expected_experts_touched(double tokens, double top_k, double experts) {
  if (!(experts >= 1) || !(top_k >= 1) || top_k > experts || !(tokens >= 0))
    throw std::logic_error("expected_experts_touched: bad arguments");
  return experts * (1 - std::pow(1 - top_k / experts, tokens));
}

MoeBlock moe_block(double tokens, double experts, const GpuSpec::Tiles& tiles) {
  if (tokens <= experts) return {tiles.moe_small_m, tiles.moe_small_n};
  return {tiles.moe_m, tiles.moe_n};
}

namespace {
// E[ceil(n / b)] for n ~ Binomial(n_trials, p), summed over n within 12 standard deviations of
// the mean (the rest weighs below 1e-30), each term's probability from lgamma.
double binomial_expected_blocks_sum(long long n_trials, double p, double b);

// binomial_expected_blocks_sum, each answer kept (issue 24): the recompute chooser prices
// candidate token counts that repeat across requests, and each sum costs hundreds of exp().
// A pure function of its arguments, so a kept answer is the bits it would compute again. At
// most kKept answers (then the table starts afresh): ≤ about 2 MiB.
double binomial_expected_blocks(long long n_trials, double p, double b) {
  if (n_trials <= 0) return 0;
  if (p >= 1) return ceil_q(static_cast<double>(n_trials) / b);
  struct Key {
    long long n;
    double p, b;
    bool operator==(const Key& o) const { return n == o.n && p == o.p && b == o.b; }
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      std::uint64_t pb = 0, bb = 0;
      std::memcpy(&pb, &k.p, sizeof pb);
      std::memcpy(&bb, &k.b, sizeof bb);
      std::uint64_t h = static_cast<std::uint64_t>(k.n) * 0x9e3779b97f4a7c15ULL;
      h ^= pb + 0x7f4a7c159e3779b9ULL + (h << 6) + (h >> 2);
      h ^= bb + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
      return static_cast<std::size_t>(h);
    }
  };
  constexpr std::size_t kKept = std::size_t{1} << 15;
  thread_local std::unordered_map<Key, double, Hash> kept;
  const Key key{n_trials, p, b};
  if (const auto it = kept.find(key); it != kept.end()) return it->second;
  if (kept.size() >= kKept) kept.clear();
  // Then the answers of the processes forked with this one (a sweep's points, SharedMemo): of
  // `reproduce`'s 539,638 sums over 1,360 processes, 49,350 were distinct.
  SharedMemo::Key shared{
      {0x62696e6f6d69616cULL /* "binomial" */, static_cast<std::uint64_t>(n_trials), 0, 0}};
  std::memcpy(&shared.w[2], &p, sizeof p);
  std::memcpy(&shared.w[3], &b, sizeof b);
  double v = 0;
  if (!SharedMemo::find(shared, v)) {
    v = binomial_expected_blocks_sum(n_trials, p, b);
    SharedMemo::insert(shared, v);
  }
  kept.emplace(key, v);
  return v;
}

double binomial_expected_blocks_sum(long long n_trials, double p, double b) {
  const double N = static_cast<double>(n_trials);
  const double mean = N * p, sd = std::sqrt(N * p * (1 - p));
  const auto lo = static_cast<long long>(std::max(0.0, std::floor(mean - 12 * sd - 1)));
  const auto hi = static_cast<long long>(std::min(N, std::ceil(mean + 12 * sd + 1)));
  // lgamma(i + 1) for the whole numbers up to N, kept between calls (the same values: a
  // table of what std::lgamma returns; the recompute chooser asks for thousands of N).
  thread_local std::vector<double> lg;
  constexpr long long kTable = 1LL << 21;
  const bool table = n_trials < kTable;
  if (table && static_cast<long long>(lg.size()) <= n_trials) {
    const std::size_t from = lg.size();
    lg.resize(static_cast<std::size_t>(n_trials) + 1);
    for (std::size_t i = from; i < lg.size(); ++i) lg[i] = std::lgamma(static_cast<double>(i) + 1);
  }
  const auto lgf = [&](long long i) {
    return table ? lg[static_cast<std::size_t>(i)] : std::lgamma(static_cast<double>(i) + 1);
  };
  const double lp = std::log(p), lq = std::log1p(-p), lnf = lgf(n_trials);
  double sum = 0, weight = 0;
  for (long long x = lo; x <= hi; ++x) {
    const double X = static_cast<double>(x);
    const double pmf = std::exp(lnf - lgf(x) - lgf(n_trials - x) + X * lp + (N - X) * lq);
    sum += pmf * ceil_q(X / b);
    weight += pmf;
  }
  return sum / weight;
}
}  // namespace

double moe_row_blocks(double tokens, double top_k, double experts, double block_m) {
  if (!(experts >= 1) || !(top_k >= 1) || top_k > experts || !(tokens >= 0) || !(block_m >= 1))
    throw std::logic_error("moe_row_blocks: bad arguments");
  // A step's token count repeats from step to step: the last few answers are kept.
  struct Memo {
    double tokens, top_k, experts, block_m, blocks;
  };
  thread_local std::array<Memo, 8> memo{};
  thread_local std::size_t next = 0;
  for (const Memo& e : memo)
    if (e.block_m > 0 && e.tokens == tokens && e.top_k == top_k && e.experts == experts &&
        e.block_m == block_m)
      return e.blocks;
  const double p = top_k / experts;
  // A fractional token count (a mean over ranks) interpolates between its neighbours.
  const double lo = std::floor(tokens), f = tokens - lo;
  double per_expert = binomial_expected_blocks(static_cast<long long>(lo), p, block_m);
  if (f > 0)
    per_expert +=
        f * (binomial_expected_blocks(static_cast<long long>(lo) + 1, p, block_m) - per_expert);
  const double blocks = experts * per_expert;
  memo[next] = {tokens, top_k, experts, block_m, blocks};
  next = (next + 1) % memo.size();
  return blocks;
}

double moe_shape_efficiency(double rows, double N, double row_blocks, const MoeBlock& block,
                            int sms) {
  if (!(rows > 0 && N > 0 && row_blocks > 0 && block.m >= 1 && block.n >= 1 && sms >= 1))
    throw std::logic_error("moe_shape_efficiency: bad shape");
  const double blocks_m = row_blocks;
  const double blocks_n = ceil_q(N / block.n);
  const double tile_eff = (rows * N) / (blocks_m * block.m * blocks_n * block.n);
  const double ctas = blocks_m * blocks_n;
  const double waves = ceil_q(ctas / sms);
  return tile_eff * ctas / (waves * sms);
}

AttentionShape attention_shape(double T, double kv_tokens, double q_heads, double kv_heads) {
  if (!(T > 0 && q_heads > 0)) throw std::logic_error("attention_shape: bad shape");
  // One CTA per (query tile, head). FA3 packs the query heads of a GQA group into the rows of a
  // tile when that fills tiles better (hopper/heuristics.h: pack when the unpacked tile
  // efficiency is below 0.9 × the packed one).
  AttentionShape a;
  const double tiles = ceil_q(T / kAttentionTileM);
  a.ctas = tiles * q_heads;
  a.tile_eff = T / (tiles * kAttentionTileM);
  const double group = kv_heads > 0 ? q_heads / kv_heads : 1;
  if (group > 1) {
    const double rows = T * group;
    const double p_tiles = ceil_q(rows / kAttentionTileM);
    const double p_eff = rows / (p_tiles * kAttentionTileM);
    if (a.tile_eff < 0.9 * p_eff) {
      a.tile_eff = p_eff;
      a.ctas = p_tiles * kv_heads;
    }
  }
  a.kv_blocks = std::max(1.0, ceil_q(kv_tokens / kAttentionTileN));
  const double cached = std::max(0.0, kv_tokens - T);
  a.kv_counted = (cached + T / 2) / kAttentionTileN;
  a.kv_computed = cached / kAttentionTileN + (tiles + 1) / 2;
  return a;
}

double attention_length_factor(const AttentionShape& a, double splits, const GpuSpec& gpu) {
  if (!gpu.attention_reference_seqlen) return 1;
  return a.kv_counted / (a.kv_computed + splits * *gpu.attention_pipeline_tiles) /
         gpu.attention_reference_factor();
}

AttentionWaves attention_waves(double ctas, double max_kv_blocks, int sms) {
  if (!(ctas > 0 && sms >= 1)) throw std::logic_error("attention_waves: bad launch");
  // Fewer CTAs than SMs: split the KV sequence across CTAs (FA3 num_splits) to fill one wave.
  AttentionWaves w;
  w.ctas = ctas;
  if (ctas < sms) {
    const double splits = std::max(1.0, std::min(max_kv_blocks, std::floor(sms / ctas)));
    w.ctas *= splits;
  }
  w.waves = ceil_q(w.ctas / sms);
  return w;
}

double attention_shape_efficiency(double T, double kv_tokens, double q_heads, double kv_heads,
                                  int sms) {
  if (!(T > 0 && q_heads > 0 && sms >= 1))
    throw std::logic_error("attention_shape_efficiency: bad shape");
  const AttentionShape a = attention_shape(T, kv_tokens, q_heads, kv_heads);
  const AttentionWaves w = attention_waves(a.ctas, a.kv_blocks, sms);
  return a.tile_eff * w.ctas / (w.waves * sms);
}

namespace {
// What kernel_time looks up in the GPU spec by a precision's name, looked up once (issue 24: a
// step times dozens of kernels, each looked up its rates in std::map<std::string, double> by
// name); BatchStepParts keeps them. `dtype`: the compute precision, for GpuSpec::peak's error.
struct GpuRates {
  BatchStepParts::Rates v;
  const std::string* dtype = nullptr;
};

BatchStepParts::Rates gpu_rates(const GpuSpec& gpu, const std::string& compute_dtype) {
  BatchStepParts::Rates r;
  r.known = true;
  const auto peak = [&gpu](const std::string& dtype, bool& has, double& v) {
    const auto it = gpu.peak_flops.find(dtype);
    has = it != gpu.peak_flops.end();
    if (has) v = it->second;
  };
  peak(compute_dtype, r.has_peak, r.peak);
  static const std::string bf16 = "bf16", fp16 = "fp16";
  peak(bf16, r.has_attention_peak, r.attention_peak);
  if (!r.has_attention_peak) {
    r.attention_dtype = "fp16";
    peak(fp16, r.has_attention_peak, r.attention_peak);
  }
  r.gemm_efficiency = gpu.gemm_efficiency_for(compute_dtype);
  r.gemm_hbm_efficiency = gpu.gemm_hbm_efficiency_for(compute_dtype);
  return r;
}

GpuRates gpu_rates_of(const GpuSpec& gpu, const std::string& compute_dtype) {
  return GpuRates{gpu_rates(gpu, compute_dtype), &compute_dtype};
}

// The SMs free for compute at `frac` (a safe_fraction).
int free_sms(const GpuSpec& gpu, double frac) {
  return std::max(1, static_cast<int>(std::floor(gpu.sm_count * frac + 1e-9)));
}

// kernel_time after its checks (require_sim, safe_fraction) with the GPU's rates resolved.
KernelTime kernel_time_at(const Kernel& k, const GpuSpec& gpu, const GpuRates& r, double frac,
                          int sms, const AllReduceImpl& ar) {
  const double launch = *gpu.kernel_launch_overhead_s;
  KernelTime t;
  // A GEMM streams at its precision's fraction of HBM (hbm_efficiency_by_precision, else
  // hbm_efficiency; docs/compute-model.md); every other kernel at hbm_efficiency.
  const double hbm_eff =
      k.kind == Kernel::Kind::Gemm ? r.v.gemm_hbm_efficiency : *gpu.hbm_efficiency;
  t.memory_time_s = k.hbm_bytes / (gpu.hbm_bandwidth_Bps * hbm_eff);
  switch (k.kind) {
    case Kernel::Kind::Gemm: {
      double shape = 0;
      if (k.moe_tokens > 0) {
        const MoeBlock b = moe_block(k.moe_tokens, k.moe_experts, gpu.tiles);
        shape = moe_shape_efficiency(
            k.m, k.n, moe_row_blocks(k.moe_tokens, k.m / k.moe_tokens, k.moe_experts, b.m), b, sms);
      } else {
        shape = gemm_shape_efficiency(k.m, k.n, k.k, k.groups, sms, gpu.tiles);
      }
      t.efficiency = r.v.gemm_efficiency * shape;
      const double peak = r.v.has_peak ? r.v.peak : gpu.peak(*r.dtype);
      t.flops_time_s = k.flops / (peak * frac * t.efficiency);
      break;
    }
    case Kernel::Kind::Attention: {
      const AttentionShape a = attention_shape(k.m, k.n, k.heads, k.kv_heads);
      const AttentionWaves w = attention_waves(a.ctas, a.kv_blocks, sms);
      t.efficiency = *gpu.attention_efficiency * gpu.attention_paged_kv_efficiency.value_or(1) *
                     (a.tile_eff * w.ctas / (w.waves * sms)) *
                     attention_length_factor(a, w.ctas / a.ctas, gpu);
      const double peak =
          r.v.has_attention_peak ? r.v.attention_peak : gpu.peak(r.v.attention_dtype);
      t.flops_time_s = k.flops / (peak * frac * t.efficiency);
      break;
    }
    case Kernel::Kind::Elementwise:
      break;
    case Kernel::Kind::Host:
      // Host work between kernels: the GPU idles, no launch of its own.
      t.time_s = gpu.forward_overhead_s.value_or(0);
      return t;
    case Kernel::Kind::AllReduce: {
      if (k.ranks <= 1) break;
      t.time_s = all_reduce_seconds(gpu, k.ranks, k.comm_bytes, ar);
      return t;
    }
  }
  t.time_s = std::max(t.flops_time_s, t.memory_time_s) + launch;
  return t;
}
}  // namespace

KernelTime kernel_time(const Kernel& k, const GpuSpec& gpu, const std::string& compute_dtype,
                       double sm_fraction, const AllReduceImpl& ar) {
  gpu.require_sim("system.gpu");
  const double frac = safe_fraction(sm_fraction);
  return kernel_time_at(k, gpu, gpu_rates_of(gpu, compute_dtype), frac, free_sms(gpu, frac), ar);
}

namespace {
// batch_attention_time after its checks, over `seqs` (Kernels or AttentionSeqs: what it reads of
// each is the same fields).
template <class Seq>
KernelTime batch_attention_at(const std::vector<Seq>& seqs, const GpuSpec& gpu, const GpuRates& r,
                              double frac, int sms, DecodeAttention decode) {
  double ctas = 0, kv_blocks = 1, bytes = 0;
  thread_local std::vector<AttentionShape> shapes;  // kept between steps (issue 23)
  shapes.clear();
  shapes.reserve(seqs.size());
  // A decode token in TensorRT-LLM's generation kernel: bytes only (DecodeAttention).
  const auto streamed = [decode](const Seq& k) {
    return decode == DecodeAttention::MaskedMha && k.m <= 1;
  };
  for (const Seq& k : seqs) {
    if constexpr (std::is_same_v<Seq, Kernel>)
      if (k.kind != Kernel::Kind::Attention)
        throw std::logic_error("batch_attention_time: not an attention kernel: " + k.name);
    shapes.push_back(attention_shape(k.m, k.n, k.heads, k.kv_heads));
    bytes += k.hbm_bytes;
    if (streamed(k)) continue;
    ctas += shapes.back().ctas;
    kv_blocks = std::max(kv_blocks, shapes.back().kv_blocks);
  }
  const AttentionWaves w = attention_waves(std::max(ctas, 1.0), kv_blocks, sms);
  KernelTime t;
  // Each sequence's FLOPs at its tile efficiency and the launch's fill (the expression
  // kernel_time evaluates for one sequence, in the same order).
  const double base = *gpu.attention_efficiency * gpu.attention_paged_kv_efficiency.value_or(1);
  const double peak =
      (r.v.has_attention_peak ? r.v.attention_peak : gpu.peak(r.v.attention_dtype)) * frac;
  const double splits = w.ctas / std::max(ctas, 1.0);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    if (streamed(seqs[i])) continue;
    const double eff = base * (shapes[i].tile_eff * w.ctas / (w.waves * sms)) *
                       attention_length_factor(shapes[i], splits, gpu);
    t.flops_time_s += seqs[i].flops / (peak * eff);
    if (i == 0) t.efficiency = eff;
  }
  t.memory_time_s = bytes / (gpu.hbm_bandwidth_Bps * *gpu.hbm_efficiency);
  t.time_s = std::max(t.flops_time_s, t.memory_time_s) + *gpu.kernel_launch_overhead_s;
  return t;
}
}  // namespace

KernelTime batch_attention_time(const std::vector<Kernel>& seqs, const GpuSpec& gpu,
                                double sm_fraction, DecodeAttention decode) {
  gpu.require_sim("system.gpu");
  if (seqs.empty()) return KernelTime{};
  const double frac = safe_fraction(sm_fraction);
  static const std::string bf16 = "bf16";  // gpu_rates' compute precision: not read here
  return batch_attention_at(seqs, gpu, gpu_rates_of(gpu, bf16), frac, free_sms(gpu, frac), decode);
}

void PrefillTime::add(Kernel::Kind kind, double k_flops, double k_hbm_bytes, double time_s) {
  compute_time_s += time_s;
  flops += k_flops;
  hbm_bytes += k_hbm_bytes;
  if (kind != Kernel::Kind::Host) ++kernels;
  switch (kind) {
    case Kernel::Kind::Host:
      host_time_s += time_s;
      break;
    case Kernel::Kind::Gemm:
      linear_time_s += time_s;
      break;
    case Kernel::Kind::Attention:
      attention_time_s += time_s;
      break;
    case Kernel::Kind::AllReduce:
      comm_time_s += time_s;
      break;
    case Kernel::Kind::Elementwise:
      other_time_s += time_s;
      break;
  }
}

std::uint64_t BatchStepParts::bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::size_t BatchStepParts::slot(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::size_t n) {
  // SplitMix64's finaliser over each key in turn: a double's low bits are mostly zero.
  const std::uint64_t h = mix64(mix64(mix64(a) ^ b) ^ c);
  return static_cast<std::size_t>(h % n);
}

template <class Entry, class KeyOf>
void BatchStepParts::grow(std::vector<std::uint32_t>& index, std::vector<Entry>& entries,
                          KeyOf key_of) {
  // Each entry into its slot of the larger table, in the order they were made; one whose slot an
  // earlier one took is dropped (a miss later, as a replaced one is). One never filled (`used`
  // false) is dropped too.
  std::vector<std::uint32_t> grown(std::min(m_slots, 4 * index.size()), 0);
  std::vector<Entry> kept;
  kept.reserve(entries.size() + 1);
  for (Entry& x : entries) {
    if (!x.used) continue;
    const auto [ka, kb, kc] = key_of(x);
    std::uint32_t& g = grown[slot(ka, kb, kc, grown.size())];
    if (g != 0) continue;
    kept.push_back(std::move(x));
    g = static_cast<std::uint32_t>(kept.size());
  }
  index.swap(grown);
  entries.swap(kept);
}

template <class Entry, class KeyOf>
Entry& BatchStepParts::find_or_make(std::vector<std::uint32_t>& index, std::vector<Entry>& entries,
                                    std::uint64_t a, std::uint64_t b, std::uint64_t c,
                                    KeyOf key_of) {
  if (index.empty()) index.assign(std::min(m_slots, kFirstSlots), 0);
  std::uint32_t* e = &index[slot(a, b, c, index.size())];
  if (*e == 0 && 8 * (entries.size() + 1) > index.size() && index.size() < m_slots) {
    grow(index, entries, key_of);
    e = &index[slot(a, b, c, index.size())];
  }
  if (*e == 0) {
    entries.emplace_back();
    *e = static_cast<std::uint32_t>(entries.size());
  }
  return entries[*e - 1];
}

BatchStepParts::Edges& BatchStepParts::edges(double tokens, double sm_fraction) {
  return find_or_make(m_edge_slot, m_edges, bits(tokens), bits(sm_fraction), 0, [](const Edges& x) {
    return std::array<std::uint64_t, 3>{x.tokens, x.sm, 0};
  });
}

BatchStepParts::Logits& BatchStepParts::logits(double logits, double sm_fraction) {
  return find_or_make(m_logits_slot, m_logits, bits(logits), bits(sm_fraction), 0,
                      [](const Logits& x) {
                        return std::array<std::uint64_t, 3>{x.logits, x.sm, 0};
                      });
}

BatchStepParts::Layer& BatchStepParts::layer(double tokens, double sm_fraction, int first) {
  return find_or_make(m_layer_slot, m_layers, bits(tokens), bits(sm_fraction),
                      static_cast<std::uint64_t>(first) + 1, [](const Layer& x) {
                        return std::array<std::uint64_t, 3>{
                            x.tokens, x.sm, static_cast<std::uint64_t>(x.first) + 1};
                      });
}

void apply_launch(PrefillTime& p, const LaunchSpec& launch, double tokens, int layers,
                  double outside_graph) {
  const ForwardLaunches f = forward_launches(launch, tokens, p.kernels, layers, outside_graph);
  p.host_issue_s = host_issue_s(launch, f);
  p.launch_stall_s = launch_stall_s(p.host_issue_s, p.compute_time_s - p.host_time_s);
  p.compute_time_s += p.launch_stall_s;
}

PrefillTime prefill_time(const ModelSpec& m, const GpuSpec& gpu, int tp, double T, double K,
                         const std::string& compute_dtype, DType kv_dtype,
                         const LaunchSpec& launch) {
  gpu.require_sim("system.gpu");
  check_prefill_args(m, tp, T, K);
  const DType w = weight_dtype_for(compute_dtype);
  gpu.peak(compute_dtype);  // InputError when the GPU has no such rate
  PrefillTime p;
  double outside = 0;  // kernels no graph captures: attention, KV dequantisation, LM head
  for (const Kernel& k : prefill_head_kernels(m, T)) p.add(k, kernel_time(k, gpu, compute_dtype));
  for (int l = 0; l < m.num_layers; ++l)
    for (const Kernel& k : layer_kernels(m, l, T, K, tp, w, kv_dtype)) {
      p.add(k, kernel_time(k, gpu, compute_dtype, 1.0, launch.all_reduce));
      if (k.per_sequence) ++outside;
    }
  for (const Kernel& k : prefill_tail_kernels(m, T, tp, w)) {
    p.add(k, kernel_time(k, gpu, compute_dtype));
    if (k.name == "lm_head") ++outside;
  }
  apply_launch(p, launch, T, m.num_layers, outside);
  return p;
}

KernelTime gemm_kernel_time(const GpuSpec& gpu, double M, double N, double K,
                            const std::string& dtype) {
  gpu.require_sim("system.gpu");
  if (!(M >= 1 && N >= 1 && K >= 1))
    throw InputError("GEMM dimensions must be at least 1 (got M " + std::to_string(M) + ", N " +
                     std::to_string(N) + ", K " + std::to_string(K) + ")");
  const double wb = bytes_per_element(weight_dtype_for(dtype));
  Kernel k = gemm("gemm", M, N, K, wb);
  // Both operands in the precision's storage, output BF16.
  k.hbm_bytes = (M * K + K * N) * wb + M * N * kActivationBytes;
  return kernel_time(k, gpu, dtype);
}

double gemm_time(const GpuSpec& gpu, double M, double N, double K, const std::string& dtype) {
  return gemm_kernel_time(gpu, M, N, K, dtype).time_s;
}

namespace {
// Time of one layer for the batch; `acc` collects its kernels once. `gpu` has passed
// require_sim; `frac` is the safe SM fraction, `sms` the SMs free at it, `r` the GPU's rates for
// the compute precision.
PrefillTime batch_layer(const ModelSpec& m, const GpuSpec& gpu, int layer_index, int tp,
                        const std::vector<SeqSlice>& batch, double tokens, DType w,
                        const GpuRates& r, double frac, int sms, DType kv_dtype, LayerKind kind,
                        DecodeAttention decode, const AllReduceImpl& ar, BatchStepParts* parts) {
  PrefillTime p;
  // Working vectors kept between steps (issue 24: building them was the allocator's per step).
  thread_local std::vector<Kernel> layer;
  thread_local std::vector<AttentionSeq> attention;  // every sequence's, one launch
  // The token-parallel kernels' sum: a function of the tokens (and the class) alone.
  BatchStepParts::Layer* known = parts ? &parts->layer(tokens, frac, layer_index) : nullptr;
  if (known && known->used && known->first == layer_index &&
      known->tokens == BatchStepParts::bits(tokens) && known->sm == BatchStepParts::bits(frac)) {
    p = known->dense;
  } else {
    // Without the per-sequence kernels, which are timed below (issue 24: they were made here
    // and skipped).
    layer_kernels_into(layer, m, layer_index, tokens, 0, tp, w, kv_dtype, false);
    for (const Kernel& k : layer) p.add(k, kernel_time_at(k, gpu, r, frac, sms, ar));
    if (known) {
      known->used = true;
      known->first = layer_index;
      known->tokens = BatchStepParts::bits(tokens);
      known->sm = BatchStepParts::bits(frac);
      known->dense = p;
    }
  }
  // KV dequantisation (int8/int4 caches): one elementwise launch over every sequence's cached
  // context, before attention (the linear recurrence of a linear layer likewise). Its FLOPs are
  // the first sequence's, its bytes every sequence's; attention's FLOPs and bytes add up. Each
  // sequence's kernels come as plain numbers (issue 24: they were Kernels, a name string each).
  Kernel side;
  side.kind = Kernel::Kind::Elementwise;
  bool has_side = false;
  double at_flops = 0, at_bytes = 0;
  attention.clear();
  attention.reserve(batch.size());
  const SequenceConstants consts = sequence_constants(m, tp, kv_dtype, kind);
  for (const SeqSlice& s : batch) {
    const SequenceWork sw = sequence_work(m, consts, s.T, s.K, tp, kv_dtype);
    if (sw.side_name) {
      if (!has_side) {
        side.flops = sw.side_flops;
        side.hbm_bytes = sw.side_bytes;
      } else {
        side.hbm_bytes += sw.side_bytes;
      }
      has_side = true;
    }
    if (!sw.has_attention) continue;
    if (attention.empty()) {
      at_flops = sw.at.flops;
      at_bytes = sw.at.hbm_bytes;
    } else {
      at_flops += sw.at.flops;
      at_bytes += sw.at.hbm_bytes;
    }
    attention.push_back(sw.at);
  }
  if (has_side) p.add(side, kernel_time_at(side, gpu, r, frac, sms, ar));
  if (!attention.empty())
    p.add(Kernel::Kind::Attention, at_flops, at_bytes,
          batch_attention_at(attention, gpu, r, frac, sms, decode).time_s);
  return p;
}

void add_times(PrefillTime& into, const PrefillTime& p, int times) {
  into.compute_time_s += times * p.compute_time_s;
  into.linear_time_s += times * p.linear_time_s;
  into.attention_time_s += times * p.attention_time_s;
  into.comm_time_s += times * p.comm_time_s;
  into.other_time_s += times * p.other_time_s;
  into.host_time_s += times * p.host_time_s;
  into.flops += times * p.flops;
  into.hbm_bytes += times * p.hbm_bytes;
  into.kernels += times * p.kernels;
}
}  // namespace

StepTime batch_step_time(const ModelSpec& m, const GpuSpec& gpu, int tp,
                         const std::vector<SeqSlice>& batch, const std::string& compute_dtype,
                         double sm_fraction, DType kv_dtype, const LaunchSpec& launch,
                         BatchStepParts* parts) {
  StepTime st;
  if (batch.empty()) return st;
  double tokens = 0, logits = 0;
  bool dequant = false;
  for (const SeqSlice& s : batch) {
    if (&s == &batch.front())
      check_prefill_args(m, tp, s.T, s.K);
    else
      check_tokens(s.T, s.K);  // tp checked with the first
    tokens += s.T;
    logits += s.finishes ? 1 : 0;
    dequant = dequant || kv_dequant_bytes(m, tp, s.K, kv_dtype) > 0;
  }
  // The weight dtype and the GPU's rates for the precision, looked up once per step model: its
  // parts hold those of its first step (the same GPU and precision), which passed
  // require_sim, the check every kernel_time makes first (issue 24).
  const bool known = parts && parts->rates.known;
  const DType w = known ? parts->rates.weights : weight_dtype_for(compute_dtype);
  if (!known) gpu.require_sim("system.gpu");
  const double frac = safe_fraction(sm_fraction);
  const int sms = free_sms(gpu, frac);
  GpuRates rates;
  rates.dtype = &compute_dtype;
  if (known) {
    rates.v = parts->rates;
  } else {
    rates.v = gpu_rates(gpu, compute_dtype);
    rates.v.weights = w;
    if (parts) parts->rates = rates.v;
  }
  const auto time_of = [&](const Kernel& k) {
    return kernel_time_at(k, gpu, rates, frac, sms, AllReduceImpl{});
  };
  // The head kernels and the tail's over the tokens: functions of the tokens alone; the tail's
  // LM head and host cost: of the logits rows alone (issue 24: kept apart, since many batches
  // share a token count but not their finishing sequences).
  thread_local std::vector<Kernel> head, tail;  // kept between steps (issue 24)
  const auto item = [&](const Kernel& k) {
    return BatchStepParts::Item{k.kind, k.flops, k.hbm_bytes, time_of(k).time_s};
  };
  BatchStepParts::Edges* edges = parts ? &parts->edges(tokens, frac) : nullptr;
  if (edges && !(edges->used && edges->tokens == BatchStepParts::bits(tokens) &&
                 edges->sm == BatchStepParts::bits(frac))) {
    edges->used = false;
    head_kernels_into(head, m, tokens);
    tail_token_kernels_into(tail, m, tokens);
    if (head.size() + tail.size() <= std::size(edges->items)) {
      int i = 0;
      for (const Kernel& k : head) edges->items[i++] = item(k);
      for (const Kernel& k : tail) edges->items[i++] = item(k);
      edges->used = true;
      edges->head = static_cast<int>(head.size());
      edges->tail = static_cast<int>(tail.size());
      edges->tokens = BatchStepParts::bits(tokens);
      edges->sm = BatchStepParts::bits(frac);
    } else {
      edges = nullptr;  // more kernels than a slot holds: timed below as without parts
    }
  }
  if (edges) {
    for (int i = 0; i < edges->head; ++i) {
      const BatchStepParts::Item& it = edges->items[i];
      st.total.add(it.kind, it.flops, it.hbm_bytes, it.time_s);
    }
  } else {
    head_kernels_into(head, m, tokens);
    for (const Kernel& k : head) st.total.add(k, time_of(k));
  }
  // Layers of one class (dense or MoE MLP × full, sliding or linear attention) run the same
  // kernels: each class is timed once, at its first layer, and counted (issue 25: a layer
  // pattern adds attention classes; without one there are at most two, dense then MoE).
  struct LayerClass {
    bool moe = false;
    LayerKind kind = LayerKind::Full;
    int first = 0, count = 0;
  };
  std::array<LayerClass, 8> classes{};
  std::size_t n_classes = 0, first_class = 0, last_class = 0;
  const auto class_of = [&](int l, LayerKind kind) {
    const bool moe = is_moe_layer(m, l);
    std::size_t c = 0;
    while (c < n_classes && !(classes[c].moe == moe && classes[c].kind == kind)) ++c;
    if (c == n_classes) classes[n_classes++] = LayerClass{moe, kind, l, 0};
    ++classes[c].count;
    return c;
  };
  if (m.layer_pattern.empty() && m.mlp.moe_layer_step <= 1) {
    const int dense = m.mlp.type == MlpType::Moe ? m.mlp.first_dense_layers : m.num_layers;
    if (dense > 0) classes[n_classes++] = LayerClass{false, LayerKind::Full, 0, dense};
    if (dense < m.num_layers)
      classes[n_classes++] = LayerClass{true, LayerKind::Full, dense, m.num_layers - dense};
    last_class = n_classes - 1;
  } else if (m.layer_pattern.empty()) {  // interleaved MoE (moe_layer_step), all full attention
    for (int l = 0; l < m.num_layers; ++l) last_class = class_of(l, LayerKind::Full);
  } else {
    int l = 0;
    for (char c : m.layer_pattern) {
      if (c == ' ') continue;
      last_class = class_of(l++, c == 'S'   ? LayerKind::Sliding
                                 : c == 'L' ? LayerKind::Linear
                                 : c == 'C' ? LayerKind::Chunked
                                            : LayerKind::Full);
    }
  }
  for (std::size_t c = 0; c < n_classes; ++c) {
    const PrefillTime t =
        batch_layer(m, gpu, classes[c].first, tp, batch, tokens, w, rates, frac, sms, kv_dtype,
                    classes[c].kind, launch.decode_attention, launch.all_reduce, parts);
    add_times(st.total, t, classes[c].count);
    if (c == first_class) st.first_layer_s = t.compute_time_s;
    if (c == last_class) st.last_layer_s = t.compute_time_s;
  }
  if (edges) {
    for (int i = edges->head; i < edges->head + edges->tail; ++i) {
      const BatchStepParts::Item& it = edges->items[i];
      st.total.add(it.kind, it.flops, it.hbm_bytes, it.time_s);
    }
  } else {
    tail_token_kernels_into(tail, m, tokens);
    for (const Kernel& k : tail) st.total.add(k, time_of(k));
  }
  BatchStepParts::Logits* rows = parts ? &parts->logits(logits, frac) : nullptr;
  if (rows && !(rows->used && rows->logits == BatchStepParts::bits(logits) &&
                rows->sm == BatchStepParts::bits(frac))) {
    rows->used = false;
    tail_logits_kernels_into(tail, m, tp, w, logits);
    if (tail.size() <= std::size(rows->items)) {
      int i = 0;
      for (const Kernel& k : tail) rows->items[i++] = item(k);
      rows->used = true;
      rows->count = static_cast<int>(tail.size());
      rows->logits = BatchStepParts::bits(logits);
      rows->sm = BatchStepParts::bits(frac);
    } else {
      rows = nullptr;  // likewise
    }
  }
  if (rows) {
    for (int i = 0; i < rows->count; ++i) {
      const BatchStepParts::Item& it = rows->items[i];
      st.total.add(it.kind, it.flops, it.hbm_bytes, it.time_s);
    }
  } else {
    tail_logits_kernels_into(tail, m, tp, w, logits);
    for (const Kernel& k : tail) st.total.add(k, time_of(k));
  }
  // Outside any graph: one batched attention launch (and one KV dequantisation) per layer, the
  // LM head when a sequence finishes.
  const double outside = m.num_layers * (1.0 + (dequant ? 1 : 0)) + (logits > 0 ? 1 : 0);
  apply_launch(st.total, launch, tokens, m.num_layers, outside);
  return st;
}

}  // namespace kappasim
