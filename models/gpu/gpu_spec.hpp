// A GPU's datasheet description: peak dense FLOP/s per dtype, HBM capacity and bandwidth, SMs,
// L2, TDP, NVLink. Values come from presets/gpus/*.yaml, each with its source. The SystemC
// compute component (later) reads the same struct, so the analytic model and the simulator
// share one description.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace kappasim {

struct GpuSpec {
  std::string name;
  std::string display_name;
  double hbm_capacity_bytes = 0;
  double hbm_bandwidth_Bps = 0;
  std::map<std::string, double> peak_flops;  // dense tensor-core FLOP/s by dtype
  int sm_count = 0;
  double l2_bytes = 0;
  double tdp_w = 0;
  std::optional<double> nvlink_Bps;  // per direction, GPU to GPU

  static const std::vector<std::string>& compute_dtypes();

  // Peak dense FLOP/s for a dtype; InputError naming the GPU when it has no such rate.
  double peak(const std::string& dtype) const;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.quantity("hbm_capacity", hbm_capacity_bytes, dim::bytes, req("HBM capacity"));
    v.quantity("hbm_bandwidth", hbm_bandwidth_Bps, dim::bandwidth, req("HBM bandwidth"));
    v.quantity_map("peak_flops", peak_flops, dim::flop_rate, compute_dtypes(),
                   req("dense tensor-core peak FLOP/s per dtype"));
    v.integer("sm_count", sm_count, req("number of streaming multiprocessors"));
    v.quantity("l2_cache", l2_bytes, dim::bytes, req("L2 cache size"));
    v.quantity("tdp", tdp_w, dim::power, req("thermal design power"));
    v.quantity("nvlink_bandwidth", nvlink_Bps, dim::bandwidth,
               opt("GPU-to-GPU NVLink bandwidth per direction"));
  }
  void validate(const std::string& path) const;
};

}  // namespace kappasim
