// The `capacity` sweep kind (issue 26 item 19): capacity at a TTFT SLO for the point's run config
// (analysis/capacity.hpp), so a sweep (and `solve --kind capacity`) varies hardware or serving
// keys and reads the capacity. Config: a run config plus
//   capacity: {slo_ttft, percentile, replicates, rate_lo, rate_hi, tol, warmup, fraction, jobs}
// Each probe is a capacity-probe point, its own process, run by a sweep inside the point's
// files/ (files/probes/bNNNN/: the evidence; files/replicates.csv: each replicate's capacity);
// `jobs` of them at once (default 1: the outer sweep's -j already runs points side by side). The
// point's seed is the first replicate's workload seed. Metrics: capacity_metrics (capacity.hpp).
// Pure: the simulations are child processes.
#include "analysis/capacity.hpp"
#include "core/output.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim::analysis {

namespace {

sweep::PointResult capacity_kind(const ConfigNode& config, const sweep::PointContext& ctx) {
  ConfigNode base = config;
  const ConfigNode* c = base.find("capacity");
  if (!c)
    throw InputError(config.loc,
                     "capacity: required by kind capacity ({slo_ttft: 2 s, percentile: 0.99, "
                     "replicates: 3, ...}; docs/analysis.md)");
  const CapacitySpec spec = read_config<CapacitySpec>(*c, "capacity", nullptr);
  base.erase("capacity");
  const std::uint64_t seed0 = ctx.seed;
  const CapacityResult r =
      measure_capacity(base, ctx.base_dir, spec, ctx.out_dir + "/probes", {}, &seed0);
  sweep::PointResult out;
  out.metrics = capacity_metrics(r);
  // Each replicate's capacity on its seed (the same seeds for every configuration of a sweep):
  // report section 8.6 pairs configurations replicate by replicate.
  write_file_atomic(ctx.out_dir + "/replicates.csv", capacity_replicates_csv(r, seed0));
  for (const auto& p : r.probes)
    if (!p.warnings.empty()) {
      out.warnings.push_back("a capacity probe at workload.rate = " + format_number(p.rate) +
                             " warned: " + p.warnings.front());
      break;
    }
  return out;
}

const sweep::KindRegistration kCapacityKind{
    {"capacity",
     "capacity at a TTFT SLO (capacity: {slo_ttft, percentile, replicates, ...}): the steady-state "
     "throughput's mean and t interval over replicates, TTFT at 0.8 x capacity",
     capacity_kind,
     false,
     true,
     {{"capacity_rps", "Hz",
       "capacity: the served rate at the search's last offered rate whose window TTFT quantile "
       "met the SLO, the mean over the replicates that met it"},
      {"capacity_rps_sd", "Hz", "its standard deviation over those replicates"},
      {"capacity_rps_lo", "Hz", "the 95% Student-t interval's lower end"},
      {"capacity_rps_hi", "Hz", "its upper end"},
      {"capacity_offered_rps", "Hz", "the mean offered rate at capacity"},
      {"capacity_lower_bound", "1",
       "1 when some replicate met the SLO at the top of the searched rates (capacity is then a "
       "lower bound)"},
      {"replicates_met", "1", "replicates that met the SLO at some rate"},
      {"replicates_never_met", "1", "replicates that met it at no rate searched"},
      {"at_capacity_arrival_rps", "Hz", "arrival rate in the window at capacity (mean)"},
      {"at_capacity_ttft_q_s", "s", "the window's TTFT quantile at capacity (mean)"},
      {"at_capacity_tier_hit_rate", "1", "the tier hit rate at capacity (mean)"},
      {"at_fraction_offered_rps", "Hz", "the rate capacity.fraction x capacity, probed again"},
      {"at_fraction_served_rps", "Hz", "served rate there (mean over replicates)"},
      {"at_fraction_ttft_p50_s", "s", "median TTFT there (mean over replicates)"},
      {"at_fraction_ttft_p90_s", "s", "90th-percentile TTFT there (mean)"},
      {"at_fraction_ttft_p99_s", "s", "99th-percentile TTFT there (mean)"},
      {"at_fraction_ttft_q_s", "s", "the SLO's TTFT quantile there (mean)"},
      {"probes", "1", "capacity-probe runs made"}}}};

}  // namespace

}  // namespace kappasim::analysis
