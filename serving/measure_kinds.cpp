// Sweep kinds that measure on the simulator with isolated requests (serving/measure.hpp), each
// beside the analytic model evaluated on the same model and system descriptions:
//   isolated    one request with K cached and T new tokens: load, compute, TTFT, P_OH,
//               attainable FLOP/s (a point of the simulated roofline)
//   kappa-crit  κ_crit where the simulated load time equals the compute time (measure kappa-crit)
//   break-even  the cached prefix from which loading it beats recomputing it (measure break-even)
// They live here, beside serving/measure, not in models/analytic: they run the SystemC engine,
// and the analytic layer must not depend on it (sweeps/point_kind.hpp).
// Config: the run config's model, system, optional serving (TP defaults to every GPU of the
// system; warm tier, no store), plus `measure: {k, t, points}`.
#include <cmath>

#include "models/analytic/kappa.hpp"
#include "serving/measure.hpp"
#include "serving/run_spec.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim {

namespace {

using sweep::PointContext;
using sweep::PointResult;

// t and points default per kind, as the `kappasim measure` commands do: T = 128 (the κ paper's)
// and 41 κ points for isolated and kappa-crit, T = 16 (vLLM computes at least the prompt's last
// block) and 33 K points for break-even. 0 = not given.
struct MeasureSpec {
  double k = 0;    // cached tokens (isolated)
  double t = 0;    // new tokens
  int points = 0;  // grid points
  template <class V>
  void visit(V& v) {
    v.number("k", k, opt("cached tokens K (isolated)", Range::NonNegative));
    v.number("t", t, opt("new tokens T (default 128; break-even: 16)", Range::AtLeastOne));
    v.integer("points", points,
              opt("grid points: κ log-spaced from 1 to 1e5 (kappa-crit, default 41), K "
                  "log-spaced from one tier chunk (break-even, default 33)",
                  Range::AtLeastOne));
  }
  void validate(const std::string&) const {}
  double t_or(double d) const { return t > 0 ? t : d; }
  int points_or(int d) const { return points > 0 ? points : d; }
};
constexpr double kIsolatedT = 128;
constexpr int kKappaPoints = 41;

// Splits `measure:` off the point's config and builds the isolated-request run config.
std::pair<RunSpec, MeasureSpec> read_measure(const ConfigNode& config, ProvenanceTable* prov) {
  ConfigNode root = config;
  MeasureSpec ms;
  if (const ConfigNode* m = root.find("measure")) {
    ms = read_config<MeasureSpec>(*m, "measure", nullptr);
    root.erase("measure");
  }
  return {isolated_run_spec(root, 0, prov), ms};
}

// The load's time per active bound as shares (load_bound_share_<bound>, summing to 1; NaN when
// nothing was loaded; docs/metrics.md).
void add_bound_shares(PointResult& out, const LoadBoundTimes& b) {
  const double total = b.total();
  for (int i = 0; i < kLoadBounds; ++i)
    out.metrics.emplace_back(
        std::string("load_bound_share_") + load_bound_name(static_cast<LoadBound>(i)),
        total > 0 ? b[static_cast<LoadBound>(i)] / total : NAN);
}

PointResult run_isolated_kind(const ConfigNode& config, const PointContext&) {
  ProvenanceTable prov;
  const auto [spec, ms] = read_measure(config, &prov);
  const double T = ms.t_or(kIsolatedT);
  const double chunk = spec.serving.tier_chunk_tokens();
  // Whole tier chunks only: every cached token is then loaded and exactly T are computed.
  const double K = std::floor(ms.k / chunk) * chunk;
  if (K + T > max_request_tokens(spec))
    throw InputError("measure: K + T = " + format_number(K + T) +
                     " tokens do not fit the GPUs' KV cache (" +
                     format_number(max_request_tokens(spec)) + " tokens)");
  const auto recs = run_isolated(spec, {isolated_request(1, 0, K, T)});
  if (recs.size() != 1) throw std::runtime_error("isolated: the request did not finish");
  const RequestRecord& r = recs.front();
  KappaQuery q = kappa_query_for(spec);
  q.context_k = K;
  q.new_tokens_t = T;
  const KappaPoint a = evaluate_kappa(spec.model, spec.system, q, &prov);
  // FLOPs by the analytic model's convention (F_pf per new token, per GPU), so the simulated
  // attainable rate sits on the same axis as the analytic roofline.
  const double flops_gpu = a.f_pf / spec.serving.tp * T;
  PointResult out;
  out.metrics = {
      {"k", K},
      {"t", T},
      {"kappa_ratio", K / T},
      {"load_s", r.load_s},
      {"compute_s", r.compute_s},
      {"ttft_s", r.ttft_s},
      {"p_oh", r.compute_s > 0 ? r.load_s / r.compute_s : NAN},
      {"attainable_flops", flops_gpu / r.ttft_s},
      {"h2d_load_bytes_per_s", r.load_s > 0 ? r.bytes_loaded / spec.serving.tp / r.load_s : NAN},
      {"h2d_load_node_bytes_per_s", r.load_s > 0 ? r.bytes_loaded / r.load_s : NAN},
      {"h2d_load_model_bytes_per_s",
       r.load_s > 0
           ? served_kv_model_bytes(spec.model, spec.serving, static_cast<double>(r.cached_tokens)) /
                 r.load_s
           : NAN},
      {"analytic_load_s", a.ttft->t_transfer},
      {"analytic_compute_s", a.ttft->t_compute},
      {"analytic_p_oh", a.ttft->p_oh()},
      {"analytic_ttft_serial_s", a.ttft->ttft_serial()},
      {"analytic_attainable_serial_flops", flops_gpu / a.ttft->ttft_serial()},
      {"analytic_attainable_overlap_flops", flops_gpu / a.ttft->ttft_overlap()},
      {"kappa_crit_analytic", a.kappa_crit},
      {"compute_peak_flops", a.compute},
      {"h2d_peak_bytes_per_s", a.bandwidth}};
  // Where its TTFT went (serving/time_breakdown.hpp) and what bound its load.
  for (const auto& c : TimeBreakdown::categories())
    if (c.field != &TimeBreakdown::idle_s)
      out.metrics.emplace_back(std::string("t_") + c.name + "_s", r.time.*c.field);
  add_bound_shares(out, r.load_bound_s);
  return out;
}

PointResult run_kappa_crit_kind(const ConfigNode& config, const PointContext&) {
  ProvenanceTable prov;
  const auto [spec, ms] = read_measure(config, &prov);
  const KappaCritMeasurement m =
      measure_kappa_crit(spec, ms.t_or(kIsolatedT), ms.points_or(kKappaPoints), &prov);
  PointResult out;
  out.metrics = {{"t", m.t},
                 {"kappa_crit_simulated", m.kappa_crit_simulated},
                 {"kappa_crit_analytic_peak", m.kappa_crit_analytic_peak},
                 {"kappa_crit_analytic_effective", m.kappa_crit_analytic_effective},
                 {"kappa_crit_analytic_effective_compute", m.kappa_crit_analytic_effective_compute},
                 {"h2d_load_bytes_per_s", m.h2d_load_bytes_per_s},
                 {"h2d_load_node_bytes_per_s", m.h2d_load_node_bytes_per_s},
                 {"h2d_load_model_bytes_per_s", m.h2d_load_model_bytes_per_s},
                 {"h2d_peak_bytes_per_s", m.h2d_peak_bytes_per_s},
                 {"compute_effective_flops", m.compute_effective_flops},
                 {"compute_peak_flops", m.compute_peak_flops},
                 {"kappa_max", m.kappa_max}};
  // Why kappa_crit_simulated may be blank (issue 12.13): load/compute stayed below 1 at every
  // κ up to kappa_max (the link never binds), or was already >= 1 at the smallest κ.
  bool never = !m.records.empty(), from_start = false;
  for (const auto& rec : m.records) never = never && rec.load_s < rec.compute_s;
  if (!m.records.empty()) from_start = m.records.front().load_s >= m.records.front().compute_s;
  out.metrics.emplace_back("link_never_binds", never ? 1.0 : 0.0);
  out.metrics.emplace_back("link_binds_from_start", from_start ? 1.0 : 0.0);
  add_bound_shares(out, m.load_bounds);  // at the crossing (or the largest κ)
  return out;
}

PointResult run_break_even_kind(const ConfigNode& config, const PointContext&) {
  ProvenanceTable prov;
  const auto [spec, ms] = read_measure(config, &prov);
  const BreakEvenMeasurement m = measure_break_even(spec, ms.t_or(kBreakEvenDefaultT),
                                                    ms.points_or(kBreakEvenDefaultPoints), &prov);
  PointResult out;
  const BreakEvenPoint &lo = m.points.front(), &hi = m.points.back();
  out.metrics = {{"t", m.t},
                 {"break_even_k_simulated", m.simulated.k},
                 {"break_even_from_start", m.simulated.from_start ? 1.0 : 0.0},
                 {"break_even_never", m.simulated.never ? 1.0 : 0.0},
                 {"break_even_k_analytic", m.analytic.k},
                 {"break_even_analytic_from_start", m.analytic.from_start ? 1.0 : 0.0},
                 {"break_even_analytic_never", m.analytic.never ? 1.0 : 0.0},
                 {"k_min", m.k_min},
                 {"k_max", m.k_max},
                 {"ttft_hit_at_k_min_s", lo.ttft_hit_s},
                 {"ttft_miss_at_k_min_s", lo.ttft_miss_s},
                 {"speedup_at_k_max", hi.ttft_miss_s / hi.ttft_hit_s}};
  return out;
}

// Columns both measuring kinds share: the load rates of docs/metrics.md's "Load rates of
// isolated requests", the analytic model's peak rates, and what bound the load.
const sweep::KindColumn kH2dLoad{
    "h2d_load_bytes_per_s", "B/s",
    "KV bytes one GPU loaded / the request's whole load time, tier software included (not "
    "h2d_effective_*, which divides by link-busy time)"};
const sweep::KindColumn kH2dLoadNode{"h2d_load_node_bytes_per_s", "B/s",
                                     "the same for the TP group's GPUs together"};
const sweep::KindColumn kH2dLoadModel{
    "h2d_load_model_bytes_per_s", "B/s",
    "K · B_kv of the model / load time: KV heads replicated over the TP ranks counted once"};
const sweep::KindColumn kH2dPeak{
    "h2d_peak_bytes_per_s", "B/s",
    "the analytic model's link rate per GPU: the host link's per-direction peak after encoding"};
const sweep::KindColumn kComputePeak{"compute_peak_flops", "FLOP/s",
                                     "the analytic model's compute rate per GPU: the dense peak"};
const sweep::KindColumn kBoundShare{
    "load_bound_share_*", "1",
    "share of the load time each bound held (software, read_tags, sm_inflight, link, host_dram, "
    "socket_link, hbm; summing to 1; empty when nothing was loaded; docs/metrics.md)"};

const sweep::KindRegistration kIsolatedKind{
    {"isolated",
     "one isolated request (K cached, T new; warm tier) on the simulator beside Eq. 3",
     run_isolated_kind,
     false,
     true,
     {{"k", "tokens", "cached tokens loaded (measure.k rounded down to whole tier chunks)"},
      {"t", "tokens", "new tokens computed (measure.t, default 128)"},
      {"kappa_ratio", "1", "κ = k / t"},
      {"load_s", "s", "the request's KV load, tier software included"},
      {"compute_s", "s", "its prefill compute"},
      {"ttft_s", "s", "its time to first token (isolated: no queue)"},
      {"p_oh", "1", "load_s / compute_s"},
      {"attainable_flops", "FLOP/s",
       "F_pf / TP · t / ttft_s: the simulated point on the analytic roofline's axis (the analytic "
       "model's FLOP convention)"},
      kH2dLoad,
      kH2dLoadNode,
      kH2dLoadModel,
      {"analytic_load_s", "s", "Eq. 3's transfer time on the same inputs at the peak rates"},
      {"analytic_compute_s", "s", "Eq. 3's compute time, attention FLOPs included"},
      {"analytic_p_oh", "1", "analytic_load_s / analytic_compute_s"},
      {"analytic_ttft_serial_s", "s", "load then compute (Eq. 3, serial)"},
      {"analytic_attainable_serial_flops", "FLOP/s", "the analytic roofline, load then compute"},
      {"analytic_attainable_overlap_flops", "FLOP/s",
       "the analytic roofline, load overlapped with compute"},
      {"kappa_crit_analytic", "1", "Eq. 6 at the peak rates"},
      kComputePeak,
      kH2dPeak,
      {"t_*_s", "s",
       "the request's time by category, as requests.csv's t_<category>_s (queue, sched_software, "
       "load_software, load_link, load_wait, compute, store, step_overhead)"},
      kBoundShare}}};
const sweep::KindRegistration kKappaCritKind{
    {"kappa-crit",
     "κ_crit measured on the simulator (load = compute crossing) beside the analytic κ_crit",
     run_kappa_crit_kind,
     false,
     true,
     {{"t", "tokens", "new tokens per request (measure.t, default 128)"},
      {"kappa_crit_simulated", "1",
       "κ = K / T where the simulated load time equals the compute time, interpolated in log-log "
       "on a grid of whole tier chunks; empty outside the grid (link_never_binds, "
       "link_binds_from_start)"},
      {"kappa_crit_analytic_peak", "1", "Eq. 6 at the link's and the GPU's peak rates"},
      {"kappa_crit_analytic_effective", "1",
       "Eq. 6 with h2d_load_bytes_per_s for the link and the peak compute"},
      {"kappa_crit_analytic_effective_compute", "1",
       "Eq. 6 with h2d_load_bytes_per_s and compute_effective_flops: kappa_crit_simulated by "
       "construction (both rates are read at its crossing), a bookkeeping check, not a test of "
       "Eq. 6"},
      {kH2dLoad.name, kH2dLoad.unit, kH2dLoad.doc + ", at the crossing (interpolated)"},
      {kH2dLoadNode.name, kH2dLoadNode.unit, kH2dLoadNode.doc + ", at the crossing"},
      {kH2dLoadModel.name, kH2dLoadModel.unit, kH2dLoadModel.doc + ", at the crossing"},
      kH2dPeak,
      {"compute_effective_flops", "FLOP/s",
       "F_pf / TP · T / compute time at the crossing: the compute rate Eq. 3 would need to give "
       "the simulated step's time"},
      kComputePeak,
      {"kappa_max", "1", "the grid's largest κ (bounded by the GPUs' KV cache)"},
      {"link_never_binds", "1", "1 when load stayed below compute up to kappa_max"},
      {"link_binds_from_start", "1", "1 when load already exceeded compute at κ = 1"},
      {kBoundShare.name, kBoundShare.unit,
       kBoundShare.doc + "; at the crossing, else at the "
                         "largest κ"}}}};
const sweep::KindRegistration kBreakEvenKind{
    {"break-even",
     "the cached prefix from which loading it beats recomputing it, simulated beside analytic",
     run_break_even_kind,
     false,
     true,
     {{"t", "tokens", "new tokens after the prefix (measure.t, default 16)"},
      {"break_even_k_simulated", "tokens",
       "the smallest cached prefix K from which a hit (K loaded, T computed) is no slower than "
       "recomputing K + T at every larger grid K, interpolated; empty above the grid"},
      {"break_even_from_start", "1",
       "1 when the hit was no slower already at k_min (break_even_k_simulated is then a bound)"},
      {"break_even_never", "1", "1 when the hit was still slower at k_max"},
      {"break_even_k_analytic", "tokens",
       "the same from Eq. 3 with attention FLOPs and no software, on the same inputs"},
      {"break_even_analytic_from_start", "1", "as break_even_from_start, analytic"},
      {"break_even_analytic_never", "1", "as break_even_never, analytic"},
      {"k_min", "tokens", "the grid's first K: one tier chunk"},
      {"k_max", "tokens", "the grid's last K: what the GPUs' KV cache holds less T, at most 1e6"},
      {"ttft_hit_at_k_min_s", "s", "the hit's TTFT at k_min"},
      {"ttft_miss_at_k_min_s", "s", "the recompute's TTFT at k_min"},
      {"speedup_at_k_max", "1", "the recompute's TTFT / the hit's at k_max"}}}};

}  // namespace

}  // namespace kappasim
