// A rank of the serving engine (issue 21): the GPUs that hold one copy of the attention KV of
// the requests routed to it — a tensor-parallel group of `tp` GPUs, times its pipeline stages —
// with its own scheduler, paged KV pool and KV store. Plain TP is one rank; DP-attention is N
// ranks; nodes and PP stages are how a rank's GPUs are placed. The engine (serving/engine)
// routes arrivals to ranks and steps them, alone or in lockstep (serving/step_group.hpp).
//
// RankGpus is how bytes move on a rank: every GPU's components (compute engine, DMA copy engine,
// copy kernel) issue into the engine's one link back end. SystemC (serving_sim layer).
#pragma once

#include <systemc>

#include <cstdint>
#include <memory>
#include <vector>

#include "models/gpu/copy_engine.hpp"
#include "models/gpu/gpu_compute.hpp"
#include "serving/load_paths/load_path.hpp"
#include "serving/paged_kv.hpp"
#include "serving/scheduler.hpp"

namespace kappasim {

class KvStore;

// One GPU's components, all issuing into the engine's link back end.
struct GpuUnit {
  std::unique_ptr<GpuCompute> compute;  // its steps: HBM Local flows; its SmPool
  std::unique_ptr<CopyEngine> dma;      // DMA copies: block_dma, layer-wise, stores, lower tiers
  std::unique_ptr<CopyKernel> kernel;   // the kernel load path's copy kernel (else null)
  int fabric = 0;                       // its GPU index in the link back end
  // Of its rank's per-GPU KV bytes per token, the share this GPU holds: 1 without pipeline
  // stages, else its stage's layers' share (LayoutCost::stages[s].kv_bytes_rank / B_kv_gpu).
  double kv_share = 1;
};

// `bytes` from GPU `from` to GPU `to` over the GPU-to-GPU fabric (NVLink or NIC ports): a DMA
// PeerGpu transfer; whether the link back end carries them at all (the flow back end does).
TransferRequest peer_transfer(const GpuUnit& from, const GpuUnit& to, double bytes);
bool carries_peer(const LinkModel& link);

// A rank's GPUs, stage-major (stage s, TP position j: index s * tp + j).
class RankGpus {
 public:
  RankGpus(std::vector<GpuUnit*> gpus, int tp, int sm_count)
      : m_gpus(std::move(gpus)), m_tp(tp), m_sm_count(sm_count) {}
  std::size_t size() const { return m_gpus.size(); }
  int tp() const { return m_tp; }
  GpuUnit& at(std::size_t k) const { return *m_gpus[k]; }
  // Appends to `rs` every GPU's share (bytes_per_gpu x kv_share) in direction `dir` by `path`.
  void plan_all(std::vector<TransferRequest>& rs, double bytes_per_gpu, Direction dir,
                CopyPath path) const;
  // Starts c.rs (complete before the first start: the back end keeps pointers into it) after
  // `delay_s` plus each member's fixed cost of units[i] copies (DMA) or blocks (copy kernel):
  // host-DRAM members by `dram_path`, members with another endpoint by DMA. A copy kernel takes
  // its GPU's SMs until its last byte (every SM: LMCache's and vLLM's kernels launch a grid of
  // thousands of blocks, above any GPU's SM count).
  void issue(CopyGroup& c, const std::vector<std::int64_t>& units, CopyPath dram_path,
             double delay_s) const;
  // One member (its GPU one of the rank's: owns()) as issue() starts it.
  void issue_one(TransferRequest& r, std::int64_t units, TransferGroup& g, CopyPath dram_path,
                 double delay_s) const;
  bool owns(int fabric) const;
  // plan_all then issue, every member with `units`.
  void start_all(CopyGroup& c, double bytes_per_gpu, std::int64_t units, Direction dir,
                 CopyPath path, double delay_s = 0) const;

 private:
  // The unit of GPU `fabric` (logic_error when not the rank's).
  GpuUnit* unit_of(int fabric) const;
  // issue() with units[i] (units[0] for all when one_units).
  void issue_all(CopyGroup& c, const std::int64_t* units, bool one_units, CopyPath dram_path,
                 double delay_s) const;
  std::vector<GpuUnit*> m_gpus;
  int m_tp = 1, m_sm_count = 0;
  mutable std::vector<double> m_delays;  // issue_all's start delays and units, one buffer each
  mutable std::vector<GpuUnit*> m_units;
};

struct Rank {
  int index = 0;
  std::unique_ptr<RankGpus> gpus;
  std::unique_ptr<Scheduler> sched;
  std::unique_ptr<PagedKv> kv;
  std::unique_ptr<KvStore> store;
};

}  // namespace kappasim
