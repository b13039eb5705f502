// The `capacity` sweep kind (issue 26 item 19): capacity at a TTFT SLO for the point's run config
// (analysis/capacity.hpp), so a sweep (and `solve --kind capacity`) varies hardware or serving
// keys and reads the capacity. Config: a run config plus
//   capacity: {slo_ttft, percentile, replicates, rate_lo, rate_hi, tol, warmup, fraction, jobs}
// Each probe is a capacity-probe point, its own process, run by a sweep inside the point's
// files/ (files/probes/bNNNN/: the evidence); `jobs` of them at once (default 1: the outer sweep's
// -j already runs points side by side). The point's seed is the first replicate's workload seed.
// Metrics: capacity_metrics (capacity.hpp). Pure: the simulations are child processes.
#include "analysis/capacity.hpp"
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
     capacity_kind}};

}  // namespace

}  // namespace kappasim::analysis
