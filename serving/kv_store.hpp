// A rank's KV store (issue 21): the hierarchy of KV tiers off the GPU — host DRAM, then CXL
// expanders, NVMe drives and a remote store (serving.tiers) — with the GPU-side KV buffer in
// front of it (serving.kv_buffer), and the transfers that fill and drain it: lookups at arrival,
// a step's loads split by the level that holds each chunk, stores (D2H, blocking or async),
// write-through and write-back writes to the lower levels, promotion of lower-level hits into
// DRAM, prefetch on arrival, and the warm-up before the run. The engine asks it questions; it
// has no hooks into the engine (docs/serving-engine.md "Tier hierarchy").
//
// Mechanisms and their sources (LMCache 0.3.x StorageManager; kv-stack-mechanisms.md):
//  - a lower-tier chunk is read by DMA (CopyEngine): the drive's or the expander's reads, or
//    LocalDiskBackend's read into a host buffer then the copy up. NVMe without GDS goes through
//    a host bounce buffer (the fabric's Nvme path with direct = false), with GDS straight into
//    GPU memory (direct = serving.tiers.gds);
//  - each GPU's share of a level is spread over the level's devices: with at least as many
//    devices as GPUs, GPU k stripes over devices d with d mod tp = k; with fewer, GPU k uses
//    device k mod devices (each TP rank's LMCache instance has its own files / region);
//  - promotion (StorageManager.get writes a non-CPU hit back into LocalCPUBackend): an NVMe hit
//    read through the bounce buffer is already in DRAM (no copy); a CXL, remote or GDS hit is
//    copied from the GPU (where it just landed) to DRAM, asynchronously;
//  - write-through lower stores (batched_put's submits to the other backends, asynchronous in
//    LMCache) and write-back demotions are asynchronous writes to the level's devices.
// Ignored / charged approximately (the fabric carries only GPU-ended transfers): a DRAM->device
// copy (write-through from the DRAM copy, a demotion, a prefetch into DRAM) is issued as a
// transfer between a GPU of the rank and the device, so it also crosses that GPU's host link
// (an overcharge of that link by those bytes; the device and DRAM sides are right).
// SystemC (serving_sim layer): stores and prefetches are transfers in flight.
#pragma once

#include <systemc>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <vector>

#include "serving/engine_stats.hpp"
#include "serving/kv_hierarchy.hpp"
#include "serving/kv_tier.hpp"
#include "serving/rank.hpp"
#include "serving/request_state.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

class KvStore {
 public:
  struct Hooks {
    // A store's or a lower-level write's copies ended (the engine traces them).
    std::function<void(const CopyGroup&, double start_s)> stored;
    // A request held out of the queue by its prefetch may now be enqueued.
    std::function<void(RequestState&)> ready;
  };
  // `dram_bytes`: the DRAM tier's capacity; `kv_bytes_per_token_gpu`: the rank's per-GPU KV
  // bytes per token (a token takes tp x that of host memory: every TP rank's LMCache stores
  // its own shard, replicated KV heads included). `stats`: where the store's figures go.
  // `bytes_weight`, `time_weight`: the factors from one of the rank's GPUs' bytes and times to
  // the group's per-GPU mean (1, 1 for a TP rank alone in its step group; 1 / (ranks x pp) and
  // 1 / ranks in general). `share`: the rank's share of the lower levels' capacities.
  // `link`: the engine's back end (it must carry the lower levels' transfers). `shared_cxl`:
  // the CXL level when it is a pool shared with other stores (issue 25; serving/cxl_pool_share),
  // whole, not split by `share`; null: a level of the store's own.
  KvStore(const RunSpec& spec, const RankGpus& gpus, const LinkModel& link,
          double kv_bytes_per_token_gpu, double dram_bytes, EngineStats& stats, double bytes_weight,
          double time_weight, double share, Hooks hooks, KvTier* shared_cxl = nullptr);
  ~KvStore();
  // serving.kv_cache: hybrid (issue 25): a step's load is split over the levels by the bytes
  // each level's chunks hold of the loaded range (HybridKv::bytes: the sliding layers' window
  // and the state sit in the prefix's last chunks), not by tokens. The levels hold stored
  // chunks of kv_bytes_per_token_gpu × chunk_tokens each (served_kv_store_per_gpu).
  void set_hybrid(const HybridKv& h) { m_hybrid = h; }

  KvTier& dram() { return *m_dram; }
  const KvTier& dram() const { return *m_dram; }
  const KvHierarchy& hierarchy() const { return *m_hier; }
  KvTier* buffer() { return m_buffer.get(); }         // the GPU-side buffer, null when off
  double buffer_Bps() const { return m_buffer_Bps; }  // its copy rate into the KV pages
  bool tiered() const { return m_hier->levels() > 1; }
  int chunk_tokens() const { return m_chunk_tokens; }

  // ---- arrivals ----
  void warm(const std::vector<std::uint64_t>& keys) { m_hier->warm(keys); }
  // The leading hit chunks of `keys` (the request's chunk keys); the level of each is noted in
  // st.chunk_levels when any is below DRAM.
  std::size_t lookup(RequestState& st, const std::vector<std::uint64_t>& keys);
  // serving.tiers.prefetch: starts copying st's lower-level hits into DRAM. True when st joins
  // the queue only when they land (Hooks::ready), false when it is to be enqueued now.
  bool prefetch(RequestState& st, const std::vector<std::uint64_t>& keys);
  // Requests held out of the queue by a prefetch in flight.
  bool holding() const;

  // ---- a step's loads (`first`: the requests loading their cached KV this step) ----
  // Waits for their prefetches (charged to t.load_wait_s) and splits their link tokens by level.
  void begin_load(const std::vector<RequestState*>& first, TimeBreakdown& t);
  // Appends the step's H2D copies split by level, and their copy counts, to rs / units (false:
  // all from DRAM, nothing appended). Issue them with RankGpus::issue.
  bool plan_load(std::vector<TransferRequest>& rs, std::vector<std::int64_t>& units,
                 double bytes_per_gpu, std::int64_t copies, CopyPath path) const;
  // Per-level bytes and time of a finished load group (its members on the rank's GPUs).
  void account_load(const CopyGroup& c);
  void end_load(const std::vector<RequestState*>& first);  // promotion of lower-level hits

  // ---- stores ----
  // The new full chunks of the requests whose prompt's prefill finished (`done`) and of those
  // whose decode step filled a chunk (`decoded`: the decoding requests, when the stack stores
  // decode chunks): into the hierarchy, and their D2H copy started after the stack's store
  // software. Null when nothing is stored (or serving.store none).
  CopyGroup* store(const std::vector<RequestState*>& done,
                   const std::vector<RequestState*>& decoded = {});
  void reap();                      // finished stores and writes leave (Hooks::stored)
  void finished(RequestState& st);  // st leaves the engine
  // st's prompt chunk keys at the tier's chunk size (chunk_keys), computed once: kept in
  // st.tier_keys.
  const std::vector<std::uint64_t>& keys_of(RequestState& st) const;

 private:
  struct InFlight {  // a store, a lower-level write or a promotion copy
    CopyGroup c;
    double start_s = 0;
  };
  struct Prefetch {
    RequestState* st = nullptr;
    CopyGroup c;
    std::vector<std::uint64_t> keys;
    std::vector<int> from;
    bool enqueued = false;
  };
  std::vector<int> devices_for(std::size_t level, int k) const;
  void plan_level(std::vector<TransferRequest>& rs, std::vector<std::int64_t>& units,
                  std::size_t level, double bytes_per_gpu, std::int64_t units_per_gpu,
                  Direction dir) const;
  void write_lower(const TierMoves& m);
  void reap_prefetches();
  InFlight& start_write();
  double w(double bytes) const { return m_weight == 1 ? bytes : bytes * m_weight; }
  double wt(double s) const { return m_time_weight == 1 ? s : s * m_time_weight; }

  const RunSpec& m_spec;
  const RankGpus& m_gpus;
  EngineStats& m_stats;
  double m_weight, m_time_weight;
  Hooks m_hooks;
  int m_chunk_tokens;
  double m_chunk_bytes_gpu;
  std::unique_ptr<KvTier> m_dram;
  std::unique_ptr<KvHierarchy> m_hier;  // level 0 is m_dram
  std::unique_ptr<KvTier> m_buffer;
  double m_buffer_Bps = 0;
  std::vector<double> m_step_level_tokens;  // the running step's link tokens per level
  std::optional<HybridKv> m_hybrid;         // hybrid: the levels' shares are of its bytes
  std::list<InFlight> m_writes;
  std::list<InFlight> m_spare_writes;
  TierMoves m_moves;  // store()'s, per request  // reaped, for start_write to reuse (issue 24)
  std::list<Prefetch> m_prefetches;  // in arrival order
  // Finished requests' key buffers, for keys_of to fill again (issue 24: no allocation per
  // stored request; at most kSpareKeys kept).
  static constexpr std::size_t kSpareKeys = 8;
  mutable std::vector<std::vector<std::uint64_t>> m_spare_keys;
};

}  // namespace kappasim
