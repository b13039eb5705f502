#include "serving/kv_tier.hpp"

#include <cmath>
#include <stdexcept>

namespace kappasim {

KvTier::KvTier(int chunk_tokens, double capacity_bytes, double bytes_per_token)
    : m_chunk_tokens(chunk_tokens),
      m_chunk_bytes(static_cast<double>(chunk_tokens) * bytes_per_token),
      m_capacity_bytes(capacity_bytes),
      m_capacity_chunks(0) {
  if (chunk_tokens < 1) throw std::invalid_argument("KvTier: chunk_tokens must be >= 1");
  if (!(capacity_bytes >= 0) || !std::isfinite(capacity_bytes))
    throw std::invalid_argument("KvTier: capacity_bytes must be finite and >= 0");
  if (!(bytes_per_token > 0) || !std::isfinite(bytes_per_token))
    throw std::invalid_argument("KvTier: bytes_per_token must be finite and > 0");
  // floor(capacity / chunk) computed in doubles; a tiny relative tolerance keeps an exact
  // multiple (e.g. 3 × chunk bytes given as a product) from flooring one chunk short.
  const double n = std::floor(capacity_bytes / m_chunk_bytes * (1 + 1e-12));
  m_capacity_chunks = static_cast<std::size_t>(n);
}

void KvTier::touch(std::list<std::uint64_t>::iterator it) {
  m_lru.splice(m_lru.end(), m_lru, it);  // iterators stay valid
}

std::size_t KvTier::lookup(const std::vector<std::uint64_t>& keys) {
  ++m_lookups;
  std::size_t hits = 0;
  for (std::uint64_t k : keys) {
    auto f = m_index.find(k);
    if (f == m_index.end()) break;
    touch(f->second);
    ++hits;
  }
  m_hit_chunks += hits;
  m_miss_chunks += keys.size() - hits;
  return hits;
}

std::size_t KvTier::insert(const std::vector<std::uint64_t>& keys) { return place(keys, false); }
std::size_t KvTier::warm(const std::vector<std::uint64_t>& keys) { return place(keys, true); }

std::size_t KvTier::insert(const std::vector<std::uint64_t>& keys,
                           std::vector<std::uint64_t>* evicted) {
  return place(keys, false, evicted);
}
std::size_t KvTier::warm(const std::vector<std::uint64_t>& keys,
                         std::vector<std::uint64_t>* evicted) {
  return place(keys, true, evicted);
}
bool KvTier::touch_key(std::uint64_t key) {
  auto f = m_index.find(key);
  if (f == m_index.end()) return false;
  touch(f->second);
  return true;
}

std::size_t KvTier::place(const std::vector<std::uint64_t>& keys, bool warm,
                          std::vector<std::uint64_t>* evicted) {
  std::size_t stored = 0;
  for (std::uint64_t k : keys) {
    auto f = m_index.find(k);
    if (f != m_index.end()) {
      touch(f->second);
      continue;
    }
    if (m_capacity_chunks == 0) {  // a chunk larger than the pool: LMCache drops the store
      if (!warm) ++m_dropped_chunks;
      continue;
    }
    while (m_lru.size() >= m_capacity_chunks) {
      if (evicted) evicted->push_back(m_lru.front());
      m_index.erase(m_lru.front());
      m_lru.pop_front();
      ++m_evicted_chunks;
    }
    m_lru.push_back(k);
    m_index.emplace(k, std::prev(m_lru.end()));
    const bool seen_before = !m_seen.insert(k).second;
    if (warm) {
      ++m_warm_chunks;
    } else {
      ++m_stored_chunks;
      if (seen_before) ++m_restored_chunks;
    }
    ++stored;
  }
  return stored;
}

bool KvTier::contains(std::uint64_t key) const { return m_index.count(key) != 0; }

}  // namespace kappasim
