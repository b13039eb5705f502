#include "serving/kv_hierarchy.hpp"

#include <algorithm>
#include <stdexcept>

namespace kappasim {

const char* tier_level_name(TierLevel l) {
  switch (l) {
    case TierLevel::Dram:
      return "dram";
    case TierLevel::Cxl:
      return "cxl";
    case TierLevel::Nvme:
      return "nvme";
    case TierLevel::Remote:
      return "remote";
  }
  return "?";
}

KvHierarchy::KvHierarchy(KvTier& dram, const std::vector<Level>& lower, double bytes_per_token,
                         TierWritePolicy write, bool promote_on_hit)
    : m_write(write), m_promote(promote_on_hit) {
  m_levels.push_back(Lvl{TierLevel::Dram, &dram, nullptr, {}});
  for (const Level& l : lower) {
    if (l.level == TierLevel::Dram)
      throw std::invalid_argument("KvHierarchy: DRAM is level 0 only");
    if (l.shared) {
      if (l.shared->chunk_tokens() != dram.chunk_tokens())
        throw std::invalid_argument("KvHierarchy: a shared level's chunks differ from DRAM's");
      m_levels.push_back(Lvl{l.level, l.shared, nullptr, {}});
      continue;
    }
    if (!(l.capacity_bytes > 0))
      throw std::invalid_argument("KvHierarchy: a lower level needs a capacity > 0");
    auto t = std::make_unique<KvTier>(dram.chunk_tokens(), l.capacity_bytes, bytes_per_token);
    KvTier* p = t.get();
    m_levels.push_back(Lvl{l.level, p, std::move(t), {}});
  }
}

TierMoves KvHierarchy::empty_moves() const {
  TierMoves m;
  m.placed.assign(m_levels.size(), 0);
  m.demoted.assign(m_levels.size(), 0);
  return m;
}

std::vector<int> KvHierarchy::peek(const std::vector<std::uint64_t>& keys) const {
  std::vector<int> at;
  for (std::uint64_t k : keys) {
    int found = -1;
    for (std::size_t i = 0; i < m_levels.size() && found < 0; ++i)
      if (m_levels[i].tier->contains(k)) found = static_cast<int>(i);
    if (found < 0) break;
    at.push_back(found);
  }
  return at;
}

std::vector<int> KvHierarchy::lookup(const std::vector<std::uint64_t>& keys) {
  if (m_levels.size() == 1) {  // DRAM alone: exactly the host tier's lookup (outputs unchanged)
    const std::size_t hits = m_levels[0].tier->lookup(keys);
    m_levels[0].stats.hit_chunks += hits;
    return std::vector<int>(hits, 0);
  }
  // peek(), keeping the node each key was found at: touching finds nothing again (touches
  // change no membership, so every node stays valid until the last touch).
  std::vector<int> at;
  std::vector<std::uint32_t> nodes;
  for (std::uint64_t k : keys) {
    int found = -1;
    std::uint32_t node = KvTier::kAbsent;
    for (std::size_t i = 0; i < m_levels.size() && found < 0; ++i)
      if ((node = m_levels[i].tier->find_node(k)) != KvTier::kAbsent) found = static_cast<int>(i);
    if (found < 0) break;
    at.push_back(found);
    nodes.push_back(node);
  }
  std::vector<std::size_t> hits(m_levels.size(), 0);
  for (std::size_t j = 0; j < at.size(); ++j) {  // in key order, like KvTier::lookup
    const std::size_t i = static_cast<std::size_t>(at[j]);
    m_levels[i].tier->touch_node(nodes[j]);
    ++hits[i];
  }
  for (std::size_t i = 0; i < m_levels.size(); ++i) {
    m_levels[i].tier->count_lookup(hits[i], keys.size() - hits[i]);
    m_levels[i].stats.hit_chunks += hits[i];
  }
  return at;
}

std::size_t KvHierarchy::place(std::size_t i, const std::vector<std::uint64_t>& keys, Why why,
                               bool demotion, TierMoves& m) {
  if (keys.empty()) return 0;
  Lvl& l = m_levels[i];
  const bool cascade = m_write == TierWritePolicy::WriteBack && i + 1 < m_levels.size();
  std::vector<std::uint64_t> evicted;
  const std::size_t n = why == Why::Warm ? l.tier->warm(keys, cascade ? &evicted : nullptr)
                                         : l.tier->insert(keys, cascade ? &evicted : nullptr);
  if (demotion) {
    m.demoted[i] += n;
    l.stats.demoted_in += n;
  } else {
    m.placed[i] += n;
    if (why == Why::Store) l.stats.stored_chunks += n;
    if (why == Why::Promote) l.stats.promoted_in += n;
  }
  if (cascade && !evicted.empty()) {
    // Every eviction goes down; those already below are only touched there (clean copies).
    const std::size_t moved = place(i + 1, evicted, why, true, m);
    if (why != Why::Warm) l.stats.demoted_out += moved;
  }
  return n;
}

TierMoves KvHierarchy::store(const std::vector<std::uint64_t>& keys) {
  TierMoves m;
  store(keys, m);
  return m;
}

void KvHierarchy::store(const std::vector<std::uint64_t>& keys, TierMoves& m) {
  m.placed.assign(m_levels.size(), 0);
  m.demoted.assign(m_levels.size(), 0);
  if (m_write == TierWritePolicy::WriteThrough) {
    for (std::size_t i = 0; i < m_levels.size(); ++i) place(i, keys, Why::Store, false, m);
  } else {
    place(0, keys, Why::Store, false, m);
  }
}

TierMoves KvHierarchy::promote(const std::vector<std::uint64_t>& keys, const std::vector<int>& from,
                               bool force) {
  TierMoves m = empty_moves();
  if ((!m_promote && !force) || keys.empty()) return m;
  if (from.size() != keys.size())
    throw std::invalid_argument("KvHierarchy::promote: one source level per key");
  for (int f : from)
    if (f > 0 && static_cast<std::size_t>(f) < m_levels.size())
      ++m_levels[static_cast<std::size_t>(f)].stats.promoted_out;
  place(0, keys, Why::Promote, false, m);
  return m;
}

void KvHierarchy::warm(const std::vector<std::uint64_t>& keys) {
  TierMoves m = empty_moves();
  if (m_write == TierWritePolicy::WriteThrough) {
    for (std::size_t i = 0; i < m_levels.size(); ++i) place(i, keys, Why::Warm, false, m);
  } else {
    place(0, keys, Why::Warm, false, m);
  }
}

double hierarchy_capacity_bytes(const TiersSpec& tiers, double dram_bytes) {
  const double levels[] = {dram_bytes, tiers.cxl_capacity_bytes, tiers.nvme_capacity_bytes,
                           tiers.remote_capacity_bytes};
  double sum = 0, most = 0;
  for (const double b : levels) {
    sum += b;
    most = std::max(most, b);
  }
  return tiers.write == TierWritePolicy::WriteBack ? sum : most;
}

}  // namespace kappasim
