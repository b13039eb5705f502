// A step group of the serving engine (issue 21; internal to serving/engine.cpp and
// serving/step_group.cpp): the ranks that step together, and the load path strategies' context
// (serving/load_paths/load_path.hpp) on their GPUs. Plain TP: one group of one rank. A dense
// model's DP ranks: one group each (they step independently). A MoE model's DP ranks: one group
// (lockstep: a rank with no work runs a dummy batch, the step lasts the slowest rank's).
//
// A step: every rank's scheduler plans (their CPU work in parallel: the step waits for the
// slowest); the newly admitted requests' cached KV is split by source (GPU-side buffer, DRAM,
// lower tiers); the load path strategy moves it and runs the step model's compute, overlapped
// or not; then the finishing requests' new chunks are stored, blocking or async.
//
// With several ranks in a group (lockstep), the strategy sees the group's bytes added up, and
// per-GPU figures as their mean: start_copies gives each rank's GPUs its own share (its link
// tokens of the step), and a copy group ends when every rank's copies have. Every rank's
// process issues its own requests and chunks at once, so the stack's CPU costs are those of the
// busiest rank's counts (requests, chunks, blocks), and so are the copy counts the strategy
// passes (each rank's scaled by its tokens over the busiest rank's).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "serving/engine.hpp"
#include "serving/step_plan.hpp"

namespace kappasim {

class ServingEngine::Group final : public LoadContext {
 public:
  // `gpu_share`: the group's GPUs over the engine's (its weight in per-GPU run figures).
  Group(ServingEngine& e, std::vector<Rank*> ranks, std::unique_ptr<StepModel> model,
        double gpu_share);
  void steps();  // the group's process
  // serving.stack.load: async: request st's cached KV loaded from the tier outside the steps by
  // the load path strategy (its CPU costs and copies, no compute), with its load time, link tokens
  // and bounds in st and its bytes in the group's figures; the step's own breakdown untouched.
  void load_async(RequestState& st);
  // Whether the engine loads st's cached KV that way: the stack loads async and st has some
  // (the engine refuses the settings an async load cannot take part in: KvPull::check_async).
  static bool loads_async(const ServingSpec& sv, const RequestState& st);

  std::vector<Rank*> ranks;
  EngineStats stats;  // its figures per GPU (steps counted)
  double gpu_share = 1;
  // Per-GPU mean of the ranks' KV bytes per token (B_kv_gpu / pp) over the engine's: the
  // KvStore's weight for per-GPU figures (1 / (ranks x pp)).
  double store_weight() const;

  // LoadContext (serving/load_paths/load_path.hpp).
  double now() const override;
  void wait(double s) override;
  void start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t units, CopyPath path) override;
  void wait_copies(CopyGroup& c) override;
  CopySplit split_copies(const CopyGroup& c, double t_start) const override;
  void compute(const StepTime& st) override;
  void start_compute(CopyGroup& c, double compute_s, double hbm_bytes) override;
  double buffer_copy_s(const LoadSplit& ls) const override;
  void trace_copies(const CopyGroup& c, const std::string& what) override;
  void trace_load(const std::string& what, double t0, double t1) override;
  void trace_link(const std::string& what, double t0, double t1) override;
  void trace_compute(double t0, double t1) override;

 private:
  void run_step(const std::vector<StepPlan>& plans);
  double store_phase(const std::vector<std::vector<RequestState*>>& done);
  void check_step(double start_s);
  // serving.replicated_kv: shard_allgather (issue 23 item 5): after c's shards (issued into
  // c.shards), every GPU of each all-gather group sends the r - 1 shards it forwards to its ring
  // neighbour over NVLink (PeerGpu transfers into the fabric); c.g ends when they have.
  void start_gather(CopyGroup& c);
  void run_gather(CopyGroup& c);  // the process that waits for the shards and gathers them

  ServingEngine& m_e;
  std::unique_ptr<StepModel> m_model;
  std::vector<LoadBound> m_resource_bound;             // per Topology resource
  TimeBreakdown m_step_time;                           // the running step's categories
  LoadBoundTimes m_step_bounds;                        // the running step's load, per bound
  std::vector<double> m_link_tokens, m_buffer_tokens;  // the running step's, per rank
  double m_last_step_end_s = 0;
  bool m_peer_fabric = false;  // the link back end carries PeerGpu transfers (flow: NVLink)
};

}  // namespace kappasim
