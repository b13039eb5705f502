// Per-tier κ_HW and κ_crit for the KV tiers below host DRAM (issue 14, docs/memory-tiers.md),
// and a small pure cost helper for the tiers' assumed prices. Reads the same SystemSpec as the
// simulator: the host link per GPU, the CXL expanders (cxl_devices × read_Bps), the NVMe drives
// (nvme_drives × read_Bps(request size)) and host DRAM (which an NVMe bounce crosses twice).
// Each tier's bandwidth is what one GPU sees when every GPU of the node loads from that tier at
// once, devices spread evenly over the GPUs. What it ignores: PCIe switch uplinks shared by
// GPUs and drives, CXL header-slot overhead, file-system CPU costs, latency (per chunk a CXL
// access adds ~0.1 µs and an NVMe read ~0.1 ms against ms-long chunk transfers); the flow
// fabric (systems/) models the shared links.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "systems/system_spec.hpp"

namespace kappasim {

struct TierLoad {
  std::string tier;           // "dram", "cxl", "nvme" (bounce through DRAM), "nvme-gds"
  double capacity_bytes = 0;  // the tier's capacity in the node
  double load_Bps = 0;        // per GPU, every GPU loading from this tier at once
  std::string bound;          // what sets load_Bps: "host link", "cxl devices", "cxl pool port",
                              // "cxl pool devices", "drives", "dram"
  double kappa_hw = 0;        // load_Bps / C_eff
  double kappa_crit = 0;      // κ_M · κ_HW of this tier
  std::optional<double> usd_per_byte;  // the tier's assumed price
};

// True when the system has a tier below DRAM (cxl_devices > 0, a CXL pool or nvme_drives > 0).
bool has_tiers(const SystemSpec& s);

// Per-GPU load bandwidth of each tier the system has, in the order dram, cxl, nvme, nvme-gds:
//   dram:     host_link_Bps (the host-link bandwidth per GPU, as the κ model uses today)
//   cxl:      min(host_link_Bps, cxl_devices × cxl.read_Bps() / gpus); a CXL pool (issue 25):
//             min(host_link_Bps, min(its port, the pool's devices) / gpus), the node alone
//   nvme-gds: min(host_link_Bps, nvme_drives × nvme.read_Bps(io_bytes) / gpus)
//   nvme:     min(nvme-gds, D / 2 / gpus), D = sockets × socket DRAM bandwidth × dram_efficiency:
//             the bounce writes each byte into DRAM and reads it out again.
// kappa_hw / kappa_crit are left 0 (evaluate_tier_kappa fills them).
std::vector<TierLoad> tier_loads(const SystemSpec& s, double host_link_Bps, double io_bytes);

// tier_loads with κ_HW = load / compute and κ_crit = kappa_m · κ_HW.
std::vector<TierLoad> evaluate_tier_kappa(const SystemSpec& s, double host_link_Bps,
                                          double io_bytes, double compute, double kappa_m);

// ---- cost (prices are assumptions the studies sweep) -----------------------------------------
inline constexpr double kSecondsPerMonth = 365.25 / 12 * 86400;  // 2,629,800 s
// $ per GB stored: usd_per_byte × 1e9.
inline double usd_per_gb(double usd_per_byte) { return usd_per_byte * 1e9; }
// $ per GB-month when the purchase price is spread evenly over `amortization_s` (an assumption,
// e.g. a 3- or 5-year server life): usd_per_byte × 1e9 × month / amortization.
double usd_per_gb_month(double usd_per_byte, double amortization_s);
// $ of holding `bytes` for `seconds` on a tier priced usd_per_byte, amortized over amortization_s
// (the share of the tier a request's KV occupies while it is kept).
double holding_cost_usd(double bytes, double seconds, double usd_per_byte, double amortization_s);
// Purchase price of the whole tier: capacity × usd_per_byte (nullopt: no price given).
std::optional<double> tier_capex_usd(const TierLoad& t);

}  // namespace kappasim
