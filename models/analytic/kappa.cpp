#include "models/analytic/kappa.hpp"

#include <algorithm>
#include <cmath>

#include "models/gpu/kernel_timing.hpp"

namespace kappasim {

TtftParts ttft_parts(double K, double T, double b_kv, double f_per_token, double bandwidth,
                     double compute) {
  TtftParts p;
  p.t_transfer = K * b_kv / bandwidth;
  p.t_compute = T * f_per_token / compute;
  return p;
}

const std::vector<std::pair<const char*, FpfConvention>>& fpf_convention_names() {
  static const std::vector<std::pair<const char*, FpfConvention>> n = {
      {"2n-active", FpfConvention::TwoNActive},
      {"2n-nonembedding", FpfConvention::TwoNNonEmbedding},
      {"matmul-no-head", FpfConvention::MatmulNoHead},
      {"kaplan", FpfConvention::Kaplan},
  };
  return n;
}

namespace {
// c: count_params(m), counted once per evaluation (issue 24: twice was ~8% of a rebalance sweep).
double fpf_by_convention(const ModelSpec& m, const KappaQuery& q, const ParamCounts& c) {
  switch (q.convention) {
    case FpfConvention::TwoNActive:
      return 2 * c.active();
    case FpfConvention::TwoNNonEmbedding:
      return 2 * (c.active() - c.embedding - c.lm_head);
    case FpfConvention::MatmulNoHead:
      return linear_flops_per_token(m, false);
    case FpfConvention::Kaplan:
      return 2 * c.active() +
             2.0 * m.num_layers * q.kaplan_context * static_cast<double>(m.hidden_size);
  }
  return 0;
}

std::string source_text(const ProvenanceTable* prov, const std::string& key,
                        const std::string& what) {
  if (prov) {
    auto it = prov->find(key);
    if (it != prov->end())
      return what + " [" + it->second.first.kind + ": " + it->second.first.source + "]";
  }
  return what;
}
}  // namespace

KappaPoint evaluate_kappa(const ModelSpec& m, const SystemSpec& s, const KappaQuery& q,
                          const ProvenanceTable* prov) {
  KappaPoint p;
  p.model = m.name;
  p.system = s.name;
  p.compute_dtype = q.compute_dtype;
  p.kv_dtype = dtype_name(q.kv_dtype);
  p.tp = q.tp;
  for (const auto& [n, c] : fpf_convention_names())
    if (c == q.convention) p.convention = n;
  if (q.fpf_override) p.convention = "override";

  const ParamCounts counts = count_params(m);
  p.n_active_params = counts.active();
  require_kv_dtype_support(s.gpu, q.kv_dtype, "kv_dtype");
  p.b_kv = kv_bytes_per_token(m, q.kv_dtype);
  // Issue 25: a model with sliding-window or linear-attention layers leaves
  // kv_bytes_for_prefix(K) behind, not K · B_kv; B_kv is then that over K, at --context K, or
  // the full layers' bytes per token (the limit K → ∞) without it.
  const bool by_k = m.has_layer_pattern() && !q.unified_kv;
  if (m.has_layer_pattern() && q.unified_kv) {
    p.b_kv = kv_bytes_per_token_unified(m, q.kv_dtype);
    p.kv_at = "unified cache";
  }
  const double K_kv = q.context_k.value_or(0);
  if (by_k) {
    if (K_kv > 0) {
      p.b_kv = kv_bytes_for_prefix(m, q.kv_dtype, K_kv) / K_kv;
      p.kv_at = "K = " + format_number(K_kv);
    } else {
      p.kv_at = "K → ∞";
    }
  }
  if (q.layout) {
    // Issue 14: the layout's per-GPU accounting (models/llm/parallelism).
    KappaLayout L;
    L.cost = layout_cost(m, q.kv_dtype, q.compute_dtype, *q.layout, s.gpus, by_k);
    L.name = layout_name(*q.layout);
    L.weight_bytes_gpu = layout_weight_bytes_per_gpu(
        m, *q.layout, bytes_per_element(weight_dtype_for(q.compute_dtype)));
    p.tp = q.layout->attention_tp();
    p.b_kv_gpu = L.cost.kv_bytes_rank;
    L.b_kv_share = L.cost.kv_bytes_share;
    if (by_k && K_kv > 0) {
      // Issue 25, hybrid KV on a layout: at --context K the fullest stage's GPU holds its full
      // layers' K tokens, its sliding layers' window, its chunked layers' current chunk and its
      // share of the linear states, per token of K (K → ∞: its full layers' alone, the
      // layout_cost figures above). A DP rank holds its own requests' only.
      const int pp = std::max(1, q.layout->pp);
      double most = 0;
      for (int st = 0; st < pp; ++st)
        most = std::max(
            most, stage_hybrid_kv_per_gpu(m, q.kv_dtype, p.tp, pp, st).bytes(0, K_kv, K_kv) / K_kv);
      p.b_kv_gpu = most;
      L.b_kv_share = most / std::max(1, q.layout->dp_attention);
    }
    p.layout = L;
  } else {
    // Eq. 6 at TP > 1 takes the all-reduce as hidden behind compute on NVLink; a GPU without a
    // GPU-GPU link has nothing to hide it on, and all-reduce over PCIe is not modelled.
    // A system with no GPU peaks describes no GPU (a design evaluation passes C and BW itself,
    // models/design): nothing to check.
    if (q.tp > 1 && !s.gpu.peak_flops.empty() && !s.gpu.nvlink_Bps)
      throw InputError("system.gpu.nvlink_bandwidth: tp " + std::to_string(q.tp) +
                       " needs a GPU-GPU link, and GPU '" + s.gpu.name +
                       "' has none (a PCIe-only part); all-reduce over PCIe is not modelled: use "
                       "tp 1, or give the link with --set system.gpu.nvlink_bandwidth=...");
    p.b_kv_gpu = by_k && K_kv > 0 ? kv_bytes_for_prefix_per_gpu(m, q.kv_dtype, q.tp, K_kv) / K_kv
                 : q.unified_kv   ? kv_bytes_per_token_unified_per_gpu(m, q.kv_dtype, q.tp)
                                  : kv_bytes_per_token_per_gpu(m, q.kv_dtype, q.tp);
  }
  p.f_pf = q.fpf_override ? *q.fpf_override : fpf_by_convention(m, q, counts);

  if (q.compute_override) {
    p.compute = *q.compute_override;
    p.compute_source = "--compute";
  } else {
    p.compute = s.gpu.peak(q.compute_dtype);
    p.compute_source = source_text(prov, "system.gpu.peak_flops." + q.compute_dtype,
                                   s.gpu.name + " peak dense " + q.compute_dtype);
  }
  if (q.bandwidth_override) {
    p.bandwidth = *q.bandwidth_override;
    p.bandwidth_source = "--bandwidth";
  } else {
    p.bandwidth = s.host_link_bandwidth_per_gpu();
    std::string what = s.host_link.name + " peak per direction";
    if (s.host_link.type == LinkType::Pcie)
      what += " (x" + std::to_string(s.host_link.lanes) + " after encoding)";
    if (s.gpus_sharing_host_link > 1)
      what += " / " + std::to_string(s.gpus_sharing_host_link) + " GPUs sharing it";
    p.bandwidth_source = what;
  }

  double f_gpu = p.f_pf / q.tp;
  p.b_kv_share = p.b_kv_gpu;
  if (p.layout) {
    // κ_crit = (longest stage compute per replica token) / (largest stage KV share per token):
    // the pipeline turns link-bound when its slowest loading stage outlasts its slowest
    // computing one. Communication serial with compute gives κ_crit_comm.
    KappaLayout& L = *p.layout;
    const LayoutCost& c = L.cost;
    double t_max = 0, t_comm_max = 0;
    f_gpu = 0;
    for (std::size_t i = 0; i < c.stages.size(); ++i) {
      const StageCost& st = c.stages[i];
      const double f = p.f_pf * st.flops_fraction / c.stage_gpus;
      if (st.nvlink_bytes > 0 && !s.gpu.nvlink_Bps)
        throw InputError("system.gpu.nvlink_bandwidth: needed for the NVLink traffic of layout " +
                         L.name + " (GPU '" + s.gpu.name + "')");
      const double t_comm = (st.nvlink_bytes > 0 ? st.nvlink_bytes / *s.gpu.nvlink_Bps : 0) +
                            st.nic_bytes / c.layout.nic_bandwidth_Bps;
      f_gpu = std::max(f_gpu, f);
      if (f / p.compute + t_comm > t_max || i == 0) {
        t_max = f / p.compute + t_comm;
        t_comm_max = t_comm;
        L.critical_stage = static_cast<int>(i);
        L.nvlink_bytes = st.nvlink_bytes;
        L.nic_bytes = st.nic_bytes;
      }
    }
    L.f_gpu = f_gpu;
    L.t_comm = t_comm_max;
    p.b_kv_share = L.b_kv_share;
    L.kappa_crit_comm = t_max * p.bandwidth / L.b_kv_share;
  }
  if (q.shard_replicated_kv) {
    // Issue 23 item 5: r copies per TP group, each GPU loading 1/r and all-gathering the rest.
    KappaShardedKv sk;
    sk.r = p.layout ? static_cast<int>(std::lround(p.layout->cost.kv_replication))
                    : std::max(1, static_cast<int>(std::lround(p.tp * p.b_kv_gpu / p.b_kv)));
    const ShardedKvLoad load = shard_replicated_kv(p.b_kv_share, sk.r);
    sk.host_bytes = load.host_bytes;
    sk.gather_bytes = load.gather_bytes;
    if (sk.r > 1) {
      if (!s.gpu.nvlink_Bps)
        throw InputError("--replicated-kv shard_allgather: the " + std::to_string(sk.r) +
                         " copies of " + m.name + "'s KV are all-gathered over NVLink, and GPU '" +
                         s.gpu.name + "' has none (system.gpu.nvlink_bandwidth)");
      sk.gather_s = ring_allgather_s(p.b_kv_share, sk.r, *s.gpu.nvlink_Bps, 0);
    }
    sk.host_equiv_bytes = sk.host_bytes + sk.gather_s * p.bandwidth;
    p.b_kv_share = sk.host_equiv_bytes;
    if (p.layout) p.layout->kappa_crit_comm *= p.layout->b_kv_share / sk.host_equiv_bytes;
    p.sharded_kv = sk;
  }
  p.f_gpu = f_gpu;
  p.kappa_m = kappa_m(f_gpu, p.b_kv_share);
  p.kappa_hw = kappa_hw(p.bandwidth, p.compute);
  p.kappa_crit = p.kappa_m * p.kappa_hw;
  if (has_tiers(s)) {  // issue 14: the same κ_M against each tier's per-GPU bandwidth
    if (q.tier_chunk_tokens < 1) throw InputError("tier chunk tokens must be at least 1");
    // The GPU's own chunk: 256 tokens of the KV one GPU holds per token (b_kv_gpu), not the
    // per-replica-token share κ uses under DP attention (issue 26.12).
    p.tier_io_bytes = q.tier_chunk_tokens * p.b_kv_gpu;
    p.tiers = evaluate_tier_kappa(s, p.bandwidth, p.tier_io_bytes, p.compute, p.kappa_m);
  }

  if (q.context_k || q.new_tokens_t) {
    const double K = q.context_k.value_or(0);
    const double T = q.new_tokens_t.value_or(1);
    if (K < 0 || T < 1)
      throw InputError("cached tokens K must be >= 0 and new tokens T >= 1 (got K=" +
                       format_number(K) + ", T=" + format_number(T) + ")");
    p.context_k = K;
    p.new_tokens_t = T;
    p.f_attention = attention_flops(m, K, T) / T;
    double f_attn_gpu = (p.f_pf + *p.f_attention) / q.tp;
    if (p.layout) {
      // Attention over each DP rank's own tokens, per stage in proportion to its layers; the
      // TTFT parts below are then those of dp_attention requests, one per DP rank.
      const LayoutCost& c = p.layout->cost;
      f_attn_gpu = 0;
      for (const StageCost& st : c.stages)
        f_attn_gpu = std::max(
            f_attn_gpu, (p.f_pf * st.flops_fraction + *p.f_attention * st.layers / m.num_layers) /
                            c.stage_gpus);
    }
    p.kappa_crit_attention = kappa_m(f_attn_gpu, p.b_kv_share) * p.kappa_hw;
    if (q.context_k && q.new_tokens_t) {
      p.ttft = ttft_parts(K, T, p.b_kv_share, f_gpu, p.bandwidth, p.compute);
      p.ttft_attention = ttft_parts(K, T, p.b_kv_share, f_attn_gpu, p.bandwidth, p.compute);
    }
  }
  return p;
}

std::vector<RooflineRow> roofline(const KappaPoint& p, double lo, double hi, int points) {
  if (!(lo > 0) || !(hi > lo) || points < 2)
    throw InputError("roofline: need 0 < kappa-min < kappa-max and at least 2 points");
  std::vector<RooflineRow> rows;
  const double f = p.f_gpu;  // F_pf / tp, or the layout's share
  for (int i = 0; i < points; ++i) {
    const double k = lo * std::pow(hi / lo, static_cast<double>(i) / (points - 1));
    const double t_c = f / p.compute;                   // per new token
    const double t_x = k * p.b_kv_share / p.bandwidth;  // its κ cached tokens
    RooflineRow r;
    r.kappa_ratio = k;
    r.attainable_overlap = f / std::max(t_c, t_x);
    r.attainable_serial = f / (t_c + t_x);
    r.p_oh = t_x / t_c;
    r.link_bound = t_x > t_c;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace kappasim
