// Cost per request of a KV memory hierarchy (issue 14, section 8.6): the GPU node's time plus the
// capital of the memory tiers it holds, amortised, divided by the requests it serves. Pure
// arithmetic, no simulation. Every price is an assumption the report sweeps (low / mid / high);
// the sources and the reasoning are in tier_cost.cpp and docs/report.md.
// What it ignores: power and cooling, the chassis slots and controllers a tier needs beyond its
// $/GB, the price of the GPU side changing with the memory fitted (the GPU-hour rate is taken as
// the price of the node without the KV tiers), and the share of a device the KV does not use
// (the tier's configured capacity is what is bought).
#pragma once

#include <string>
#include <vector>

namespace kappasim::report {

// Capacity installed per tier (bytes, 1 GB = 1e9 B).
struct TierCapacities {
  double dram_bytes = 0, cxl_bytes = 0, nvme_bytes = 0;
};

// $/GB per tier (1 GB = 1e9 B).
struct TierPrices {
  std::string name;  // "low", "mid", "high"
  double dram_usd_per_gb = 0, cxl_usd_per_gb = 0, nvme_usd_per_gb = 0;
};

struct CostAssumptions {
  double gpu_usd_per_hour = 0;  // per GPU-hour, the node without its KV tiers
  int gpus = 8;
  double amortisation_years = 0;  // the memory's capital spread over this life, used 24/7
};

// The three price points the section sweeps and the node assumptions (tier_cost.cpp: sources).
const std::vector<TierPrices>& tier_price_sweep();
CostAssumptions default_cost_assumptions();

// Capital of the tiers: Σ capacity / 1e9 × $/GB.
double memory_capital_usd(const TierCapacities& c, const TierPrices& p);
// Seconds in `years` (365.25-day years).
double amortisation_seconds(double years);
// Memory $ per second of the node's life: capital / amortisation_seconds.
double memory_usd_per_s(const TierCapacities& c, const TierPrices& p, const CostAssumptions& a);
// GPU $ per second: gpus × $/GPU-hour / 3600.
double gpu_usd_per_s(const CostAssumptions& a);
// Cost per request: (gpu $/s + memory $/s) / throughput (req/s); NaN when throughput <= 0 or not
// finite. The memory part alone: memory $/s / throughput.
double cost_per_request_usd(const TierCapacities& c, const TierPrices& p, const CostAssumptions& a,
                            double throughput_rps);
double memory_cost_per_request_usd(const TierCapacities& c, const TierPrices& p,
                                   const CostAssumptions& a, double throughput_rps);

}  // namespace kappasim::report
