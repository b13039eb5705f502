#include "report/tier_cost.hpp"

#include <cmath>
#include <limits>

namespace kappasim::report {

// Price points, $/GB (all [A]: market prices move; the section shows all three):
//  - DRAM (DDR5 RDIMM): low 4 (DDR4-2400 ECC at $4.70/GB in 2016, grcooling.com "The Incredible
//    Shrinking Price of Memory", a trough of the cycle), mid 10 (tuttotech.net 2025-12-29, citing
//    TechPowerUp: standard DDR5 modules ~$10/GB), high 19 (same article: a 4 TB DDR5 RDIMM kit
//    over $75,000, ~$19/GB, in the 2025-26 shortage).
//  - CXL memory (Type 3 expander = DRAM media + a controller): low 3 (re-used DDR4 behind the
//    controller, below new DDR5), mid 10 (new DDR5 media at the DRAM mid price; controller cost
//    taken as offset by cheaper high-capacity modules), high 22 (DDR5 at the high price + ~15%
//    controller/board premium). No public price list for CZ120 / CMM-D was found: assumption.
//  - NVMe (enterprise TLC): low 0.06 (client PCIe 4 drives $0.06-0.08/GB, diyssd.com "Cost per
//    Gigabyte as an Indication of SSD Value"), mid 0.12 (PCIe 5 drives ~$0.12/GB, same page),
//    high 0.25 (an enterprise premium of ~2x over PCIe 5 client drives).
const std::vector<TierPrices>& tier_price_sweep() {
  static const std::vector<TierPrices> p = {
      {"low", 4.0, 3.0, 0.06},
      {"mid", 10.0, 10.0, 0.12},
      {"high", 19.0, 22.0, 0.25},
  };
  return p;
}

// [A] H100 rental $2.35 per GPU-hour (SemiAnalysis GPU rental index, March 2026, as quoted by
// compux.net "GPU pricing trends 2026"; the mid-2025 trough was $1.70), taken as the price of
// the node without its KV tiers. [A] 4 years: the memory's life, used around the clock.
CostAssumptions default_cost_assumptions() { return {2.35, 8, 4.0}; }

double memory_capital_usd(const TierCapacities& c, const TierPrices& p) {
  return c.dram_bytes / 1e9 * p.dram_usd_per_gb + c.cxl_bytes / 1e9 * p.cxl_usd_per_gb +
         c.nvme_bytes / 1e9 * p.nvme_usd_per_gb;
}

double amortisation_seconds(double years) { return years * 365.25 * 86400.0; }

double memory_usd_per_s(const TierCapacities& c, const TierPrices& p, const CostAssumptions& a) {
  return memory_capital_usd(c, p) / amortisation_seconds(a.amortisation_years);
}

double gpu_usd_per_s(const CostAssumptions& a) { return a.gpus * a.gpu_usd_per_hour / 3600.0; }

double cost_per_request_usd(const TierCapacities& c, const TierPrices& p, const CostAssumptions& a,
                            double throughput_rps) {
  if (!(throughput_rps > 0) || !std::isfinite(throughput_rps))
    return std::numeric_limits<double>::quiet_NaN();
  return (gpu_usd_per_s(a) + memory_usd_per_s(c, p, a)) / throughput_rps;
}

double memory_cost_per_request_usd(const TierCapacities& c, const TierPrices& p,
                                   const CostAssumptions& a, double throughput_rps) {
  if (!(throughput_rps > 0) || !std::isfinite(throughput_rps))
    return std::numeric_limits<double>::quiet_NaN();
  return memory_usd_per_s(c, p, a) / throughput_rps;
}

}  // namespace kappasim::report
