// A step group of the serving engine (issue 21): the ranks that step together, with their step
// model, and the load path strategies' context (serving/load_paths/load_path.hpp) on their GPUs.
// Plain TP: one group of one rank. A dense model's DP ranks: one group each (they step
// independently). A MoE model's DP ranks: one group (lockstep: a rank with no work runs a dummy
// batch, the step lasts the slowest rank's). What it uses of its engine is StepGroupEnv.
//
// A step: every rank's scheduler plans (their CPU work in parallel: the step waits for the
// slowest); the newly admitted requests' cached KV is split by source (GPU-side buffer, DRAM,
// lower tiers); the load path strategy moves it and runs the step model's compute, overlapped
// or not; then the finishing requests' new chunks are stored, blocking or async.
//
// Micro-batches in flight (pipeline stages; vLLM v1's EngineCore.step_with_batch_queue, its
// batch queue of max_concurrent_batches = the pipeline-parallel size): the group's process is
// the engine core. While fewer than StepModel::concurrent_batches() steps are in flight it plans
// and launches another (its scheduler CPU in the process, its loads, compute and stores in a
// process of its own, the step model holding each stage for one micro-batch at a time); when the
// queue is full or nothing more can be planned it waits for the oldest step and completes it.
// A request in a step in flight is planned again only once that step has completed
// (Sequence::in_batch). With one batch at a time a step runs in the group's process.
//
// Pipeline stages (a layout with pp > 1): a step that loads runs the load path once per stage, as
// vLLM's PP workers do (each stage's worker runs its KV connector's start_load_kv /
// wait_for_layer_load for its own layers): stage s's loads move only its GPUs' share (its layers'
// KV, GpuUnit::kv_share), start when stage s - 1's worker has launched its forward of the step
// (every part started and its loads waited for; the micro-batch's metadata reaches stage s then),
// and its compute runs when its loads (or, layer by layer, each layer's) and stage s - 1's
// activations are there, so a stage's loads overlap the earlier stages' compute and the layer-wise
// pipeline fills and drains per stage. The step's time breakdown: stage 0's own, then each later
// stage's time beyond the one before (its exposed load, its wait for a busy stage, its compute).
// Docs: docs/parallelism.md "KV loads on pipeline stages".
//
// With several ranks in a group (lockstep), the strategy sees the group's bytes added up, and
// per-GPU figures as their mean: start_copies gives each rank's GPUs its own share (its link
// tokens of the step), and a copy group ends when every rank's copies have. Every rank's
// process issues its own requests and chunks at once, so the stack's CPU costs are those of the
// busiest rank's counts (requests, chunks, blocks), and so are the copy counts the strategy
// passes (each rank's scaled by its tokens over the busiest rank's).
#pragma once

#include <systemc>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serving/engine_stats.hpp"
#include "serving/engine_trace.hpp"
#include "serving/kv_pull.hpp"
#include "serving/kv_push.hpp"
#include "serving/load_paths/load_path.hpp"
#include "serving/metrics.hpp"
#include "serving/rank.hpp"
#include "serving/replica_step.hpp"
#include "serving/request_ledger.hpp"
#include "serving/step_model.hpp"
#include "serving/step_plan.hpp"

namespace kappasim {

// What a step group uses of its engine, and nothing else.
struct StepGroupEnv {
  const RunSpec& spec;
  const ServedKv& kv;
  const ReplicaLayout& layout;
  LinkModule& link;
  LoadPathStrategy& load_path;
  RequestLedger& ledger;
  LayoutStats& layout_stats;  // the layout's figures, every group's steps
  EngineTrace& trace;
  KvPull& pull;             // P/D pulls and async loads
  SummaryBuilder* summary;  // may be null
  sc_core::sc_event& work;  // an arrival, a finish, a freed block: a group may step
  std::function<bool()> arrivals_done;
  std::function<void(Sequence*)> finish;  // a request finished or was rejected
  KvPush* push;              // P/D push_layer: a prefill engine's layer sends (else null)
  DecodeStores pd_stores{};  // P/D, a decode engine: what it stores (serving/step_plan)
};

class StepGroup {
 public:
  // `gpu_share`: the group's GPUs over the engine's (its weight in per-GPU run figures).
  StepGroup(const StepGroupEnv& env, std::vector<Rank*> ranks, std::unique_ptr<StepModel> model,
            double gpu_share);
  ~StepGroup();
  void steps();  // the group's process: the engine core
  // serving.stack.load: async: request st's cached KV loaded from rank's KV store outside the
  // steps by the load path strategy (its CPU costs and copies, no compute), with its load time,
  // link tokens and bounds in st and its bytes in the group's figures; the steps' breakdowns
  // untouched.
  void load_async(RequestState& st, const Rank& rank);
  // Whether the engine loads st's cached KV that way: the stack loads async and st has some
  // (the engine refuses the settings an async load cannot take part in: KvPull::check_async).
  static bool loads_async(const ServingSpec& sv, const RequestState& st);

  std::vector<Rank*> ranks;
  EngineStats stats;  // its figures per GPU (steps counted)
  double gpu_share = 1;
  double buffer_Bps = 0;  // the ranks' KV stores' GPU-side buffer copy rate (set by the engine)
  // Per-GPU mean of the ranks' KV bytes per token (B_kv_gpu / pp) over the engine's: the
  // KvStore's weight for per-GPU figures (1 / (ranks x pp)).
  double store_weight() const;

 private:
  class Context;  // a step's (or an async load's) LoadContext
  struct Step;    // a step: its plans, context and figures
  void begin(Step& b);
  void execute(Step& b);
  // Async tier loads and P/D pulls (KvPull::step_handoff; docs/serving-stacks.md "When an async
  // load's request runs"): the worker starts the loads of the requests a step parked (vLLM:
  // start_load_kv, as its forward starts), and at a step's end reports the loads done since the
  // last (get_finished: the scheduler takes those requests into its next step).
  void start_loads(Step& b);
  void poll_loads();
  // An engine iteration that schedules no token while requests wait for their loads: the
  // stack's empty_step, then its worker's start_loads and poll_loads.
  void empty_step(Step& b);
  bool parked() const;  // a rank has requests waiting for their async loads
  // A loading step with pipeline stages: the load path once per stage (StepRun::stage), each
  // stage's in a process of its own; returns the step's load time. See step_group.cpp.
  double load_by_stage(Step& b, const LoadSplit& all, std::int64_t requests);
  const RunSpec& stage_spec(int s, int layers);
  // P/D push_layer: ctx's compute of compute_s starts now; queue the sends of the layers it
  // computes for the requests whose prompt's last chunk is in the step (KvPush::computed).
  void push_layers(Context& ctx, double compute_s);
  void end(Step& b);
  void store_phase(Context& ctx, const std::vector<std::vector<RequestState*>>& done,
                   const std::vector<std::vector<RequestState*>>& decoded);
  void check_step(double start_s);
  // serving.replicated_kv: shard_allgather (issue 23 item 5): after c's shards (issued into
  // c.shards), every GPU of each all-gather group sends the r - 1 shards it forwards to its ring
  // neighbour over NVLink (PeerGpu transfers into the fabric); c.g ends when they have.
  // Hybrid KV: `gather_share` of each GPU's host bytes is replicated KV (the rest its state).
  void start_gather(CopyGroup& c, double gather_share = 1);
  // Hybrid KV (issue 25): c's bytes for `all` by layer kind: a stage's share of them
  // (Context::kv_scale), and with sharded replicated KV its host bytes per token and the share
  // of them all-gathered. Nothing for unified KV.
  void hybrid_load(Context& c, const LoadSplit& all) const;
  void run_gather(CopyGroup& c);  // the process that waits for the shards and gathers them

  StepGroupEnv m_env;
  std::unique_ptr<StepModel> m_model;
  std::vector<LoadBound> m_resource_bound;     // per Topology resource
  std::deque<std::unique_ptr<Step>> m_flight;  // steps in flight, oldest first
  // An iteration that planned nothing leaves its Step here for the next (issue 24: a stack's
  // empty steps repeat every empty_step while loads are parked, and a Step holds an sc_event).
  std::unique_ptr<Step> m_spare;
  std::vector<Sequence*> m_finished;   // a rank's finished sequences, one buffer (issue 24)
  sc_core::sc_time m_empty_step_time;  // the stack's empty_step as an sc_time (zero: not yet)
  double m_last_step_end_s = 0;
  bool m_peer_fabric = false;  // the link back end carries PeerGpu transfers (flow: NVLink)
  std::vector<std::unique_ptr<RunSpec>> m_stage_spec;  // per stage: the spec, its layers only
  // Compute copy groups not in use (Context::compute takes one and gives it back): their
  // requests' vectors and events reused step after step (issue 24: no allocation per flow).
  std::vector<std::unique_ptr<CopyGroup>> m_compute_groups;
};

}  // namespace kappasim
