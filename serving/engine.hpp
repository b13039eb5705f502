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
#include <memory>
#include <string>
#include <vector>

#include "core/trace_writer.hpp"
#include "interconnects/link_model.hpp"
#include "serving/arrivals.hpp"
#include "serving/cxl_pool_share.hpp"
#include "serving/engine_check.hpp"
#include "serving/engine_stats.hpp"
#include "serving/engine_trace.hpp"
#include "serving/handoff.hpp"
#include "serving/kv_pull.hpp"
#include "serving/kv_store.hpp"
#include "serving/metrics.hpp"
#include "serving/rank.hpp"
#include "serving/rank_view.hpp"
#include "serving/replica_step.hpp"
#include "serving/request_cost.hpp"
#include "serving/request_ledger.hpp"
#include "serving/run_spec.hpp"
#include "serving/step_model.hpp"
#include "workloads/request.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {

class StepGroup;  // serving/step_group.hpp

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
  KvPull::SendKv send_kv;  // a Decode engine's: the prefill side of a pull (kv_pull.hpp)
  KvPull::SourceLayout source_layout;  // a Decode engine's: how that prefill rank holds the KV
  // P/D push_layer: a Prefill engine's decode side of each send and its call when a request's
  // last layer has arrived; a Decode engine's wait for request `id`'s last layer (its bytes).
  KvPush::Receive receive_kv;
  KvPush::OnPushed on_pushed;
  std::function<double(std::uint64_t id)> wait_pushed;
  std::function<void(std::uint64_t id)> on_reject;
  // P/D, a Decode engine with its own KV tier (cluster.nodes[].decode_tier; docs/disaggregation.md
  // "A decode node's KV tier"): it stores the chunks its decode steps fill (with the stack's
  // store_decode), the pulled prompt's when `decode_tier_prompt` (decode_tier_stores_prompt), and
  // its preempted requests look their prompt and generated tokens up in it. False: it neither
  // looks up nor stores.
  bool decode_tier = false;
  bool decode_tier_prompt = false;
  // Issue 25: the cluster's CXL pool, shared with the other nodes (its KV level and its device
  // bandwidth); null: a system with a pool keeps one of its own (its ranks share it).
  CxlPoolShare* cxl_pool = nullptr;
};

// The engine composed of its parts (issue 21), each in its own file with its own header:
//  - the front end (serving/arrivals): the workload stream, closed-loop clients, the rank router,
//    the KV stores' warm-up; it hands each arrival to the engine's admission (admit);
//  - the per-request ledger (serving/request_ledger): one RequestState per live request;
//  - the ranks (serving/rank) and what a router reads of them (serving/rank_view);
//  - the step groups (serving/step_group) with their step models (serving/step_model);
//  - the loads outside the steps: P/D pulls and async tier loads (serving/kv_pull);
//  - the trace (serving/engine_trace) and the invariant checks (serving/engine_check).
// The engine builds them, admits arrivals, finishes requests into the sinks and totals the run.
class ServingEngine : public sc_core::sc_module {
 public:
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
  const LinkModule& link() const { return *m_link; }  // the link back end
  // Before the simulation: a run that will not call check_end(), whose link back end then keeps
  // no conservation ledger (LinkModel::track_conservation; issue 24).
  void unchecked() { m_link->track_conservation(false); }
  const RunSpec& spec() const { return m_spec; }
  const ReplicaLayout& layout() const { return m_layout; }
  // Compute steps started on a GPU while one of its copy kernels held SMs (so they ran on fewer
  // SMs), and copy kernels started: on today's load paths the first is 0 (issue 13).
  std::uint64_t compute_steps_on_fewer_sms() const { return m_layout_stats.steps_on_fewer_sms; }
  std::uint64_t copy_kernels_started() const;
  // Live state, for a router deciding at an arrival (serving/cluster): the requests in the
  // engine and what its ranks' KV pools and stores hold now (serving/rank_view.hpp).
  const RankView& ranks() const { return m_view; }
  // Invariants at the end of the run (RunSpec::check; serving/engine_check.hpp).
  void check_end() const;
  // P/D, a Decode engine with its tier (EngineSinks::decode_tier): its preempted requests' lookups
  // and the tokens they found (loaded instead of recomputed).
  std::uint64_t relookups() const { return m_relookups; }
  std::int64_t reloaded_tokens() const { return m_reloaded_tokens; }
  // P/D, a Prefill engine: the decode instance has pulled request `id`'s KV; its blocks are freed.
  void release_kv(std::uint64_t id);
  // P/D, a Prefill engine: `gpu_bytes[k]` of request `id`'s KV leave GPU k of the rank holding
  // it through its NIC port (Endpoint::Remote, GPUDirect RDMA; the re-shard decides them,
  // serving/kv_pull), all together no faster than `rate_cap_Bps` (0: no cap); returns the
  // started group. `nvlink_base` >= 0: the decode GPUs share this host, past this engine's own
  // from GPU nvlink_base; the bytes leave over NVLink (Endpoint::PeerGpu).
  // P/D push_layer, a Decode engine: the receiving side of one layer's send (KvPush::receive on
  // its one rank).
  std::shared_ptr<CopyGroup> receive_kv(const std::vector<double>& gpu_bytes, double rate_cap_Bps);
  std::shared_ptr<CopyGroup> send_kv(std::uint64_t id, const std::vector<double>& gpu_bytes,
                                     double rate_cap_Bps, int nvlink_base = -1);

 private:
  // The parts, built in this order by the constructor.
  void make_gpus();
  void make_ranks();
  void make_groups();
  void make_stores();
  // Admission of an arrival (the front end routed it to rank `rank`): its KV lookup in the
  // rank's store, partial recompute, and its queue; false when it cannot run (InputError through
  // sim_fail; the stream ends).
  bool admit(const Request& r, std::size_t rank, double front_end_in_s);
  void finish(Sequence* s);  // a request finished or was rejected: records it, drops its state
  // P/D, a Decode engine with its tier: preempted sequence s of rank `rank` looks its prompt and
  // generated tokens up in the rank's KV store (Scheduler::set_relookup).
  void relookup(Sequence& s, std::size_t rank);

  const RunSpec m_spec;
  EngineSinks m_sinks;
  RecomputeChooser m_recompute;  // serving.recompute at admission
  int m_tier_chunk = 0;          // serving.tier_chunk_tokens(), asked once (issue 24)
  ReplicaLayout m_layout;        // plain TP: one rank of serving.tp GPUs
  // KV bytes per token one GPU of a rank holds and moves (serving.kv_cache: hybrid, the full
  // layers', the unit a load's and the pool's tokens count in), a stored chunk's, replication.
  ServedKv m_kv;
  std::unique_ptr<LinkModule> m_link;             // serving.link_fidelity's back end, every node
  std::unique_ptr<CxlPoolShare> m_own_pool;       // issue 25: a pool outside a cluster
  std::unique_ptr<LoadPathStrategy> m_load_path;  // serving.load_path's strategy
  std::string m_load_path_name;  // its name(), asked once (issue 24: no string per finish)
  std::vector<std::unique_ptr<GpuUnit>> m_gpus;
  std::vector<std::unique_ptr<Rank>> m_ranks;
  std::vector<std::unique_ptr<StepGroup>> m_groups;
  RequestLedger m_ledger;  // arrived, not finished: one state per request
  // admit()'s chunk keys: its buffer is kept when the request is parked without them (issue 24:
  // no allocation per arrival then).
  std::vector<std::uint64_t> m_admit_keys;
  // finish()'s record, reused (issue 24: its strings keep their buffers; no allocation per
  // finished request). The sinks read it during finish() only.
  RequestRecord m_record;
  RankView m_view;  // m_ranks and m_ledger as routers see them
  std::unique_ptr<Arrivals> m_arrivals;
  std::unique_ptr<KvPull> m_pull;  // P/D pulls and pushes, async loads, one stream per rank
  std::unique_ptr<EngineTrace> m_trace;
  EngineCheck m_check;                 // invariant bookkeeping (RunSpec::check)
  EngineStats m_stats;                 // counters; the groups' figures at the end
  LayoutStats m_layout_stats;          // the step models' figures (every group's)
  sc_core::sc_event m_work;            // an arrival, a finish, a freed block: a group may step
  std::uint64_t m_relookups = 0;       // P/D decode tier: preempted requests' lookups
  std::int64_t m_reloaded_tokens = 0;  // and the tokens they found
};

// kv_buffer_bandwidth (the GPU-side KV buffer's copy rate): serving/serving_spec.hpp.
// estimate_recompute, choose_recompute_tokens: serving/request_cost.hpp.

// Runs a whole `kappasim run`-style simulation (one per process) and returns the engine's
// totals; sinks receive the per-request records.
SummaryBuilder::Totals run_serving(const RunSpec& spec, WorkloadSource& source, EngineSinks sinks);

}  // namespace kappasim
