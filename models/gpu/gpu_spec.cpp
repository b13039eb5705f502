#include "models/gpu/gpu_spec.hpp"

namespace kappasim {

const std::vector<std::string>& GpuSpec::compute_dtypes() {
  static const std::vector<std::string> d = {"tf32", "fp16", "bf16", "fp8", "fp4", "int8"};
  return d;
}

double GpuSpec::peak(const std::string& dtype) const {
  auto it = peak_flops.find(dtype);
  if (it != peak_flops.end()) return it->second;
  std::string have;
  for (const auto& [k, v] : peak_flops) have += (have.empty() ? "" : ", ") + k;
  throw InputError("GPU '" + name + "' has no peak rate for precision '" + dtype +
                   "' (it has: " + have + ")");
}

void GpuSpec::validate(const std::string& path) const {
  if (peak_flops.empty())
    throw InputError(path + ".peak_flops: at least one dtype's peak FLOP/s is required");
}

}  // namespace kappasim
