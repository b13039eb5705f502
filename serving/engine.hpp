// The serving engine: one tensor-parallel group of GPUs serving offloaded prefill, on the
// SystemC timing models. Requests arrive from a WorkloadSource; their prompt's chunks are looked
// up in the LMCache-like CPU tier (prefix identity); a vLLM v1-like scheduler forms steps under
// the token budget and the VRAM limit; each step loads the cached KV of newly admitted requests
// over the host links (every GPU its own shard, all sharing the host DRAM and socket links),
// computes the batch layer by layer, stores the new KV back to the tier, and finishes the
// requests whose prefill completed (TTFT = the end of that step: prefill only, one output token).
//
// Load paths (ServingSpec::load_path):
//  - kernel: LMCache's default: a copy kernel on the GPU's SMs reads pinned host memory
//    (zero-copy), before the forward pass (LMCache's retrieve blocks the step);
//  - layerwise: LMCache's use_layerwise: per layer a DMA of that layer's slice of every chunk,
//    overlapped with the compute of the previous layer;
//  - block_dma: vLLM's native OffloadingConnector: cudaMemcpyAsync of 16-token blocks contiguous
//    across layers, before the request computes (simplification: the load is part of the step in
//    which the request is first scheduled; vLLM overlaps it with other requests' steps).
// The tier's CPU-side software costs (per request, per chunk) are part of load and store times.
//
// Granularity (ServingSpec::granularity): `step` simulates a step's load as one flow per GPU
// and its compute as one wait, with the layer-wise pipeline's fill and drain from per-layer
// times; `layer` simulates every layer's load and compute. Nothing is simulated per token.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/trace_writer.hpp"
#include "interconnects/link_model.hpp"
#include "models/gpu/copy_engine.hpp"
#include "models/gpu/gpu_compute.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "models/llm/architecture.hpp"
#include "serving/engine_stats.hpp"
#include "serving/kv_hierarchy.hpp"
#include "serving/kv_tier.hpp"
#include "serving/load_paths/load_path.hpp"
#include "serving/metrics.hpp"
#include "serving/paged_kv.hpp"
#include "serving/request_cost.hpp"
#include "serving/request_state.hpp"
#include "serving/run_spec.hpp"
#include "serving/scheduler.hpp"
#include "serving/serving_spec.hpp"
#include "serving/step_plan.hpp"
#include "serving/time_breakdown.hpp"
#include "systems/system_spec.hpp"
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
  // pre-populate the tier (ServingSpec::warm_tier). Empty: each prefix is placed in the tier
  // at its first use only (a document never seen before counts as pre-populated).
  std::function<std::unique_ptr<WorkloadSource>()> warm_source;
};

class ServingEngine : public sc_core::sc_module, private LoadContext {
 public:
  SC_HAS_PROCESS(ServingEngine);
  // Validates everything that can be wrong with the inputs (InputError) before simulating.
  ServingEngine(const sc_core::sc_module_name& name, const RunSpec& spec, WorkloadSource& source,
                EngineSinks sinks);
  ~ServingEngine() override;

  // After the simulation.
  SummaryBuilder::Totals totals(double wall_time_s) const;
  std::uint64_t finished() const { return m_stats.finished; }
  std::uint64_t rejected() const { return m_stats.rejected; }
  std::uint64_t arrived() const { return m_stats.arrived; }
  const EngineStats& stats() const { return m_stats; }
  const KvTier& tier() const { return *m_tier; }
  const KvHierarchy& hierarchy() const { return *m_hier; }  // issue 14: DRAM and lower tiers
  const PagedKv& gpu_kv() const { return *m_kv; }
  double kv_bytes_per_token_gpu() const { return m_bkv_gpu; }
  const LinkModule& link() const { return *m_link; }  // the link back end
  const RunSpec& spec() const { return m_spec; }
  // Compute steps started on a GPU while one of its copy kernels held SMs (so they ran on fewer
  // SMs), and copy kernels started: on today's load paths the first is 0 (issue 13).
  std::uint64_t compute_steps_on_fewer_sms() const { return m_compute_on_fewer_sms; }
  std::uint64_t copy_kernels_started() const {
    std::uint64_t n = 0;
    for (const auto& k : m_copy_kernels) n += k->kernels();
    return n;
  }
  // Live state, for a router (serving/cluster) deciding at an arrival: requests arrived and not
  // finished, their prompt tokens still to prefill, and the cached tokens of those not yet
  // admitted (whose load is still ahead).
  std::size_t outstanding() const { return m_live.size(); }
  std::int64_t outstanding_compute_tokens() const {
    std::int64_t n = 0;
    for (const auto& [id, r] : m_live) n += r.seq->remaining();
    return n;
  }
  std::int64_t pending_load_tokens() const {
    std::int64_t n = 0;
    for (const auto& [id, r] : m_live)
      if (r.seq->first_scheduled_s < 0) n += r.seq->cached_tokens;
    return n;
  }

 private:
  struct Step;
  void arrivals();
  void steps();
  void run_step(Step& st);
  double store_phase(const std::vector<Sequence*>& done);
  void reap_stores();
  // Starts every GPU's share (bytes_per_gpu each) as one group of flows after `delay_s` plus the
  // fixed cost of `units` copies (DMA) or blocks (copy kernel); no thread per GPU.
  void start_all(CopyGroup& c, double bytes_per_gpu, std::int64_t units, Direction dir,
                 CopyPath path, double delay_s = 0);
  // LoadContext (serving/load_paths/load_path.hpp): what a load path strategy may do.
  double now() const override;
  void wait(double s) override;
  void start_copies(CopyGroup& c, double bytes_per_gpu, std::int64_t units,
                    CopyPath path) override {
    start_all(c, bytes_per_gpu, units, Direction::H2D, path);
  }
  void wait_copies(CopyGroup& c) override;
  CopySplit split_copies(const CopyGroup& c, double t_start) const override;
  void compute(const StepTime& st) override;
  void start_compute(CopyGroup& c, double compute_s, double hbm_bytes) override;
  void trace_copies(const CopyGroup& c, const std::string& what) override;
  void trace_load(const std::string& what, double t0, double t1) override;
  void trace_link(const std::string& what, double t0, double t1) override;
  void trace_compute(double start_s, double end_s) override;
  std::unique_ptr<LoadPathStrategy> m_load_path;  // serving/load_paths, by ServingSpec::load_path
  // split_loads (serving/step_plan) for the step's loading sequences, recorded per request.
  LoadSplit split_step_loads(const std::vector<Sequence*>& first);
  RecomputeOf m_recompute_of;
  std::int64_t recompute_of(std::uint64_t id) const;
  void finish(Sequence* s);
  void check_step(const Step& st);

 public:
  // Invariants at the end of the run (RunSpec::check): every arrived request finished exactly
  // once or was rejected, nothing is left in the system, links conserved bytes.
  void check_end() const;

 private:
  const RunSpec m_spec;
  WorkloadSource& m_source;
  EngineSinks m_sinks;
  int m_tp;
  double m_bkv_gpu;    // KV bytes per token one GPU holds
  int m_chunk_tokens;  // the tier's unit: LMCache chunks, or vLLM blocks for block_dma
  double m_chunk_bytes_gpu;
  std::unique_ptr<LinkModule> m_link;  // serving.link_fidelity's back end
  // The TP group's components (issue 13 items 1-2), one per GPU, all on m_link: the compute
  // engine (its steps are HBM Local flows; its SmPool), the DMA copy engine (block_dma and
  // layer-wise loads, stores) and, on the kernel load path, the copy kernel (takes SMs).
  std::vector<std::unique_ptr<GpuCompute>> m_gpus;
  std::vector<std::unique_ptr<CopyEngine>> m_dma;
  std::vector<std::unique_ptr<CopyKernel>> m_copy_kernels;
  std::uint64_t m_compute_on_fewer_sms = 0;
  std::vector<SeqSlice> m_step_slices;  // the running step's batch (its time at fewer SMs)
  double m_link_capacity_Bps = 0;
  struct Store {  // a store in flight (async stores outlive their step)
    CopyGroup c;
    double start_s = 0;
  };
  std::list<Store> m_stores;
  std::unique_ptr<KvTier> m_tier;
  // The serving stack's software costs (serving/stack_profile): the tier is on the GPU's
  // package (no host-pool software on its path), the store mode in effect, and the totals of
  // each cost by where it sits (m_stats.stack).
  bool m_on_package = false;
  StoreMode m_store = StoreMode::Blocking;
  void warm_tier_before_run();
  bool m_warmed = false;
  std::unique_ptr<PagedKv> m_kv;
  std::unique_ptr<Scheduler> m_sched;
  // Arrived, not finished: one state per request, dropped in finish() (serving/request_state).
  std::map<std::uint64_t, RequestState> m_live;
  RequestState& state_of(const Sequence* s) { return m_live.at(s->req.id); }
  LaneAssigner m_request_lanes;  // trace.json: non-overlapping request lanes
  // Studies (docs/studies-kv.md): the GPU-side KV buffer (null when off), its copy bandwidth,
  // (per request, the recomputed leading tokens R and the loaded tokens by source: RequestState).
  std::unique_ptr<KvTier> m_buffer;
  double m_buffer_Bps = 0;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> m_auto_recompute;  // (K, T) -> R
  RequestCostModel m_cost;  // recompute.mode auto's model (serving/request_cost)
  sc_core::sc_event m_work;
  bool m_source_done = false;
  EngineStats m_stats;  // counters and totals (serving/engine_stats)
  // Invariant bookkeeping (only with RunSpec::check).
  std::set<std::uint64_t> m_done_ids;
  double m_last_finish_s = 0, m_last_step_end_s = 0;
  // Trace tracks
  int m_track_step = -1, m_track_load = -1, m_track_store = -1;
  std::vector<int> m_track_gpu_compute, m_track_gpu_link;

  // ---- where the time went (issue 12 items 4, 10; serving/time_breakdown.hpp) ----
  std::vector<LoadBound> m_resource_bound;  // per Topology resource
  TimeBreakdown m_step_time;                // the running step's categories
  LoadBoundTimes m_step_bounds;             // the running step's load, per bound

  // ---- KV tiers below host DRAM (issue 14; serving/engine_tiers.cpp) ----
  std::unique_ptr<KvHierarchy> m_hier;      // level 0 is m_tier; DRAM alone without serving.tiers
  std::vector<double> m_step_level_tokens;  // the running step's link tokens per level
  // Per live request with a lower-tier hit: the level that served each hit chunk.
  std::map<std::uint64_t, std::vector<int>> m_chunk_levels;
  // Prefetches in flight (serving.tiers.prefetch), by request id.
  struct Prefetch {
    CopyGroup c;
    std::vector<std::uint64_t> keys;
    std::vector<int> from;
    bool enqueued = false;
  };
  std::map<std::uint64_t, std::unique_ptr<Prefetch>> m_prefetch;
  bool tiered() const { return m_hier->levels() > 1; }
  void init_tiers();
  void note_levels(std::uint64_t id, const std::vector<int>& at);
  void split_step_levels(const std::vector<Sequence*>& first);
  // H2D copies of the step split by level (false: all from DRAM, nothing started).
  bool start_tiered(CopyGroup& c, double bytes_per_gpu, std::int64_t units, CopyPath path,
                    double delay_s);
  // Appends level `level`'s requests (every GPU's share over the level's devices) to rs/units.
  void plan_level(std::vector<TransferRequest>& rs, std::vector<std::int64_t>& units,
                  std::size_t level, double bytes_per_gpu, std::int64_t units_per_gpu,
                  Direction dir) const;
  void issue(CopyGroup& c, const std::vector<std::int64_t>& units, CopyPath dram_path,
             double delay_s);
  std::vector<int> devices_for(std::size_t level, int gpu) const;
  void account_tier_loads(const CopyGroup& c);
  void write_lower(const TierMoves& m);  // async: write-through and demoted chunks
  void promote_loaded(const std::vector<Sequence*>& first);
  // Prefetch on arrival; true when the request's enqueue is left to the prefetch's end.
  bool start_prefetch(std::uint64_t id, const std::vector<std::uint64_t>& keys);
  void wait_prefetch(const std::vector<Sequence*>& first);
  void reap_prefetches();
};

// kv_buffer_bandwidth (the GPU-side KV buffer's copy rate): serving/serving_spec.hpp.

// estimate_recompute, choose_recompute_tokens: serving/request_cost.hpp.

// Runs a whole `kappasim run`-style simulation (one per process) and returns the engine's
// totals; sinks receive the per-request records.
SummaryBuilder::Totals run_serving(const RunSpec& spec, WorkloadSource& source, EngineSinks sinks);

}  // namespace kappasim
