#include "models/gpu/copy_kernel_shape.hpp"

#include <algorithm>
#include <cmath>

#include "models/gpu/gpu_spec.hpp"

namespace kappasim {

namespace {
constexpr double kThreadsPerWarp = 32;  // CUDA: a warp is 32 threads
}  // namespace

void CopyKernelShape::validate(const std::string& path) const {
  if (load_width) {
    const double w = *load_width;
    if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16)
      throw InputError(path +
                       ".load_width: a thread loads 1, 2, 4, 8 or 16 bytes per instruction, got " +
                       format_number(w) + " B");
  }
  const int set = (load_width ? 1 : 0) + (threads_per_block ? 1 : 0) + (blocks_per_sm ? 1 : 0);
  if (set != 0 && set != 3)
    throw InputError(path +
                     ": a copy kernel's shape needs load_width, threads_per_block and "
                     "blocks_per_sm together (got only some of them)");
}

double copy_kernel_resident_warps_per_sm(const CopyKernelShape& k, const GpuSpec& gpu) {
  if (!k.given()) return 0;
  const double warps_per_block = std::ceil(*k.threads_per_block / kThreadsPerWarp);
  double blocks = *k.blocks_per_sm;
  if (gpu.max_blocks_per_sm) blocks = std::min(blocks, *gpu.max_blocks_per_sm);
  if (gpu.max_warps_per_sm)
    blocks = std::min(blocks, std::floor(*gpu.max_warps_per_sm / warps_per_block));
  return std::max(0.0, blocks) * warps_per_block;
}

double copy_kernel_inflight_per_sm_bytes(const CopyKernelShape& k, const GpuSpec& gpu) {
  if (!k.given()) return 0;
  // One warp-wide load moves 32 threads × load_width bytes (pcie_protocol's sm_inflight_bytes).
  return copy_kernel_resident_warps_per_sm(k, gpu) * k.loads_per_thread * kThreadsPerWarp *
         *k.load_width;
}

double copy_kernel_inflight_bytes(const CopyKernelShape& k, const GpuSpec& gpu, double sms) {
  if (!(sms > 0)) return 0;
  return sms * copy_kernel_inflight_per_sm_bytes(k, gpu);
}

}  // namespace kappasim
