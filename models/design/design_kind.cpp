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
     design_point,
     /*batch=*/true,
     /*files=*/false,
     {{"compute_fraction", "1", "the movable budget's share given to compute"},
      {"link_fraction", "1", "its share given to the host-link PHY"},
      {"sram_fraction", "1", "its share given to on-die KV SRAM"},
      {"compute_flops", "FLOP/s", "the design's dense compute"},
      {"link_phy_bandwidth_Bps", "B/s", "its host-link PHY, per direction"},
      {"link_effective_bandwidth_Bps", "B/s",
       "min(PHY, host share, requester's read tags) with every GPU of the system loading"},
      {"host_share_Bps", "B/s",
       "the host side's share alone (socket DRAM, socket link, root port); 0 when nothing on the "
       "host bounds it"},
      {"host_unlimited", "1", "1 for the die-only view (host: unlimited)"},
      {"link_bound_by", "1",
       "what sets the effective rate: 0 PHY, 1 host DRAM, 2 socket link, 3 root port, 4 read tags"},
      {"sram_bytes", "B", "the KV SRAM's capacity"},
      {"area_mm2", "mm^2", "the die's total area"},
      {"power_w", "W", "its total power"},
      {"within_area_budget", "1", "1 when the area is within the baseline's (0.1% tolerance)"},
      {"within_power_budget", "1", "1 when the power is within the baseline's (0.1% tolerance)"},
      {"compute_area_mm2", "mm^2", "the compute's area"},
      {"link_area_mm2", "mm^2", "the PHY's area"},
      {"sram_area_mm2", "mm^2", "the SRAM's area"},
      {"compute_power_w", "W", "the compute's power"},
      {"link_power_w", "W", "the PHY's power"},
      {"sram_power_w", "W", "the SRAM's power"},
      {"kappa_m", "1", "κ_M of the model at the design's TP"},
      {"kappa_hw", "1", "link_effective_bandwidth_Bps / compute_flops"},
      {"kappa_crit", "1", "κ_M · κ_HW"},
      {"requests", "1", "the workload sample's size"},
      {"kappa_ratio_p50", "1", "the sample's median K / T"},
      {"frac_above_kappa_crit", "1", "share of the sample with K / T above kappa_crit"},
      {"frac_link_bound", "1", "share whose load took longer than its compute"},
      {"sram_hit_fraction", "1", "share whose cached prefix came from the SRAM"},
      {"t_compute_mean_s", "s", "mean compute time over the sample (Eq. 3's parts)"},
      {"t_load_mean_s", "s", "mean load time over the sample (SRAM hits off the link)"},
      {"ttft_mean_s", "s",
       "mean TTFT, the load overlapped with compute layer by layer: max(load + compute / L, "
       "load / L + compute)"},
      {"ttft_p50_s", "s", "its median"},
      {"ttft_p90_s", "s", "its 90th percentile"},
      {"ttft_p99_s", "s", "its 99th percentile"},
      {"throughput_rps", "Hz",
       "requests / max(total compute, total load): one TP instance, compute and link pipelined"},
      {"compute_utilization", "1", "total compute / max(total compute, total load)"}}}};

}  // namespace

}  // namespace kappasim
