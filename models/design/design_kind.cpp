// The `design` sweep kind: a GPU die re-split between tensor compute, host-link PHY and KV SRAM
// at equal area or equal power (models/design/area_power), evaluated with the analytic κ model on
// a request sample, with the link PHY capped by the host side (models/design/host_bound).
// Config keys: design_spec.hpp. Deterministic: the request sample is drawn with the point's seed.
// Registered here, by the design study's own layer (sweeps/point_kind.hpp). Pure: no SystemC.
#include "models/design/design_spec.hpp"
#include "sweeps/point_kind.hpp"

namespace kappasim {

namespace {

sweep::PointResult design_point(const ConfigNode& config, const sweep::PointContext& ctx) {
  const DesignEvalSpec spec = read_design_eval(config);
  sweep::PointResult out;
  out.metrics = design_metrics(evaluate_design(spec, ctx.seed));
  return out;
}

const sweep::KindRegistration kDesignKind{
    {"design",
     "area/power design space: compute / host-link / KV-SRAM split at equal area or power, "
     "link PHY capped by the host side (socket DRAM share), κ_crit and TTFT on a workload "
     "sample (models/design)",
     design_point, /*batch=*/true, /*files=*/false}};

}  // namespace

}  // namespace kappasim
