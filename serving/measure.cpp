#include "serving/measure.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/units.hpp"
#include "models/analytic/kappa.hpp"
#include "serving/engine.hpp"
#include "serving/replica_step.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

RunSpec isolated_run_spec(ConfigNode root, int tp, ProvenanceTable* prov) {
  const SourceLoc here{"<isolated requests>", 0, 0};
  if (!root.find("workload")) root.set("workload", parse_yaml("type: narrativeqa", here.file));
  // Warm tier and no store unless the config says otherwise (the κ paper's setting).
  ConfigNode* serving = root.find("serving");
  if (!serving) serving = &root.set("serving", ConfigNode::make_map(here));
  if (serving->is_map()) {
    if (!serving->find("warm_tier"))
      serving->set("warm_tier", ConfigNode::make_scalar("true", here));
    if (!serving->find("store")) serving->set("store", ConfigNode::make_scalar("none", here));
  }
  // The TP degree is set in the config before it is read, so that the layout checks see it
  // (issue 26 item 22: `--tp` was applied after them, and a serving.parallelism.tp without
  // serving.tp was checked against tp 1): `tp` (--tp), else serving.tp, else
  // serving.parallelism.tp, else every GPU of the system (below).
  if (serving->is_map()) {
    if (tp > 0) {
      serving->set("tp", ConfigNode::make_scalar(std::to_string(tp), here));
    } else if (!serving->find("tp")) {
      if (const ConfigNode* par = serving->find("parallelism"); par && par->is_map())
        if (const ConfigNode* ptp = par->find("tp")) serving->set("tp", *ptp);
    }
  }
  const bool tp_given = serving->is_map() && serving->find("tp") != nullptr;
  const bool capacity_given = serving->is_map() && serving->find("tier_capacity") != nullptr;
  if (!root.find("trace")) root.set("trace", ConfigNode::make_scalar("false", here));
  RunSpec spec = read_config<RunSpec>(root, "", prov);
  if (tp > 0)
    spec.serving.tp = tp;
  else if (!tp_given)
    spec.serving.tp = spec.system.gpus;
  if (!capacity_given) {
    // The κ paper's probe holds the request's prefix in CPU memory: the pool is taken as host
    // DRAM less the stack's reserve (LMCache's 5 GB per rank would not hold a 100k-token prefix
    // of Qwen3-235B at TP 8), or an on-package tier's own capacity (docs/serving-stacks.md).
    StackProfile host_pool = spec.serving.stack;
    host_pool.pool_per_rank_bytes.reset();
    spec.serving.tier_capacity_bytes =
        default_tier_capacity(host_pool, spec.system, spec.serving.tp).bytes;
  }
  spec.validate("");
  spec.serving.validate("serving");
  return spec;
}

Request isolated_request(std::uint64_t id, double at_s, double K, double T) {
  Request r;
  r.id = id;
  r.arrival_s = at_s;
  r.sequence_id = id;
  r.prefix_tokens = static_cast<std::int64_t>(std::llround(K));
  r.new_tokens = static_cast<std::int64_t>(std::llround(T));
  r.workload = "isolated";
  return r;
}

std::vector<RequestRecord> run_isolated(const RunSpec& spec, const std::vector<Request>& rs) {
  VectorSource src(rs, "isolated requests");
  std::vector<RequestRecord> out;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { out.push_back(r); };
  run_serving(spec, src, sinks);
  for (const auto& r : out)
    if (r.queue_s > 1e-3)
      throw std::runtime_error("measure: request " + std::to_string(r.id) +
                               " was not isolated (queued " + format_number(r.queue_s) + " s)");
  std::sort(out.begin(), out.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.id < b.id; });
  return out;
}

double max_request_tokens(const RunSpec& spec) {
  // A layout beyond TP: the engine's rank pool (weights split over pp
  // stages and nodes too), not a TP group's (issue 26 item 22).
  if (spec.serving.parallelism.beyond_tp())
    return static_cast<double>(replica_kv_blocks(spec, make_replica_layout(spec))) *
           spec.serving.block_tokens;
  const double bkv_gpu = served_kv_unit_per_gpu(spec.model, spec.serving, spec.serving.tp);
  const double v_eff = effective_kv_bytes_per_gpu(
      spec.model, spec.system.gpu, spec.serving.tp, weight_dtype_for(spec.serving.compute_dtype),
      spec.serving.activation_reserve_bytes, spec.serving.gpu_memory_utilization);
  return static_cast<double>(kv_blocks_for(v_eff, spec.serving.block_tokens, bkv_gpu)) *
         spec.serving.block_tokens;
}

KappaCritMeasurement measure_kappa_crit(const RunSpec& spec, double T, int points,
                                        ProvenanceTable* prov) {
  if (points < 3 || points > 2000) throw InputError("κ_crit grid: expected 3 to 2000 points");
  KappaCritMeasurement m;
  m.model = spec.model.name;
  m.system = spec.system.name;
  m.tp = spec.serving.tp;
  m.t = T;
  const double max_tokens = max_request_tokens(spec);
  // K runs over whole tier chunks, so that every cached token is loaded and exactly T tokens
  // are computed (a partial chunk would be recomputed and change T): κ = K / T exactly.
  const double chunk = spec.serving.tier_chunk_tokens();
  const double kmax_tokens = std::min(1e5 * T, std::floor((max_tokens - T) / chunk) * chunk);
  if (kmax_tokens < chunk)
    throw InputError("κ_crit: T = " + format_number(T) +
                     " leaves no room for a cached prefix in the KV cache");
  m.kappa_max = kmax_tokens / T;
  std::vector<Request> rs;
  double last_k = -1;
  for (int i = 0; i < points; ++i) {
    const double want =
        std::max(1.0, std::pow(m.kappa_max, static_cast<double>(i) / (points - 1))) * T;
    const double K = std::max(chunk, std::round(want / chunk) * chunk);
    if (K == last_k || K > kmax_tokens) continue;
    last_k = K;
    rs.push_back(
        isolated_request(rs.size() + 1, static_cast<double>(rs.size()) * kIsolatedSpacing_s, K, T));
  }
  m.records = run_isolated(spec, rs);
  const auto& recs = m.records;
  if (!recs.empty()) m.load_path = recs.front().load_path;
  // Crossing of load/compute = 1, interpolated in log-log between neighbouring points.
  m.kappa_crit_simulated = m.kappa_crit_analytic_effective =
      m.kappa_crit_analytic_effective_compute = m.h2d_load_bytes_per_s = m.compute_effective_flops =
          m.h2d_load_node_bytes_per_s = m.h2d_load_model_bytes_per_s = NAN;
  for (std::size_t i = 0; i + 1 < recs.size(); ++i) {
    const double a = recs[i].load_s / recs[i].compute_s,
                 b = recs[i + 1].load_s / recs[i + 1].compute_s;
    if (a < 1 && b >= 1) {
      const double ka = recs[i].kappa_ratio, kb = recs[i + 1].kappa_ratio;
      const double f = std::log(a) / (std::log(a) - std::log(b));
      m.kappa_crit_simulated = std::exp(std::log(ka) + f * (std::log(kb) - std::log(ka)));
      // The rates at the crossing, interpolated like κ (log-log) between the two requests: a
      // request's per-request software costs make its effective H2D rate grow with K, so the
      // rate of either neighbour alone would be off by the grid spacing.
      auto at_crossing = [&](double x, double y) {
        return std::exp(std::log(x) + f * (std::log(y) - std::log(x)));
      };
      const RequestRecord &p = recs[i], &r = recs[i + 1];
      m.load_bounds = r.load_bound_s;
      m.h2d_load_node_bytes_per_s =
          at_crossing(p.bytes_loaded / p.load_s, r.bytes_loaded / r.load_s);
      m.h2d_load_bytes_per_s = m.h2d_load_node_bytes_per_s / spec.serving.tp;
      m.h2d_load_model_bytes_per_s =
          at_crossing(served_kv_model_bytes(spec.model, spec.serving, p.cached_tokens) / p.load_s,
                      served_kv_model_bytes(spec.model, spec.serving, r.cached_tokens) / r.load_s);
      // The compute rate the simulated step achieved, in the analytic model's own FLOPs
      // (F_pf per token, per GPU): what C_eff would have to be for Eq. 3 to give its time.
      const double fpf = count_params(spec.model).active() * 2 / spec.serving.tp * T;
      m.compute_effective_flops = at_crossing(fpf / p.compute_s, fpf / r.compute_s);
      break;
    }
  }
  if (!std::isfinite(m.kappa_crit_simulated) && !recs.empty())
    m.load_bounds = recs.back().load_bound_s;
  KappaQuery q = kappa_query_for(spec);
  const KappaPoint peak = evaluate_kappa(spec.model, spec.system, q, prov);
  m.kappa_crit_analytic_peak = peak.kappa_crit;
  m.h2d_peak_bytes_per_s = peak.bandwidth;
  m.compute_peak_flops = peak.compute;
  if (std::isfinite(m.h2d_load_bytes_per_s)) {
    q.bandwidth_override = m.h2d_load_bytes_per_s;
    m.kappa_crit_analytic_effective = evaluate_kappa(spec.model, spec.system, q, prov).kappa_crit;
    q.compute_override = m.compute_effective_flops;
    m.kappa_crit_analytic_effective_compute =
        evaluate_kappa(spec.model, spec.system, q, prov).kappa_crit;
  }
  return m;
}

KappaQuery kappa_query_for(const RunSpec& spec) {
  KappaQuery q;
  q.compute_dtype = spec.serving.compute_dtype;
  q.kv_dtype = spec.serving.kv_dtype;
  q.tp = spec.serving.tp;
  // The engine's KV accounting (issue 25): unified, or under serving.kv_cache: hybrid what the
  // architecture leaves at K → ∞ (the full layers' bytes per token).
  q.unified_kv = !spec.serving.hybrid_kv();
  return q;
}

BreakEvenCrossing break_even_crossing(const std::vector<double>& k, const std::vector<double>& hit,
                                      const std::vector<double>& miss) {
  BreakEvenCrossing c;
  const std::size_t n = k.size();
  if (n == 0 || hit.size() != n || miss.size() != n)
    throw std::invalid_argument("break_even_crossing: expected equal, non-empty grids");
  std::size_t j = n;  // the first index from which miss - hit >= 0 holds to the end
  while (j > 0 && miss[j - 1] - hit[j - 1] >= 0) --j;
  if (j == n) {
    c.never = true;
    c.k = NAN;
  } else if (j == 0) {
    c.from_start = true;
    c.k = k.front();
  } else {
    const double a = miss[j - 1] - hit[j - 1], b = miss[j] - hit[j];  // a < 0 <= b
    c.k = k[j - 1] + (k[j] - k[j - 1]) * (-a) / (b - a);
  }
  return c;
}

BreakEvenMeasurement measure_break_even(const RunSpec& spec, double T, int points,
                                        ProvenanceTable* prov) {
  if (points < 2 || points > 2000) throw InputError("break-even grid: expected 2 to 2000 points");
  BreakEvenMeasurement m;
  m.model = spec.model.name;
  m.system = spec.system.name;
  m.stack = spec.serving.stack.name;
  m.tp = spec.serving.tp;
  m.t = T;
  const double chunk = spec.serving.tier_chunk_tokens();
  // The miss holds K + T tokens in the KV cache, as the hit does.
  const double top = std::min(1e6, max_request_tokens(spec) - T);
  m.k_min = chunk;
  m.k_max = std::floor(top / chunk) * chunk;
  if (m.k_max < chunk)
    throw InputError("break-even: T = " + format_number(T) +
                     " leaves no room for a cached prefix of one tier chunk (" +
                     format_number(chunk) + " tokens) in the KV cache");
  std::vector<double> ks;
  for (int i = 0; i < points; ++i) {
    const double want =
        m.k_min * std::pow(m.k_max / m.k_min, static_cast<double>(i) / std::max(1, points - 1));
    const double K = std::min(m.k_max, std::max(chunk, std::round(want / chunk) * chunk));
    if (ks.empty() || K > ks.back()) ks.push_back(K);
  }
  // Hit and miss of each K, one after another, each alone in the system.
  std::vector<Request> rs;
  for (double K : ks) {
    rs.push_back(
        isolated_request(rs.size() + 1, static_cast<double>(rs.size()) * kIsolatedSpacing_s, K, T));
    rs.push_back(isolated_request(rs.size() + 1,
                                  static_cast<double>(rs.size()) * kIsolatedSpacing_s, 0, K + T));
  }
  const std::vector<RequestRecord> recs = run_isolated(spec, rs);
  if (recs.size() != rs.size())
    throw std::runtime_error("break-even: " + std::to_string(rs.size() - recs.size()) +
                             " of the isolated requests did not finish");
  if (!recs.empty()) m.load_path = recs.front().load_path;
  KappaQuery q = kappa_query_for(spec);
  std::vector<double> hit, miss, ahit, amiss;
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const RequestRecord &h = recs[2 * i], &x = recs[2 * i + 1];
    BreakEvenPoint p;
    p.k = ks[i];
    p.ttft_hit_s = h.ttft_s;
    p.ttft_miss_s = x.ttft_s;
    p.load_s = h.load_s;
    // Eq. 3 with the attention FLOPs at (K, T): the hit loads K and computes T after it; the
    // miss computes K + T from nothing.
    q.context_k = ks[i];
    q.new_tokens_t = T;
    const KappaPoint ah = evaluate_kappa(spec.model, spec.system, q, prov);
    q.context_k = 0;
    q.new_tokens_t = ks[i] + T;
    const KappaPoint am = evaluate_kappa(spec.model, spec.system, q, prov);
    p.analytic_hit_s = ah.ttft_attention->ttft_serial();
    p.analytic_miss_s = am.ttft_attention->t_compute;
    m.points.push_back(p);
    hit.push_back(p.ttft_hit_s);
    miss.push_back(p.ttft_miss_s);
    ahit.push_back(p.analytic_hit_s);
    amiss.push_back(p.analytic_miss_s);
  }
  m.simulated = break_even_crossing(ks, hit, miss);
  m.analytic = break_even_crossing(ks, ahit, amiss);
  return m;
}

}  // namespace kappasim
