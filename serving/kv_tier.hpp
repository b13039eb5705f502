// The CPU KV tier: an LMCache v0.3-like store of KV chunks in host DRAM. Pure C++, no SystemC
// (the engine charges the time of lookups, loads and stores; this class only keeps the state).
//
// Model (LMCache v0.3.x LocalCPUBackend, reference-data.md "LMCache v0.3.x"):
//  - the KV of a prompt is cut into chunks of `chunk_tokens` tokens (LMCache chunk_size, default
//    256); only full chunks have keys (workloads/request.hpp chunk_keys());
//  - a chunk holds the KV of the WHOLE model (every TP shard is stored: each rank stores its
//    slice, so the host pool holds chunk_tokens × B_kv bytes per chunk, B_kv over all layers);
//  - capacity is in bytes; when a new chunk does not fit, the least recently used chunks are
//    evicted (LMCache's default LRU eviction);
//  - lookup is a prefix match: it returns how many LEADING keys are present and stops at the
//    first miss (LMCache's lookup returns the hit prefix length; a later chunk whose prefix is
//    gone cannot be used because its KV depends on the whole prefix).
// Deterministic: the LRU order is an intrusive list over a node pool; the flat hash map is only
// used for membership and is never iterated (issue 24: no allocation per chunk, and the
// "ever placed" set forgets a request's own chunks once nothing can place them again). One map
// holds both the index (key -> node, keys present) and the "ever placed" set (keys evicted
// since keep an entry without a node), so a new chunk costs one probe run to find it absent,
// one to place it and one to mark the evicted chunk absent, where two maps took four probe runs
// and a backward-shift erase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "serving/flat_u64_map.hpp"

namespace kappasim {

class KvTier {
 public:
  // chunk_tokens >= 1, capacity_bytes >= 0, bytes_per_token > 0 (B_kv of the whole model);
  // otherwise std::invalid_argument.
  KvTier(int chunk_tokens, double capacity_bytes, double bytes_per_token);

  // The number of leading keys present; stops at the first miss. Every hit chunk becomes the
  // most recently used (in key order, so the prefix's first chunk is the older of the hits).
  // Stats: lookups += 1, hit_chunks += hits, miss_chunks += keys.size() - hits (first-miss
  // accounting: every key after the first miss counts as a miss even if present).
  std::size_t lookup(const std::vector<std::uint64_t>& keys);

  // Stores the keys not yet present, in order, touching the present ones; evicts LRU chunks
  // to make room. Returns the chunks newly stored. When a chunk is larger than the whole
  // capacity nothing is ever stored. A chunk inserted earlier in the same call is never evicted
  // by a later one of the same call unless the capacity holds fewer chunks than the call
  // inserts (then the earliest of the call go first, as LRU order says).
  std::size_t insert(const std::vector<std::uint64_t>& keys);

  // Pre-population (warm tier): inserts like insert() but counts the chunks as warm, not as
  // stored (no D2H copy happened in the run). Returns the chunks newly placed.
  std::size_t warm(const std::vector<std::uint64_t>& keys);

  // ---- for the tier hierarchy (serving/kv_hierarchy, issue 14) ----
  // insert()/warm() that also return, in eviction order, the keys evicted to make room (the
  // hierarchy demotes them under write-back).
  std::size_t insert(const std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>* evicted);
  std::size_t warm(const std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>* evicted);
  // Makes a present key the most recently used; false (nothing changes) when absent. No stats.
  bool touch_key(std::uint64_t key);
  // touch_key in two halves, for a lookup that finds first and touches after: the node holding
  // `key` (kAbsent when not present), valid until the next insert() or warm(); and making that
  // node the most recently used. find_node then touch_node is touch_key with one probe.
  static constexpr std::uint32_t kAbsent = 0xffffffffu;
  std::uint32_t find_node(std::uint64_t key) const { return node_of(key); }
  void touch_node(std::uint32_t node) { touch(node); }
  // Counts one lookup served partly by this tier: `hits` chunks from it, `misses` not.
  void count_lookup(std::size_t hits, std::size_t misses) {
    ++m_lookups;
    m_hit_chunks += hits;
    m_miss_chunks += misses;
  }

  // Membership only; does not touch the LRU order or the stats.
  bool contains(std::uint64_t key) const;
  // Whether the key was ever placed (stored or warmed), present now or evicted since.
  bool ever_placed(std::uint64_t key) const {
    const std::uint32_t v = m_keys.find(key);
    return v != FlatU64Map::kNone && (v & kForgotten) == 0;
  }
  // Forgets that keys[from..] were ever placed, keeping distinct_chunks(): for keys no later call
  // can place again (a finished request's own chunks in a tier alone, serving/engine.cpp), so
  // the set stays bounded by the requests in the system.
  void forget(const std::vector<std::uint64_t>& keys, std::size_t from = 0);

  int chunk_tokens() const { return m_chunk_tokens; }
  double chunk_bytes() const { return m_chunk_bytes; }
  double capacity_bytes() const { return m_capacity_bytes; }
  // The most chunks the capacity holds (floor(capacity / chunk bytes)).
  std::size_t capacity_chunks() const { return m_capacity_chunks; }
  std::size_t size() const { return m_count; }  // chunks stored now
  double used_bytes() const { return static_cast<double>(m_count) * m_chunk_bytes; }

  // Cumulative statistics.
  std::uint64_t lookups() const { return m_lookups; }
  std::uint64_t hit_chunks() const { return m_hit_chunks; }
  std::uint64_t miss_chunks() const { return m_miss_chunks; }
  std::uint64_t stored_chunks() const { return m_stored_chunks; }
  std::uint64_t evicted_chunks() const { return m_evicted_chunks; }
  // Stores of chunks the tier held before and evicted (thrashing), stores dropped because a
  // chunk does not fit the pool at all, chunks placed by warm(), and the distinct chunks ever
  // placed (the working set; its bytes against the capacity say whether it fits).
  std::uint64_t restored_chunks() const { return m_restored_chunks; }
  std::uint64_t dropped_chunks() const { return m_dropped_chunks; }
  std::uint64_t warm_chunks() const { return m_warm_chunks; }
  std::uint64_t distinct_chunks() const { return m_distinct; }

 private:
  // The LRU list: nodes in a pool, linked by index (kNil ends), front = least recently used.
  static constexpr std::uint32_t kNil = kAbsent;
  struct Node {
    std::uint64_t key;
    std::uint32_t prev, next;
  };
  void touch(std::uint32_t n);
  // Touching the nodes of a contiguous run first..last one by one, in list order, leaves them
  // at the back in that order: one splice does it (nothing when last is the tail already; first
  // kNil: no run). lookup() and place() gather such runs: a key that is the key of the node
  // after the previous one found continues the run without a hash probe (follow(); kNil: not
  // that node), which is the common case of a prefix looked up or stored again.
  void move_run_to_back(std::uint32_t first, std::uint32_t last);
  std::uint32_t follow(std::uint32_t prev, std::uint64_t key) const;
  // How many of the keys [from, end) follow `last` on nodes taken from the pool one after
  // another (last + 1, last + 2, ...: follow()'s first case, as repeated follow() calls find
  // them); `last` moves to the last of them.
  std::size_t along(std::uint32_t& last, const std::uint64_t* from, const std::uint64_t* end) const;
  void unlink(std::uint32_t n);
  void push_back(std::uint32_t n);
  // The node holding `key`, or kNil when it is not present.
  std::uint32_t node_of(std::uint64_t key) const {
    const std::uint32_t v = m_keys.find(key);
    if (v == FlatU64Map::kNone) return kNil;
    const std::uint32_t n = v & kNodeBits;
    return n == kNoNode ? kNil : n;
  }

  int m_chunk_tokens;
  double m_chunk_bytes;
  double m_capacity_bytes;
  std::size_t m_capacity_chunks;
  std::vector<Node> m_nodes;  // the pool; free nodes chained through `next`
  std::uint32_t m_head = kNil, m_tail = kNil, m_free = kNil;
  std::size_t m_count = 0;  // chunks stored now
  // key -> value: the low 31 bits are the key's node while it is present, kNoNode once evicted;
  // kForgotten is set once forget() dropped it from the "ever placed" set. An entry is kept
  // exactly while the key is present or ever placed (and not forgotten): a forgotten key's entry
  // goes with its eviction, an evicted one's with forget(). Nodes are < kNoNode (a pool of at
  // most capacity_chunks), so no value is FlatU64Map::kNone.
  static constexpr std::uint32_t kForgotten = 0x80000000u;
  static constexpr std::uint32_t kNodeBits = 0x7fffffffu;
  static constexpr std::uint32_t kNoNode = 0x7ffffffeu;
  FlatU64Map m_keys;
  std::uint64_t m_lookups = 0, m_hit_chunks = 0, m_miss_chunks = 0;
  std::uint64_t m_stored_chunks = 0, m_evicted_chunks = 0;
  std::uint64_t m_restored_chunks = 0, m_dropped_chunks = 0, m_warm_chunks = 0;
  std::uint64_t m_distinct = 0;  // distinct keys ever placed
  std::size_t place(const std::vector<std::uint64_t>& keys, bool warm,
                    std::vector<std::uint64_t>* evicted = nullptr);
};

}  // namespace kappasim
