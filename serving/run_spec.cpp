#include "serving/run_spec.hpp"

namespace kappasim {

void RunSpec::validate(const std::string& path) const {
  if (serving.tp > system.gpus)
    throw InputError(path + "serving.tp: tensor parallelism " + std::to_string(serving.tp) +
                     " exceeds the " + std::to_string(system.gpus) + " GPUs of system '" +
                     system.name + "'");
  system.gpu.peak(serving.compute_dtype);
  serving.tiers.validate_against(system, path + "serving.tiers");  // issue 14
}

bool adopt_gpu_kv_buffer(ServingSpec& serving, const GpuSpec& gpu) {
  const GpuSpec::KvBuffer& g = gpu.kv_buffer;
  if (serving.kv_buffer.enabled() || !(g.capacity_bytes > 0)) return false;
  KvBufferSpec& b = serving.kv_buffer;
  b.capacity_bytes = g.capacity_bytes;
  b.kind = g.sram ? KvBufferKind::Sram : KvBufferKind::Hbm;
  b.bandwidth_Bps = g.bandwidth_Bps;
  b.energy_per_byte_J = g.energy_per_byte_J;
  return true;
}

void RunSpec::adopt_gpu_kv_buffer(ConfigReader& r) {
  if (!kappasim::adopt_gpu_kv_buffer(serving, system.gpu)) return;
  for (const char* k : {"capacity", "bandwidth", "energy_per_bit"})
    r.derive(std::string("serving.kv_buffer.") + k, std::string("system.gpu.kv_buffer.") + k);
}

}  // namespace kappasim
