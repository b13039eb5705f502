// The KV tier hierarchy below the GPU (issue 14): host DRAM -> CXL expanders -> NVMe drives ->
// a remote store, one KvTier (LRU, prefix identity, whole-replica bytes) per level. Pure C++, no
// SystemC: the engine (serving/engine) times the copies these decisions imply.
//
// Model (LMCache 0.3.x StorageManager, docs/serving-engine.md "Tier hierarchy"):
//  - lookup: each leading chunk of the prompt is taken from the highest level (closest to the
//    GPU) that holds it; the prefix stops at the first chunk found in no level (LMCache's
//    StorageManager walks its backends in order for every key; a chunk whose prefix is gone
//    is useless). A hit is touched (most recently used) in the level that served it only;
//  - write_through: a store puts every chunk into every level (StorageManager.batched_put
//    submits to all backends); each level evicts its own LRU chunks, which are dropped;
//  - write_back: a store puts chunks into DRAM only; a level's LRU evictions are demoted into
//    the next level (a chunk already there is only touched: the copy below is clean), and the
//    last level's are dropped;
//  - promotion: a lower-level hit is copied into DRAM (StorageManager.get: a chunk found in a
//    backend other than LocalCPUBackend is written back into it); DRAM's evictions follow the
//    write policy. Inclusive: the lower copy stays.
// Ignores: per-backend asynchrony (the engine times it), LMCache's pinning of chunks being read
// (a chunk is never evicted while in use here either: the engine copies it in the same call).
// Deterministic: the only containers iterated are vectors and KvTier's LRU list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "serving/kv_tier.hpp"
#include "serving/serving_spec.hpp"

namespace kappasim {

enum class TierLevel { Dram, Cxl, Nvme, Remote };
const char* tier_level_name(TierLevel l);  // "dram", "cxl", "nvme", "remote"

// Per level, cumulative.
struct TierLevelStats {
  std::uint64_t hit_chunks = 0;     // prefix chunks this level served (lookups)
  std::uint64_t stored_chunks = 0;  // chunks newly placed by a store (write-through or DRAM)
  std::uint64_t demoted_in = 0;     // chunks newly placed here by a demotion from the level above
  std::uint64_t demoted_out = 0;    // evictions from here demoted into the next level
  std::uint64_t promoted_out = 0;   // hits from here copied up into DRAM
  std::uint64_t promoted_in = 0;    // (DRAM) chunks newly placed by a promotion
};

// What one store / promotion / warm moved, per level (index as in the hierarchy): chunks newly
// written into the level by the operation itself (`placed`) and by demotion from the level
// above (`demoted`).
struct TierMoves {
  std::vector<std::size_t> placed, demoted;
};

class KvHierarchy {
 public:
  struct Level {
    TierLevel level;
    double capacity_bytes;
    // Issue 25: a level held by several KV stores at once (a CXL pool shared by the nodes of a
    // cluster): not owned, its capacity its own; null: the hierarchy owns a tier of its own.
    KvTier* shared = nullptr;
  };
  // `dram` is the engine's host tier (not owned; level 0); `lower` the levels below it, in order
  // (each capacity > 0). bytes_per_token: B_kv of the whole replica (every rank's shard).
  KvHierarchy(KvTier& dram, const std::vector<Level>& lower, double bytes_per_token,
              TierWritePolicy write, bool promote_on_hit);

  std::size_t levels() const { return m_levels.size(); }
  TierLevel level(std::size_t i) const { return m_levels[i].level; }
  KvTier& tier(std::size_t i) { return *m_levels[i].tier; }
  const KvTier& tier(std::size_t i) const { return *m_levels[i].tier; }
  const TierLevelStats& stats(std::size_t i) const { return m_levels[i].stats; }
  TierWritePolicy write_policy() const { return m_write; }
  bool promote_on_hit() const { return m_promote; }

  // The level index that serves each leading chunk (size = the hit prefix length). Hits are
  // touched where they were found; stats counted. With DRAM alone this is KvTier::lookup.
  std::vector<int> lookup(const std::vector<std::uint64_t>& keys);
  // The same without touching or counting (prefetch planning).
  std::vector<int> peek(const std::vector<std::uint64_t>& keys) const;
  // A request's new KV, per the write policy.
  TierMoves store(const std::vector<std::uint64_t>& keys);
  // The same into `m` (its vectors reused: issue 24).
  void store(const std::vector<std::uint64_t>& keys, TierMoves& m);
  // Copies `keys` (found at levels `from`, each > 0) into DRAM; DRAM's evictions follow the
  // write policy. No-op (empty moves) unless promote_on_hit or `force` (a prefetch).
  TierMoves promote(const std::vector<std::uint64_t>& keys, const std::vector<int>& from,
                    bool force = false);
  // Pre-population (warm tier): like store() but counted as warm by the tiers.
  void warm(const std::vector<std::uint64_t>& keys);

 private:
  struct Lvl {
    TierLevel level;
    KvTier* tier;
    std::unique_ptr<KvTier> owned;
    TierLevelStats stats;
  };
  enum class Why { Store, Promote, Warm };
  // Places keys into level i; under write-back, its evictions cascade into level i + 1.
  std::size_t place(std::size_t i, const std::vector<std::uint64_t>& keys, Why why, bool demotion,
                    TierMoves& m);
  TierMoves empty_moves() const;
  std::vector<Lvl> m_levels;
  TierWritePolicy m_write;
  bool m_promote;
};

// The most distinct chunks' bytes the whole hierarchy can hold at once (issue 26 item 16: a
// working set above DRAM's capacity fits when the lower tiers hold it): write_through keeps
// every chunk in every level, so the largest level bounds it; write_back keeps a chunk in one
// level (promotion copies aside), so the levels add up.
double hierarchy_capacity_bytes(const TiersSpec& tiers, double dram_bytes);

}  // namespace kappasim
