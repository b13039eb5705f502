// The launch shape of a zero-copy copy kernel (docs/pcie-model.md "SM reads of host memory"):
// what decides how many loads to host memory its SMs keep in flight. A property of the kernel
// (the serving stack's, nvbandwidth's, a benchmark's), not of the GPU; the GPU contributes only
// its occupancy limits (GpuSpec::max_warps_per_sm, max_blocks_per_sm). Pure C++.
//
// Little's law: every SM the kernel holds keeps
//   resident warps × loads_per_thread × 32 threads × load_width bytes
// in flight, each load waiting one host round trip, where the resident warps are
//   min(blocks_per_sm, max_blocks_per_sm, floor(max_warps_per_sm / warps per block)) × warps
//   per block  (warps per block = ceil(threads_per_block / 32)).
// The PCIe requester's tags (a shared resource of the flow model) and the wire bound it further.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/units.hpp"

namespace kappasim {

struct GpuSpec;

struct CopyKernelShape {
  std::optional<double> load_width;         // bytes per thread per load instruction (1-16)
  std::optional<double> threads_per_block;  // threads of one thread block
  // Thread blocks the launch offers one SM at a time: grid / SMs for a grid-sized launch
  // (nvbandwidth: 1), or any number above the occupancy limit for a grid much larger than the
  // GPU (LMCache: 40,960 blocks); the GPU's occupancy limits clamp it.
  std::optional<double> blocks_per_sm;
  double loads_per_thread = 1;  // independent loads one thread has in flight (unrolling)

  // Whether the shape is given (load_width, threads_per_block and blocks_per_sm all set): an
  // absent shape puts no bound of its own on the kernel's reads.
  bool given() const { return load_width && threads_per_block && blocks_per_sm; }

  template <class V>
  void visit(V& v) {
    v.quantity("load_width", load_width, dim::bytes,
               opt("bytes one thread loads per instruction (1, 2, 4, 8 or 16)"));
    v.quantity("threads_per_block", threads_per_block, dim::none,
               opt("threads per thread block", Range::AtLeastOne));
    v.quantity("blocks_per_sm", blocks_per_sm, dim::none,
               opt("thread blocks the grid offers each SM at once (grid / SMs; the GPU's "
                   "occupancy limits clamp it)",
                   Range::AtLeastOne));
    v.quantity("loads_per_thread", loads_per_thread, dim::none,
               opt("independent loads one thread keeps in flight", Range::AtLeastOne));
  }
  // InputError naming `path`: a width the GPU cannot load, or a partial shape.
  void validate(const std::string& path) const;
};

// Warps resident per SM under the GPU's occupancy limits (those absent do not clamp).
double copy_kernel_resident_warps_per_sm(const CopyKernelShape& k, const GpuSpec& gpu);
// Bytes one SM keeps in flight: resident warps × loads_per_thread × 32 × load_width
// (0 when the shape is not given).
double copy_kernel_inflight_per_sm_bytes(const CopyKernelShape& k, const GpuSpec& gpu);
// Bytes the kernel keeps in flight on `sms` SMs (TransferRequest::sm_inflight_bytes).
double copy_kernel_inflight_bytes(const CopyKernelShape& k, const GpuSpec& gpu, double sms);

}  // namespace kappasim
