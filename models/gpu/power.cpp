#include "models/gpu/power.hpp"

#include <algorithm>
#include <stdexcept>

#include "core/error.hpp"

namespace kappasim {

PowerParams power_params(const GpuSpec& gpu) {
  std::string missing;
  auto need = [&](const std::optional<double>& v, const char* key) {
    if (!v) missing += (missing.empty() ? "" : ", ") + std::string(key);
  };
  need(gpu.idle_power_w, "idle_power");
  need(gpu.energy_per_flop_J, "energy_per_flop");
  need(gpu.energy_per_hbm_byte_J, "energy_per_hbm_bit");
  if (!missing.empty())
    throw InputError("GPU '" + gpu.name + "': the power model needs " + missing);
  if (*gpu.idle_power_w > gpu.tdp_w)
    throw InputError("GPU '" + gpu.name + "': idle_power exceeds tdp");
  return {*gpu.idle_power_w, *gpu.energy_per_flop_J, *gpu.energy_per_hbm_byte_J, gpu.tdp_w};
}

EnergyBreakdown gpu_energy_breakdown(const PowerParams& p, const PowerActivity& a) {
  if (a.duration_s < 0 || a.compute_busy_s < 0 || a.flops < 0 || a.hbm_bytes < 0 ||
      a.link_bytes < 0 || a.link_energy_per_byte_J < 0)
    throw std::invalid_argument("gpu_energy: negative activity");
  EnergyBreakdown e;
  e.idle_j = p.idle_w * a.duration_s;
  e.compute_j = p.energy_per_flop_J * a.flops;
  e.hbm_j = p.energy_per_hbm_byte_J * a.hbm_bytes;
  e.link_j = a.link_energy_per_byte_J * a.link_bytes;
  double headroom_w = std::max(0.0, p.tdp_w - p.idle_w);
  // (1) FLOPs happen while compute kernels run: their power is bounded by the headroom then.
  // With no busy time given, the whole interval is the window.
  double busy = a.compute_busy_s > 0 ? std::min(a.compute_busy_s, a.duration_s) : a.duration_s;
  double compute = std::min(e.compute_j, headroom_w * busy);
  double cut = e.compute_j - compute;
  // (2) The mean over the interval is bounded by the power limit.
  double total = e.idle_j + compute + e.hbm_j + e.link_j;
  double limit = p.tdp_w * a.duration_s;
  if (total > limit) {
    cut += total - limit;
    total = limit;
  }
  e.capped_j = cut;
  e.total_j = total;
  return e;
}

EnergyBreakdown gpu_energy_breakdown(const GpuSpec& gpu, const PowerActivity& a) {
  return gpu_energy_breakdown(power_params(gpu), a);
}

double gpu_energy_j(const GpuSpec& gpu, const PowerActivity& a) {
  return gpu_energy_breakdown(gpu, a).total_j;
}

double gpu_power_w(const GpuSpec& gpu, const PowerActivity& a) {
  return a.duration_s > 0 ? gpu_energy_j(gpu, a) / a.duration_s : 0;
}

}  // namespace kappasim
