// The `kappa` sweep kind: the analytic κ model (evaluate_kappa, models/analytic/kappa) for
// {model, system, serving: {tp, kv_dtype}?, precision?, K?, T?}; metrics: B_kv, F_pf, κ_M, κ_HW,
// κ_crit (and with K and T the TTFT parts, P_OH and U, with and without attention FLOPs).
// Registered here, by the analytic model's own layer (sweeps/point_kind.hpp). Pure: no SystemC.
#include <optional>

#include "core/config.hpp"
#include "models/analytic/kappa.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim {

namespace {

using sweep::PointContext;
using sweep::PointResult;

struct KappaServing {
  int tp = 1;
  DType kv_dtype = DType::Bf16;
  template <class V>
  void visit(V& v) {
    v.integer("tp", tp, opt("tensor parallelism", Range::AtLeastOne));
    v.choice("kv_dtype", kv_dtype, dtype_names(), opt("KV cache dtype"));
  }
  void validate(const std::string&) const {}
};

struct KappaPointSpec {
  ModelSpec model;
  SystemSpec system;
  KappaServing serving;
  std::string precision = "bf16";
  std::optional<double> K, T;
  template <class V>
  void visit(V& v) {
    v.object("model", model, req("the LLM"), "model");
    v.object("system", system, req("the hardware system"), "system");
    v.object("serving", serving, opt("tp and kv_dtype"));
    v.text("precision", precision, opt("compute dtype whose peak is C_eff (bf16, fp8, ...)"));
    v.quantity("K", K, dim::none, opt("cached tokens K", Range::NonNegative));
    v.quantity("T", T, dim::none, opt("new tokens T", Range::AtLeastOne));
  }
  void validate(const std::string&) const {}
};

PointResult kappa_point(const ConfigNode& config, const PointContext&) {
  ProvenanceTable prov;
  const KappaPointSpec spec = read_config<KappaPointSpec>(config, "", &prov);
  KappaQuery q;
  q.compute_dtype = spec.precision;
  q.kv_dtype = spec.serving.kv_dtype;
  q.tp = spec.serving.tp;
  q.context_k = spec.K;
  q.new_tokens_t = spec.T;
  const KappaPoint p = evaluate_kappa(spec.model, spec.system, q, &prov);
  PointResult r;
  r.metrics = {{"n_active_params", p.n_active_params},
               {"b_kv_bytes", p.b_kv},
               {"b_kv_gpu_bytes", p.b_kv_gpu},
               {"f_pf_flops", p.f_pf},
               {"compute_flops", p.compute},
               {"bandwidth_bytes_per_s", p.bandwidth},
               {"kappa_m", p.kappa_m},
               {"kappa_hw", p.kappa_hw},
               {"kappa_crit", p.kappa_crit}};
  if (p.f_attention) {
    r.metrics.emplace_back("f_attention_flops", *p.f_attention);
    r.metrics.emplace_back("kappa_crit_attention", *p.kappa_crit_attention);
  }
  if (p.ttft && p.ttft_attention) {
    const TtftParts& a = *p.ttft;
    const TtftParts& b = *p.ttft_attention;
    r.metrics.emplace_back("kappa_ratio", *p.context_k / *p.new_tokens_t);
    r.metrics.emplace_back("t_transfer_s", a.t_transfer);
    r.metrics.emplace_back("t_compute_s", a.t_compute);
    r.metrics.emplace_back("ttft_s", a.ttft_serial());
    r.metrics.emplace_back("p_oh", a.p_oh());
    r.metrics.emplace_back("utilization", a.utilization());
    r.metrics.emplace_back("t_compute_attention_s", b.t_compute);
    r.metrics.emplace_back("ttft_attention_s", b.ttft_serial());
    r.metrics.emplace_back("p_oh_attention", b.p_oh());
    r.metrics.emplace_back("utilization_attention", b.utilization());
  }
  // Issue 14: per-tier κ when the system has tiers below DRAM (absent otherwise).
  for (const TierLoad& t : p.tiers) {
    std::string n = t.tier;
    for (char& c : n)
      if (c == '-') c = '_';
    r.metrics.emplace_back("tier_" + n + "_bandwidth_bytes_per_s", t.load_Bps);
    r.metrics.emplace_back("kappa_crit_" + n, t.kappa_crit);
    if (t.usd_per_byte) r.metrics.emplace_back("usd_per_gb_" + n, usd_per_gb(*t.usd_per_byte));
  }
  return r;
}

const sweep::KindRegistration kKappaKind{
    {"kappa",
     "the analytic κ model (kappasim kappa) for {model, system, serving: {tp, kv_dtype}, K, T}",
     kappa_point,
     /*batch=*/true,
     /*files=*/false,
     {{"n_active_params", "1", "active parameters per token, whole model"},
      {"b_kv_bytes", "B", "KV bytes per token, whole model (B_kv)"},
      {"b_kv_gpu_bytes", "B", "KV bytes per token one GPU holds, replicated KV heads included"},
      {"f_pf_flops", "FLOP", "prefill FLOPs per new token, whole model, by the F_pf convention"},
      {"compute_flops", "FLOP/s", "C_eff per GPU: the dense peak of the precision"},
      {"bandwidth_bytes_per_s", "B/s", "BW per GPU: the host link's per-direction peak share"},
      {"kappa_m", "1", "κ_M per GPU: (F_pf / TP) / b_kv_gpu_bytes"},
      {"kappa_hw", "1", "κ_HW: bandwidth_bytes_per_s / compute_flops"},
      {"kappa_crit", "1", "Eq. 6: κ_M · κ_HW"},
      {"f_attention_flops", "FLOP",
       "attention FLOPs per new token at (K, T), causal (with K or T given)"},
      {"kappa_crit_attention", "1", "κ_crit with the attention FLOPs added to F_pf"},
      {"kappa_ratio", "1", "K / T (with both given)"},
      {"t_transfer_s", "s", "Eq. 3's KV transfer time per GPU at the peak link rate"},
      {"t_compute_s", "s", "Eq. 3's compute time per GPU at the peak, F = F_pf"},
      {"ttft_s", "s", "t_transfer_s + t_compute_s (serial)"},
      {"p_oh", "1", "t_transfer_s / t_compute_s"},
      {"utilization", "1", "1 / (1 + p_oh)"},
      {"t_compute_attention_s", "s", "the compute time with F = F_pf + attention"},
      {"ttft_attention_s", "s", "t_transfer_s + t_compute_attention_s"},
      {"p_oh_attention", "1", "t_transfer_s / t_compute_attention_s"},
      {"utilization_attention", "1", "1 / (1 + p_oh_attention)"},
      {"tier_*_bandwidth_bytes_per_s", "B/s",
       "per tier below DRAM (cxl, nvme, nvme_gds; dram): the load rate per GPU with every GPU "
       "loading from it at once (models/analytic/tier_kappa)"},
      {"kappa_crit_*", "1", "per tier: κ_M · that tier's load rate / C_eff"},
      {"usd_per_gb_*", "USD/GB", "per tier with a price: its assumed price per GB"}}}};

}  // namespace

}  // namespace kappasim
