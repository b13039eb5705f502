// The replica engine (issue 14): one model replica laid out beyond plain tensor parallelism
// (serving.parallelism: dp_attention, ep, pp, nodes), on the SystemC timing models. It reuses
// the single-group engine's pure parts (Scheduler, PagedKv, KvTier, step_plan, request_state,
// engine_stats, kernel_timing through serving/replica_step) and is chosen by run_serving when
// the layout is beyond plain TP.
//
// What it models (docs/parallelism.md "The replica engine"):
//  - dp_attention ranks of tp GPUs each (× pp stages), each rank with its own scheduler, its own
//    paged KV pool (HBM × gpu_memory_utilization − the layout's weights per GPU − the
//    activation reserve, at the rank's per-GPU KV bytes per own token: no latent replication
//    across ranks) and its own LMCache tier (its own pinned pool);
//  - a DP router assigning each arrival to the rank with the least waiting × 4 + running
//    (vLLM's DP load balancer, DPLBAsyncMPClient);
//  - lockstep steps: every rank plans; a rank with no work runs a dummy batch; the step's
//    length is serving/replica_step's (slowest rank's attention per layer, EP all-to-all,
//    experts, PP activations in series);
//  - KV loads: each rank's newly admitted requests' cached KV, one DMA stream per GPU of the
//    rank per stage (its stage's layers), over the host links of that GPU's node (one back end
//    over build_topology(system, nodes): each node its own host DRAM, sockets and PCIe), before
//    the step computes;
//    stores of new full chunks the same way after it (blocking).
// Ignores (documented): the kernel / layerwise load paths and the stack's per-chunk software
// costs on loads (the replica engine loads by DMA), partial recompute, the GPU-side KV buffer,
// async stores (stores block the step), pipelining of PP micro-batches (stages in series:
// pessimistic for throughput). The EP all-to-all and PP activations are PeerGpu transfers
// through the flow back end (NVLink ports within a node, NIC ports between nodes), one
// aggregated transfer per (sender, receiver) pair per phase per step; with the packet back end
// (host links only) replica_step's per-port model times them.
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "interconnects/link_model.hpp"
#include "models/gpu/copy_engine.hpp"
#include "serving/engine.hpp"
#include "serving/replica_step.hpp"

namespace kappasim {

// The DP-specific run figures (summary.json, after the engine's own).
struct ReplicaStats {
  double rank_tokens = 0;      // Σ over steps and ranks of the tokens computed
  double max_rank_tokens = 0;  // Σ over steps of the busiest rank's tokens
  double rank_idle_s = 0;      // Σ over steps of the mean rank's wait for the slowest
  double local_s = 0, expert_s = 0, a2a_s = 0, pp_s = 0;  // Σ over steps
  double a2a_port_bound_s = 0;  // Σ of replica_step's per-port a2a time (a lower bound)
  double peer_transfers = 0;    // PeerGpu transfers issued into the fabric (a2a, PP)
  double a2a_nvlink_bytes = 0, a2a_nic_bytes = 0, pp_bytes = 0;
  double dummy_rank_steps = 0;  // rank-steps run as a dummy batch
};

class ReplicaEngine : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(ReplicaEngine);
  ReplicaEngine(const sc_core::sc_module_name& name, const RunSpec& spec, WorkloadSource& source,
                EngineSinks sinks);
  ~ReplicaEngine() override;
  SummaryBuilder::Totals totals(double wall_time_s) const;
  void check_end() const;
  const ReplicaLayout& layout() const { return m_L; }
  const ReplicaStats& replica_stats() const { return m_rs; }
  const EngineStats& stats() const { return m_stats; }
  int rank_of_request(std::uint64_t id) const { return m_rank_of.at(id); }

 private:
  struct Rank {
    std::unique_ptr<Scheduler> sched;
    std::unique_ptr<PagedKv> kv;
    std::unique_ptr<KvTier> tier;
  };
  void arrivals();
  void steps();
  void run_step(std::vector<StepPlan>& plans);
  std::size_t route() const;
  // One DMA per GPU of rank r, every stage its own layers' bytes per token.
  // Appends the copies to c.rs and (replica GPU, DMA count) to `who`; starts nothing.
  void start_rank_copies(CopyGroup& c, std::vector<std::pair<int, std::int64_t>>& who,
                         std::size_t r, double tokens, std::int64_t units, Direction dir);
  int gpu_index(int stage, std::size_t rank, int j) const;
  int fabric_gpu(int g) const;  // replica GPU g -> the fabric's GPU index
  // The stage's EP all-to-all phase as PeerGpu transfers, `layers` × one layer's pair bytes.
  void peer_phase(int stage, const std::vector<double>& layer_pairs, double layers, bool combine,
                  double latency_s, int moe_layers = 0);
  void finish(Sequence* s);

  const RunSpec m_spec;
  WorkloadSource& m_source;
  EngineSinks m_sinks;
  ReplicaLayout m_L;
  int m_chunk_tokens = 0;
  double m_bkv_rank_gpu = 0;  // whole-model KV bytes per own token per GPU of a rank (records)
  std::vector<Rank> m_ranks;
  std::unique_ptr<LinkModule> m_link;              // the replica's fabric (every node)
  bool m_peer_fabric = false;                      // a2a and PP activations as PeerGpu transfers
  std::vector<std::unique_ptr<CopyEngine>> m_dma;  // per replica GPU
  std::map<std::uint64_t, RequestState> m_live;
  std::map<std::uint64_t, int> m_rank_of;  // every request's rank (kept for tests: small runs)
  sc_core::sc_event m_work;
  bool m_source_done = false;
  EngineStats m_stats;
  ReplicaStats m_rs;
  double m_link_capacity_Bps = 0;
  double m_last_finish_s = 0;
};

// run_serving's choice for a layout beyond plain TP (serving.parallelism).
SummaryBuilder::Totals run_replica_serving(const RunSpec& spec, WorkloadSource& source,
                                           EngineSinks sinks);

}  // namespace kappasim
