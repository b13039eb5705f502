// The probes' simulations (`kappasim probe h2d|d2h|bidir|prefill`): the SystemC link and compute
// models run on their own, without the serving engine. Plain structs in and out; the command
// line, its checks and the tables stay in apps/kappasim. Each function runs one SystemC
// simulation: call it at most once per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interconnects/transfer.hpp"
#include "models/gpu/copy_kernel_shape.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "models/llm/architecture.hpp"
#include "systems/system_spec.hpp"
#include "systems/topology.hpp"

namespace kappasim {

// Host<->GPU copy bandwidth per block size, measured the way the vLLM blog measured its H100
// curves (reference-data.md): per size, one transfer of `blocks` blocks (DMA: that many
// cudaMemcpyAsync back to back on one stream per GPU and direction; kernel: one copy kernel
// over all blocks), timed from the first start to the last end. The sizes run as sequential
// phases of one simulation.
struct LinkProbeOptions {
  SystemSpec system;
  Topology topology;  // build_topology(system), checked by the caller
  std::vector<double> sizes;
  std::vector<Direction> directions;  // {H2D}, {D2H} or both at once (bidir)
  int blocks = 1000;
  int gpus = 1;
  bool use_dma = true;  // false: the SM copy kernel (pinned host memory only)
  bool pinned = true;
  CopyKernelShape kernel;  // the copy kernel's launch shape (not given: no loads-in-flight bound)
};

struct LinkProbePhase {
  double size = 0;       // bytes per block
  double time_s = 0;     // first start to last end
  double transfers = 0;  // fabric transfers in the phase
  double events = 0;     // fabric kernel events in the phase
};

struct LinkProbeResult {
  std::vector<LinkProbePhase> phases;  // one per size, in order
  std::string fidelity;                // the fabric's
};

LinkProbeResult run_link_probe(LinkProbeOptions options);

// One GPU of a TP group prefilling T new tokens over K cached ones in the SystemC GpuCompute.
struct ComputeProbeOptions {
  ModelSpec model;
  GpuSpec gpu;
  int tp = 1;
  double t = 0;  // new tokens
  double k = 0;  // cached tokens
  std::string precision = "bf16";
  bool coarse = false;  // one simulation event per layer instead of per kernel
  LaunchSpec launch;    // the serving stack's launches (StackProfile::launch)
};

struct ComputeProbeResult {
  PrefillTime time;  // the busy time split (equal to prefill_time())
  std::int64_t kernel_events = 0;
  double sim_time_s = 0;  // simulated time at the prefill's end
};

ComputeProbeResult run_compute_probe(const ComputeProbeOptions& options);

}  // namespace kappasim
