// A load path as a strategy object (issue 13 item 3): how a step that loads cached KV moves it
// and overlaps it with the step's compute. The engine (serving/engine) owns the SystemC side and
// hands each strategy a LoadContext: the primitives (wait, start a group of copies on every GPU,
// wait for them, the step's compute) and the accounting a load charges (the step's time
// breakdown and load bounds, the run's stats, the trace). One file per path in this folder,
// registered by name in registry.cpp; ServingSpec::load_path is the key.
//   kernel     serial_load: SM copy kernel (zero-copy), then compute
//   block_dma  serial_load: vLLM's 16-token blocks by DMA, then compute
//   layerwise  one DMA per layer per chunk, overlapped with compute
// The stack profile's software costs are charged where they sit (serving/stack_profile):
// in-step CPU before the copies, GPU gaps between chunks, CPU overlapped with the copies.
#pragma once

#include <systemc>  // a SystemC layer (serving_sim): the context waits and starts transfers

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interconnects/link_model.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/copy_split.hpp"
#include "serving/engine_stats.hpp"
#include "serving/run_spec.hpp"
#include "serving/step_plan.hpp"
#include "serving/time_breakdown.hpp"

namespace kappasim {

// One group of copies (a member per GPU and source), ending when the last member has.
// serving.replicated_kv: shard_allgather (issue 23 item 5): the members of `rs` are the host-link
// shards and end in `shards`; the context then all-gathers them over NVLink (`gather`, one
// PeerGpu transfer per GPU to its ring neighbour) and `g` ends when the gather has.
struct CopyGroup {
  std::vector<TransferRequest> rs;
  TransferGroup g;
  TransferGroup shards;
  std::vector<TransferRequest> gather;
  double shards_end_s = -1;  // when the shards had arrived (< 0: no gather in this group)
};

class LoadContext {
 public:
  virtual ~LoadContext() = default;
  virtual double now() const = 0;
  virtual void wait(double s) = 0;  // simulated time passes (nothing if s <= 0)
  // Starts every GPU's share (bytes_per_gpu each, H2D) as one group after the fixed cost of
  // `units` copies (DMA) or blocks (copy kernel).
  virtual void start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t units,
                            CopyPath path) = 0;
  virtual void wait_copies(CopyGroup& c) = 0;
  // A pipeline stage's worker (issue 21): its forward is not launched while its loads are in
  // flight (wait_copies releases them) or while it is held here, issuing loads on its CPU (the
  // layer-wise path's per-layer issue cost under granularity `step`, which has no copy group of
  // its own). stage_worker(): whether this load runs on such a worker; hold_launch: a no-op
  // otherwise.
  virtual bool stage_worker() const { return false; }
  virtual void hold_launch(bool /*held*/) {}
  // The group's time from t_start to its end (c.g.end_s), split as CopySplit says.
  virtual CopySplit split_copies(const CopyGroup& c, double t_start) const = 0;
  // The step's compute on every GPU (GpuCompute::start_step: one HBM Local flow per GPU that
  // shares HBM with the copies in flight), waited for, charged to the step's compute (its
  // stretch by HBM sharing included) and traced.
  virtual void compute(const StepTime& st) = 0;
  // Non-blocking: `compute_s` of compute moving `hbm_bytes` through each GPU's HBM, one member
  // per GPU in c (wait with wait_copies; c.g.end_s is when the slowest GPU's step ended).
  // Charged and traced by the caller.
  virtual void start_compute(CopyGroup& c, double compute_s, double hbm_bytes) = 0;
  // Trace: every GPU's copies; a span on the engine's load track; spans on every GPU's link
  // track; the step's compute on the compute tracks. No-ops without a trace.
  virtual void trace_copies(const CopyGroup& c, const std::string& what) = 0;
  virtual void trace_load(const std::string& what, double t0, double t1) = 0;
  virtual void trace_link(const std::string& what, double t0, double t1) = 0;
  virtual void trace_compute(double t0, double t1) = 0;

  // Descriptions and accounting (the engine's).
  const RunSpec* spec = nullptr;
  double kv_bytes_per_token_gpu = 0;
  // Of those, the bytes a GPU moves over its host link per link token: all of them, or 1/r of
  // them with serving.replicated_kv: shard_allgather (the context all-gathers the rest).
  double kv_bytes_per_token_link = 0;
  double buffer_Bps = 0;  // GPU-side KV buffer → pages copy rate (0: no buffer)
  EngineStats* stats = nullptr;
  TimeBreakdown* step_time = nullptr;
  LoadBoundTimes* step_bounds = nullptr;

  // Copy time of the step's buffer hits (on the GPU, alongside the link's copies).
  virtual double buffer_copy_s(const LoadSplit& ls) const {
    return ls.buffer_tokens > 0 ? ls.buffer_tokens * kv_bytes_per_token_gpu / buffer_Bps : 0;
  }
};

class LoadPathStrategy {
 public:
  virtual ~LoadPathStrategy() = default;
  virtual std::string name() const = 0;
  // How its host loads are copied (the run's link capacity figure).
  virtual CopyPath copy_path() const = 0;
  // A step whose first-scheduled sequences (`requests` of them) load `ls`: the load and the
  // step's compute (`compute`) in simulated time through ctx. Returns the load's time (CPU-side
  // costs + copies; with overlap, the loads' own time).
  virtual double run(LoadContext& ctx, const LoadSplit& ls, std::int64_t requests,
                     const StepTime& compute) = 0;
  // Whether run() can load one request outside the steps (serving.stack.load: async): its load
  // then its compute, in that order, so with no compute it is the load alone. The layer-wise
  // path interleaves the two and cannot.
  virtual bool loads_outside_steps() const { return false; }
};

}  // namespace kappasim
