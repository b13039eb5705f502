// The time of one tensor-parallel all-reduce of activations over NVLink, by mechanism
// (docs/compute-model.md, "All-reduce"). Pure C++, no SystemC; kernel_timing charges it for every
// Kernel::Kind::AllReduce, so the analytic model and the simulator share it.
//
// Which implementation runs it is the serving stack's choice (LaunchSpec::all_reduce):
//   nccl         NCCL picks, per message, the cheapest of its algorithms and protocols by its own
//                cost model (src/graph/tuning.cc): ring × {LL, LL128, Simple} and, on NVSwitch
//                systems with NVLink SHARP, NVLS. A ring with protocol P costs
//                    base(P) + 2(p−1)·step(P) + 2(p−1)/p · S / busbw(P),
//                busbw(P) = min(ring_bus_bandwidth × fraction(P), cap(P)); NVLS costs
//                    nvls_latency + S / nvls_bandwidth
//                (each GPU pushes its buffer into the switch and reads the reduced one back:
//                the same bytes per GPU at any rank count, so its algorithm bandwidth, not its
//                bus bandwidth, is the constant).
//                The latencies include the kernel launch (they are end-to-end operation times).
//   vllm_custom  vLLM's custom all-reduce (csrc/custom_all_reduce.cuh) for messages below the
//                stack's custom_max_bytes on 2, 4, 6 or 8 GPUs, NCCL above: one kernel that reads
//                the peers' buffers over NVLink. One-shot (each GPU reads all p−1 peers' whole
//                buffers) on 2 GPUs, below 512 KiB on ≤ 4 and below 256 KiB on ≤ 8; two-shot
//                (reduce-scatter then all-gather by peer reads) otherwise. Each stage is bounded
//                by the GPU's NVLink ingress at the achieved bus rate:
//                    one-shot: launch + 2·barrier + (p−1)·S / ring_bus_bandwidth
//                    two-shot: launch + 2·barrier + 2(p−1)/p · S / ring_bus_bandwidth
//   fastest      the hardware bound (the ideal stack): per message the faster of NCCL's choice
//                and the custom kernel above on 2, 4, 6 or 8 GPUs, at any size (custom_max is a
//                buffer size vLLM chose, not a limit of the hardware).
// A GPU preset without an all_reduce table keeps the ring at the line rate:
//     2(p−1)/p · S / nvlink_bandwidth + 2(p−1)·nvlink_latency + launch.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace kappasim {

struct GpuSpec;

enum class AllReduceLibrary { Nccl, VllmCustom, Fastest };
const std::vector<std::pair<const char*, AllReduceLibrary>>& all_reduce_library_names();

// The stack's all-reduce implementation (presets/stacks/*.yaml `launch.all_reduce`).
struct AllReduceImpl {
  AllReduceLibrary library = AllReduceLibrary::Nccl;
  double custom_max_bytes = 0;  // vllm_custom: messages below this use the custom kernel
  template <class V>
  void visit(V& v) {
    v.choice("library", library, all_reduce_library_names(),
             opt("nccl (NCCL's own algorithm and protocol choice), vllm_custom (vLLM's custom "
                 "all-reduce below custom_max, NCCL above) or fastest (the faster of the two per "
                 "message: the hardware bound)"));
    v.quantity(
        "custom_max", custom_max_bytes, dim::bytes,
        opt("vllm_custom: messages smaller than this use the custom kernel", Range::NonNegative));
  }
  void validate(const std::string&) const {}
};

struct AllReduceTime {
  double time_s = 0;
  // ring, nvls, one_shot, two_shot, or ring_line_rate (no all_reduce table).
  std::string algorithm;
  std::string protocol;  // NCCL's: ll, ll128, simple; empty for the others
};

// One all-reduce of `bytes` per GPU over `ranks` GPUs (ranks ≤ 1: nothing). InputError naming
// system.gpu.nvlink_bandwidth when the GPU has no NVLink.
AllReduceTime all_reduce_time(const GpuSpec& gpu, int ranks, double bytes,
                              const AllReduceImpl& impl = AllReduceImpl{});
// Its time_s alone (the step-time model's: no names made).
double all_reduce_seconds(const GpuSpec& gpu, int ranks, double bytes,
                          const AllReduceImpl& impl = AllReduceImpl{});

}  // namespace kappasim
