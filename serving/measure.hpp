// Measurements on the simulator with isolated requests: the tier warm, one request in the
// system at a time, so a request's TTFT is its own KV load plus its own compute. Used by
// `kappasim measure` and by the sweep kinds `isolated` and `kappa-crit` (apps/kappasim).
// Each function runs one SystemC simulation: call it at most once per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "models/analytic/kappa.hpp"
#include "serving/metrics.hpp"
#include "serving/run_spec.hpp"
#include "workloads/request.hpp"

namespace kappasim {

// The run config of isolated-request measurements: warm tier, no store, no trace, TP = every
// GPU of the system unless `tp` > 0. `root` holds model, system and optionally serving; a
// missing workload is filled in (isolated requests do not use it).
RunSpec isolated_run_spec(ConfigNode root, int tp, ProvenanceTable* prov);

// A request with K cached tokens on its own sequence and T new tokens, arriving at `at_s`.
Request isolated_request(std::uint64_t id, double at_s, double K, double T);

// Seconds between isolated requests: far longer than any one request takes.
inline constexpr double kIsolatedSpacing_s = 2e4;

// Runs the requests (arrivals kIsolatedSpacing_s apart or as given) and returns their records
// in id order; std::runtime_error if one was not isolated (queued more than 1 ms).
std::vector<RequestRecord> run_isolated(const RunSpec& spec, const std::vector<Request>& rs);

// The largest number of tokens one request can hold in the GPUs' KV cache.
double max_request_tokens(const RunSpec& spec);

// κ_crit on the simulator: a log grid of κ = K/T from 1 to 1e5 (K in whole tier chunks, so
// exactly T tokens are computed), the load/compute = 1 crossing interpolated in log-log,
// beside the analytic model on the same inputs (peak, with the effective bandwidth the
// simulation achieved, and with both effective bandwidth and compute).
struct KappaCritMeasurement {
  std::string model, system, load_path;
  int tp = 0;
  double t = 0;
  double kappa_crit_simulated = 0;  // NaN if load/compute never crossed 1 on the grid
  double kappa_crit_analytic_peak = 0;
  double kappa_crit_analytic_effective = 0;          // NaN without a crossing
  double kappa_crit_analytic_effective_compute = 0;  // NaN without a crossing
  double h2d_load_bytes_per_s = 0, h2d_peak_bytes_per_s = 0;
  // The same load rate per node (all TP GPUs together) and at the model level (K · B_kv of the
  // model / load time: replicated KV heads counted once), at the crossing (docs/metrics.md).
  double h2d_load_node_bytes_per_s = 0, h2d_load_model_bytes_per_s = 0;
  double compute_effective_flops = 0, compute_peak_flops = 0;
  double kappa_max = 0;  // the grid's top (bounded by the KV cache)
  // What bound the load at the crossing (the first point past it; the largest κ when there is
  // none): its load time per bound (serving/time_breakdown.hpp).
  LoadBoundTimes load_bounds;
  std::vector<RequestRecord> records;
};
KappaCritMeasurement measure_kappa_crit(const RunSpec& spec, double T, int points,
                                        ProvenanceTable* prov);

// The analytic κ model's query for a run's model, dtypes, TP and KV accounting: the same inputs
// as the engine's (the measurements above and the sweep kinds of serving/measure_kinds).
KappaQuery kappa_query_for(const RunSpec& spec);

// ---- The break-even prefix (issue 20 part 3) ---------------------------------------------------
// Where reusing a cached prefix starts to pay: the cached prefix K at which loading it from the
// tier and computing the T new tokens after it (TTFT_hit) is no slower than computing all K + T
// tokens (TTFT_miss). Both are isolated requests of the same run, so every per-request cost the
// stack charges (lookup, retrieve set-up, the connector's hand-off, the front end where
// serving.ttft is end_to_end) and the small-T compute decide it; the analytic model's (Eq. 3
// with attention FLOPs, no software: K·B_kv / BW + compute(T | K) against compute(K + T)) sits
// beside it on the same inputs.
struct BreakEvenPoint {
  double k = 0;            // cached tokens of the hit (whole tier chunks)
  double ttft_hit_s = 0;   // K loaded from the warm tier, T computed
  double ttft_miss_s = 0;  // K + T computed, nothing cached
  double load_s = 0;       // the hit's load, tier software included
  double analytic_hit_s = 0, analytic_miss_s = 0;
};

// The crossing of a K grid (ascending) where the hit stops being slower: the smallest grid K
// from which the hit is no slower at every larger K, interpolated linearly in K on
// miss - hit with the grid point before it. `from_start`: already at the first point (the
// break-even lies at or below it: k is that point, a bound); `never`: the hit is still slower at
// the last point (k is NaN: above the grid).
struct BreakEvenCrossing {
  double k = 0;
  bool from_start = false, never = false;
};
BreakEvenCrossing break_even_crossing(const std::vector<double>& k, const std::vector<double>& hit,
                                      const std::vector<double>& miss);

struct BreakEvenMeasurement {
  std::string model, system, stack, load_path;
  int tp = 0;
  double t = 0;
  double k_min = 0, k_max = 0;  // the grid: one tier chunk up to what the KV cache holds
  BreakEvenCrossing simulated, analytic;
  std::vector<BreakEvenPoint> points;
};
// Defaults of `kappasim measure break-even` and the sweep kind `break-even`: T = 16 new tokens
// (vLLM computes at least the prompt's last block) and 33 K grid points.
inline constexpr double kBreakEvenDefaultT = 16;
inline constexpr int kBreakEvenDefaultPoints = 33;
// A log grid of `points` K from one tier chunk to min(1e6, what the GPUs' KV cache holds less
// T), in whole chunks (so exactly T tokens are computed by the hit); one simulation of 2 ×
// points isolated requests.
BreakEvenMeasurement measure_break_even(const RunSpec& spec, double T, int points,
                                        ProvenanceTable* prov);

}  // namespace kappasim
