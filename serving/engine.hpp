// The serving engine: one model replica serving offloaded prefill on the SystemC timing models,
// whatever its layout (issue 21: one engine, composed of parts). Requests arrive from a
// WorkloadSource and are routed to a rank (serving/rank.hpp: a TP group of GPUs x its pipeline
// stages, with its own scheduler, paged KV pool and KV store); their prompt's chunks are looked
// up in the rank's KV store (serving/kv_store.hpp: the LMCache-like DRAM tier and the levels
// below it, prefix identity); a vLLM v1-like scheduler forms steps under the token budget and
// the VRAM limit; each step loads the cached KV of newly admitted requests over the host links
// by the configured load path (serving/load_paths: kernel, layerwise, block_dma), computes the
// batch by the step model (serving/step_model.hpp: one TP rank, or DP-attention / EP / PP), stores
// the new KV back and finishes the requests whose prefill completed (TTFT = the end of that
// step: prefill only, one output token).
//
// Step groups (serving/step_group.hpp): the ranks that step together. Plain TP is one group of
// one rank. DP-attention ranks of a dense model step independently, each its own group (vLLM
// runs a dense model's DP ranks as separate engine cores); those of a MoE model step in lockstep
// in one group, an idle rank running a dummy batch (vLLM: its MoE layers need every rank).
//
// Granularity (ServingSpec::granularity): `step` simulates a step's load as one flow per GPU and
// its compute as one flow per GPU, with the layer-wise pipeline's fill and drain from per-layer
// times; `layer` simulates every layer's load and compute. Nothing is simulated per token.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/trace_writer.hpp"
#include "interconnects/link_model.hpp"
#include "serving/closed_loop.hpp"
#include "serving/engine_stats.hpp"
#include "serving/handoff.hpp"
#include "serving/kv_store.hpp"
#include "serving/metrics.hpp"
#include "serving/rank.hpp"
#include "serving/replica_step.hpp"
#include "serving/request_cost.hpp"
#include "serving/request_state.hpp"
#include "serving/router_policy.hpp"
#include "serving/run_spec.hpp"
#include "serving/step_model.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

struct EngineSinks {
  RequestsCsvWriter* requests = nullptr;  // may be null
  TraceWriter* trace = nullptr;           // may be null
  SummaryBuilder* summary = nullptr;      // may be null
  // Called for every finished request (measure commands use it); may be empty.
  std::function<void(const RequestRecord&)> on_finish;
  // warm_tier: a fresh copy of the workload's request stream, read once before the run to
  // pre-populate the tier. Empty: each prefix is placed in the tier at its first use only (a
  // document never seen before counts as pre-populated).
  std::function<std::unique_ptr<WorkloadSource>()> warm_source;
  // P/D disaggregation (the cluster sets them): the engine's role; a Decode engine's pulls
  // (how, and a call when request `id`'s pull of `bytes` ran from start_s to end_s: the prefill
  // instance may then release its copy); any role's rejected requests. Empty: not called.
  EngineRole role = EngineRole::Mixed;
  HandoffSpec handoff;
  std::function<void(std::uint64_t id, double start_s, double end_s, double bytes)> on_pulled;
  std::function<void(std::uint64_t id)> on_reject;
};

class ServingEngine : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ServingEngine);
  // Validates everything that can be wrong with the inputs (InputError) before simulating.
  ServingEngine(const sc_core::sc_module_name& name, const RunSpec& spec, WorkloadSource& source,
                EngineSinks sinks);
  ~ServingEngine() override;

  // After the simulation.
  SummaryBuilder::Totals totals(double wall_time_s) const;
  const EngineStats& stats() const { return m_stats; }  // arrived, finished, rejected
  // Rank r's KV store, DRAM tier and paged KV pool (rank 0 by default).
  const KvStore& store(std::size_t r = 0) const { return *m_ranks.at(r)->store; }
  const KvTier& tier() const { return store().dram(); }
  const PagedKv& gpu_kv() const { return *m_ranks.at(0)->kv; }
  double kv_bytes_per_token_gpu() const { return m_bkv_gpu; }
  const LinkModule& link() const { return *m_link; }  // the link back end
  const RunSpec& spec() const { return m_spec; }
  const ReplicaLayout& layout() const { return m_layout; }
  // Compute steps started on a GPU while one of its copy kernels held SMs (so they ran on fewer
  // SMs), and copy kernels started: on today's load paths the first is 0 (issue 13).
  std::uint64_t compute_steps_on_fewer_sms() const { return m_on_fewer_sms; }
  std::uint64_t copy_kernels_started() const;
  // Live state, for a router deciding at an arrival (serving/cluster, the rank router): requests
  // arrived and not finished, their prompt tokens still to prefill, the cached tokens of those
  // not yet admitted (whose load is still ahead); rank r's alone, or every rank's (r < 0).
  std::size_t outstanding(int r = -1) const;
  std::int64_t outstanding_compute_tokens(int r = -1) const;
  std::int64_t pending_load_tokens(int r = -1) const;
  std::size_t waiting(int r = -1) const;  // in the schedulers' waiting queues
  // Tokens of r's prompt rank `rank`'s KV store holds now (leading whole chunks of its DRAM tier;
  // with warm_tier the reusable prefix counts as held, as arrivals place it; at most the prompt
  // less one), or the most any rank holds (rank < 0).
  std::int64_t cached_tokens(const Request& r, int rank = -1) const;
  // KV tokens the running requests hold in the paged pools, the pools' size in tokens, and the
  // bytes the KV stores' DRAM tiers hold: rank r's, or every rank's (r < 0).
  std::int64_t kv_tokens_used(int r = -1) const;
  std::int64_t kv_tokens_total(int r = -1) const;
  double store_bytes(int r = -1) const;
  // Invariants at the end of the run (RunSpec::check): every arrived request finished exactly
  // once or was rejected, nothing is left in the system (no KV block held), links conserved bytes.
  void check_end() const;
  // P/D, a Prefill engine: the decode instance has pulled request `id`'s KV; its blocks are freed.
  void release_kv(std::uint64_t id);

 private:
  class Group;  // a step group: serving/step_group.hpp
  void arrivals();
  std::size_t route(const Request& r);
  void enqueue(RequestState& st);  // into its rank's scheduler (InputError: sim_fail)
  void finish(Sequence* s);
  Group& group_of(const Rank& rank) const;  // the step group the rank steps in
  void pull(Rank& rank, Sequence* s);       // P/D, a Decode engine: one request's pull (a process)

  const RunSpec m_spec;
  WorkloadSource& m_source;
  EngineSinks m_sinks;
  ReplicaLayout m_layout;  // plain TP: one rank of serving.tp GPUs
  // KV bytes per token one GPU of a rank holds (all layers; serving.kv_cache: hybrid, the full
  // layers', the unit a load's and the pool's tokens count in: served_kv_unit_per_gpu).
  double m_bkv_gpu = 0;
  double m_store_bkv_gpu = 0;        // per token of a stored chunk (served_kv_store_per_gpu)
  std::optional<HybridKv> m_hybrid;  // serving.kv_cache: hybrid (issue 25)
  // serving.replicated_kv: shard_allgather: the copies r of each token's KV in a TP group
  // (kv_replication_factor) whose host loads are sharded and all-gathered; 1: each rank loads its
  // own (each_rank, or nothing replicated).
  int m_kv_r = 1;
  std::unique_ptr<LinkModule> m_link;  // serving.link_fidelity's back end, every node
  std::vector<std::unique_ptr<GpuUnit>> m_gpus;
  std::vector<std::unique_ptr<Rank>> m_ranks;
  std::vector<std::unique_ptr<Group>> m_groups;
  std::unique_ptr<RouterPolicy> m_router;  // serving.parallelism.router (ranks > 1)
  // Arrived, not finished: one state per request, dropped in finish() (serving/request_state).
  std::map<std::uint64_t, RequestState> m_live;
  std::unique_ptr<LoadPathStrategy> m_load_path;  // serving.load_path's strategy
  RecomputeChooser m_recompute;                   // serving.recompute at arrival
  EngineStats m_stats;                            // counters; the groups' figures at the end
  LayoutStats m_layout_stats;                     // the layout step's figures
  std::uint64_t m_on_fewer_sms = 0;
  struct Trace {
    int step = -1, load = -1, store = -1;
    std::map<int, int> gpu_compute, gpu_link;  // by fabric GPU
    LaneAssigner lanes;                        // trace.json: non-overlapping request lanes
  } m_trace;
  struct Check {  // invariant bookkeeping (RunSpec::check)
    std::set<std::uint64_t> done;
    double last_finish_s = 0;
  } m_check;
  sc_core::sc_event m_work;
  bool m_source_done = false;
  // workload.concurrency > 0: the closed-loop clients (serving/closed_loop.hpp); else null. A
  // cluster's nodes have none: the cluster's router holds them (serving/cluster.cpp).
  std::unique_ptr<ClientPool> m_clients;
  // Async loads and P/D pulls, one at a time per rank: its worker issues one request's copies
  // (posts its descriptors) after another on one stream (ServingEngine::pull).
  std::vector<std::unique_ptr<sc_core::sc_mutex>> m_load_stream;
};

// kv_buffer_bandwidth (the GPU-side KV buffer's copy rate): serving/serving_spec.hpp.
// estimate_recompute, choose_recompute_tokens: serving/request_cost.hpp.

// Runs a whole `kappasim run`-style simulation (one per process) and returns the engine's
// totals; sinks receive the per-request records.
SummaryBuilder::Totals run_serving(const RunSpec& spec, WorkloadSource& source, EngineSinks sinks);

}  // namespace kappasim
