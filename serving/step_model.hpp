// How a step computes (issue 21): the step model interface of the serving engine and its two
// implementations. A step model times a step group's batches (one per rank; serving/
// step_group.hpp) and issues that compute on the group's GPUs, non-blocking, so a load path
// (serving/load_paths) can overlap it with the step's loads, whole or a layer at a time.
//  - tp: one tensor-parallel rank (kernel_timing's batch_step_time): every GPU of the rank runs
//    the step as one HBM Local flow (GpuCompute::start_step), sharing HBM with copies in flight,
//    at the SM fraction copy kernels leave;
//  - layout: DP-attention ranks in lockstep, EP, PP (serving/replica_step's cost): per stage the
//    slowest rank's non-expert kernels and the routed experts as HBM Local flows on the stage's
//    GPUs, the EP dispatch / combine all-to-all and the PP activations as PeerGpu transfers
//    through the link back end (NVLink and NIC ports; with the packet back end, which carries
//    host links only, replica_step's per-port times are waited instead). With pipeline stages,
//    pp steps are in flight at once (vLLM's batch queue): each stage runs one micro-batch at a
//    time, in the order they reach it, and hands its activations to the next stage, so the
//    steady-state period is the slowest stage's time, not the stages' sum.
//    A fraction f of the step (one layer's share) scales every phase by f. The step's HBM bytes
//    are spread over the stages' compute phases in proportion to their time (a stage's GPUs
//    move their stage's share of them). A step that loads KV runs each stage as a run of its
//    own (StepRun::stage), its load path per stage (serving/step_group.hpp).
//    A micro-batch's wait for a stage busy with another is counted apart (take_wait_s), not
//    as compute.
// SystemC (serving_sim layer).
#pragma once

#include <systemc>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/gpu/kernel_timing.hpp"
#include "serving/rank.hpp"
#include "serving/replica_step.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

// The layout step's run figures (summary.json "Replica figures", docs/metrics.md).
struct LayoutStats {
  double local_s = 0, expert_s = 0, a2a_s = 0, pp_s = 0;  // Σ over steps, as simulated
  double a2a_port_bound_s = 0;  // Σ of replica_step's per-port a2a time (a lower bound)
  double peer_transfers = 0;    // PeerGpu transfers issued into the fabric (a2a, PP)
  double a2a_nvlink_bytes = 0, a2a_nic_bytes = 0, pp_bytes = 0;
  double rank_idle_s = 0;       // Σ over steps of the mean rank's wait for the slowest
  double dummy_rank_steps = 0;  // rank-steps run as a dummy batch (lockstep only)
  double stage_wait_s = 0;      // Σ over micro-batches of the time waiting for a busy stage
  // Every step group's steps (serving/step_group.hpp), whatever its step model:
  std::vector<double> rank_tokens;  // per rank: Σ of the tokens it computed
  double rank_steps = 0;            // Σ over group steps of the ranks in the group
  double group_steps = 0;           // group steps
  double max_rank_tokens = 0;       // Σ over group steps of the busiest rank's tokens
  double lockstep_max_tokens = 0;   // Σ over group steps of busiest x ranks in the group
  // Compute steps started on a GPU while one of its copy kernels held SMs (issue 13).
  std::uint64_t steps_on_fewer_sms = 0;
  // The ranks' KV-store hit rates, lowest and highest (NaN: no rank looked anything up); the
  // engine sets them from its stores at the end of the run.
  double rank_hit_rate_min = std::numeric_limits<double>::quiet_NaN();
  double rank_hit_rate_max = std::numeric_limits<double>::quiet_NaN();
};

// The layout's figures for summary.json (after the engine's own), from the step groups' stats.
std::vector<std::pair<std::string, double>> layout_figures(const LayoutStats& s,
                                                           const ReplicaLayout& L);

// One step's compute as its step model timed it (per GPU: time, FLOPs, HBM bytes; first and
// last layer times for the layer-wise pipeline), and how it runs.
class StepRun {
 public:
  virtual ~StepRun() = default;
  // Starts `compute_s` of the timed step (all of it, or a layer's share) moving `hbm_bytes`
  // through each GPU's HBM; non-blocking: c.g ends when it does.
  virtual void start(CopyGroup& c, double compute_s, double hbm_bytes) = 0;
  // Pipeline stages (issue 21): a step that loads KV runs its load path once per stage, each
  // stage's workers loading their own layers. stages(): the step's stages (1: none);
  // stage(s): stage s's share of the step as a run of its own (its time: the stage's, its
  // start() runs stage s only, after the previous stage's activations); wait_launched(s): waits
  // until stage s's worker has launched the last part of its forward of this step (the next
  // stage's worker receives the micro-batch then).
  virtual int stages() const { return 1; }
  virtual std::unique_ptr<StepRun> stage(int /*s*/) { return nullptr; }
  virtual void wait_launched(int /*s*/) {}
  // A stage's run: whether its worker's KV loads are in flight (its load path's copy groups
  // started and not yet waited for). Its worker has launched its forward once every part of it
  // has started and no load is in flight (vLLM's wait_for_layer_load blocks the worker's CPU).
  virtual void set_loading(bool /*loading*/) {}
  StepTime time;
  // Inside the time start() took but not compute: waiting for a pipeline stage busy with another
  // micro-batch (take), and a stage's run waiting for the previous stage's activations (arrival).
  double take_wait_s = 0, arrival_wait_s = 0;
};

class StepModel {
 public:
  virtual ~StepModel() = default;
  // The step's compute over the group's batches (one per rank, in group order); `batches` must
  // outlive the returned run's start() calls.
  virtual std::unique_ptr<StepRun> time(const std::vector<std::vector<SeqSlice>>& batches) = 0;
  // Steps in flight at once: the pipeline stages (vLLM's max_concurrent_batches), else 1.
  virtual int concurrent_batches() const { return 1; }
};

// `stats.steps_on_fewer_sms` counts steps started while a copy kernel held SMs.
std::unique_ptr<StepModel> make_tp_step(const RunSpec& spec, const RankGpus& rank,
                                        LayoutStats& stats);
// `L`: the group's layout (dp = its ranks); `ranks`: its ranks' GPUs in group order.
std::unique_ptr<StepModel> make_layout_step(const RunSpec& spec, const ReplicaLayout& L,
                                            std::vector<const RankGpus*> ranks, LinkModule& link,
                                            LayoutStats& stats);

}  // namespace kappasim
