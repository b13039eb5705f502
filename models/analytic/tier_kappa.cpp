#include "models/analytic/tier_kappa.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace kappasim {

bool has_tiers(const SystemSpec& s) {
  return s.cxl_devices > 0 || s.nvme_drives > 0 || s.has_cxl_pool();
}

namespace {
// The smaller of the host link and the tier's own per-GPU share, naming the one that binds.
void bind(TierLoad& t, double host_link_Bps, double share_Bps, const char* share_name) {
  if (share_Bps < host_link_Bps) {
    t.load_Bps = share_Bps;
    t.bound = share_name;
  } else {
    t.load_Bps = host_link_Bps;
    t.bound = "host link";
  }
}
}  // namespace

std::vector<TierLoad> tier_loads(const SystemSpec& s, double host_link_Bps, double io_bytes) {
  if (!(io_bytes > 0)) throw InputError("tier request size must be > 0 bytes");
  const double gpus = s.gpus;
  std::vector<TierLoad> out;
  TierLoad dram;
  dram.tier = "dram";
  dram.capacity_bytes = s.host_memory.capacity_bytes;
  dram.load_Bps = host_link_Bps;
  dram.bound = "host link";
  dram.usd_per_byte = s.host_memory.usd_per_byte;
  out.push_back(dram);
  if (s.cxl_devices > 0) {
    TierLoad t;
    t.tier = "cxl";
    t.capacity_bytes = s.cxl_devices * s.cxl.capacity_bytes;
    bind(t, host_link_Bps, s.cxl_devices * s.cxl.read_Bps() / gpus, "cxl devices");
    t.usd_per_byte = s.cxl.usd_per_byte;
    out.push_back(t);
  }
  if (s.has_cxl_pool()) {
    // Issue 25: the node alone on its pool: its port to the switch or the pool's devices, the
    // smaller, over its GPUs (other hosts loading at once divide the devices further).
    TierLoad t;
    t.tier = "cxl";
    t.capacity_bytes = s.cxl_pool.capacity_bytes();
    const double port = s.cxl_pool.port_Bps(s.cxl_pool_lanes), devs = s.cxl_pool.read_Bps();
    bind(t, host_link_Bps, std::min(port, devs) / gpus,
         port <= devs ? "cxl pool port" : "cxl pool devices");
    t.usd_per_byte = s.cxl_pool.device.usd_per_byte;
    out.push_back(t);
  }
  if (s.nvme_drives > 0) {
    TierLoad gds;
    gds.tier = "nvme-gds";
    gds.capacity_bytes = s.nvme_drives * s.nvme.capacity_bytes;
    bind(gds, host_link_Bps, s.nvme_drives * s.nvme.read_Bps(io_bytes) / gpus, "drives");
    gds.usd_per_byte = s.nvme.usd_per_byte;
    TierLoad bounce = gds;
    bounce.tier = "nvme";
    const double dram_Bps = s.host_memory.sockets * s.host_memory.socket_bandwidth() *
                            s.host_memory.dram_efficiency.value_or(1.0);
    const double dram_share = dram_Bps / 2 / gpus;  // written in, then read out: twice
    if (dram_share < bounce.load_Bps) {
      bounce.load_Bps = dram_share;
      bounce.bound = "dram";
    }
    out.push_back(bounce);
    out.push_back(gds);
  }
  return out;
}

std::vector<TierLoad> evaluate_tier_kappa(const SystemSpec& s, double host_link_Bps,
                                          double io_bytes, double compute, double kappa_m) {
  std::vector<TierLoad> out = tier_loads(s, host_link_Bps, io_bytes);
  for (TierLoad& t : out) {
    t.kappa_hw = t.load_Bps / compute;
    t.kappa_crit = kappa_m * t.kappa_hw;
  }
  return out;
}

double usd_per_gb_month(double usd_per_byte, double amortization_s) {
  if (!(amortization_s > 0)) throw InputError("amortization period must be > 0 s");
  return usd_per_byte * 1e9 * kSecondsPerMonth / amortization_s;
}

double holding_cost_usd(double bytes, double seconds, double usd_per_byte, double amortization_s) {
  if (!(amortization_s > 0)) throw InputError("amortization period must be > 0 s");
  return bytes * usd_per_byte * seconds / amortization_s;
}

std::optional<double> tier_capex_usd(const TierLoad& t) {
  if (!t.usd_per_byte) return std::nullopt;
  return t.capacity_bytes * *t.usd_per_byte;
}

}  // namespace kappasim
