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

void KvTier::unlink(std::uint32_t n) {
  Node& x = m_nodes[n];
  (x.prev == kNil ? m_head : m_nodes[x.prev].next) = x.next;
  (x.next == kNil ? m_tail : m_nodes[x.next].prev) = x.prev;
}

void KvTier::push_back(std::uint32_t n) {
  m_nodes[n].prev = m_tail;
  m_nodes[n].next = kNil;
  (m_tail == kNil ? m_head : m_nodes[m_tail].next) = n;
  m_tail = n;
}

void KvTier::touch(std::uint32_t n) {
  if (n == m_tail) return;
  unlink(n);
  push_back(n);
}

void KvTier::move_run_to_back(std::uint32_t first, std::uint32_t last) {
  if (first == kNil || last == m_tail) return;  // nothing pending, or already the newest
  Node& a = m_nodes[first];
  Node& b = m_nodes[last];
  (a.prev == kNil ? m_head : m_nodes[a.prev].next) = b.next;
  m_nodes[b.next].prev = a.prev;  // b.next != kNil: last is not the tail
  a.prev = m_tail;
  m_nodes[m_tail].next = first;
  b.next = kNil;
  m_tail = last;
}

std::uint32_t KvTier::follow(std::uint32_t prev, std::uint64_t key) const {
  if (prev == kNil) return kNil;
  // The node after prev is most often prev + 1 (a run's nodes were taken from the pool one
  // after another): tested first, the address of the next key to compare does not wait for the
  // load of prev's link, so a run's compares overlap instead of each waiting for the last
  // (issue 24). The same answer: n continues the run exactly when it is prev's next and holds
  // the key.
  const std::uint32_t guess = prev + 1;
  if (guess < m_nodes.size() && m_nodes[guess].key == key && m_nodes[prev].next == guess)
    return guess;
  const std::uint32_t n = m_nodes[prev].next;
  return n != kNil && m_nodes[n].key == key ? n : kNil;
}

__attribute__((noinline)) std::size_t KvTier::along(std::uint32_t& last, const std::uint64_t* from,
                                                    const std::uint64_t* end) const {
  // follow()'s first test, key after key, in one loop (issue 24: a warm tier's warm-up places
  // every request's prefix, hundreds of present chunks each, in every probe of a capacity search).
  // Out of line: inlined, it cost the loops that call it a few instructions per new key.
  const Node* nodes = m_nodes.data();
  const std::size_t size = m_nodes.size();
  std::uint32_t at = last;
  const std::uint64_t* k = from;
  while (k != end && at + std::size_t{1} < size && nodes[at + 1].key == *k &&
         nodes[at].next == at + 1) {
    ++at;
    ++k;
  }
  last = at;
  return static_cast<std::size_t>(k - from);
}

std::size_t KvTier::lookup(const std::vector<std::uint64_t>& keys) {
  ++m_lookups;
  std::size_t hits = 0;
  std::uint32_t first = kNil, last = kNil;  // the pending run of hits, contiguous in the list
  const std::uint64_t* const end = keys.data() + keys.size();
  for (const std::uint64_t* at = keys.data(); at != end; ++at) {
    std::uint32_t f = follow(last, *at);
    if (f == kNil) {
      move_run_to_back(first, last);
      f = node_of(*at);
      if (f == kNil) {
        first = last = kNil;
        break;
      }
      first = f;
    }
    last = f;
    const std::size_t more = along(last, at + 1, end);  // the run's next keys
    hits += 1 + more;
    at += more;
  }
  move_run_to_back(first, last);
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
  const std::uint32_t f = node_of(key);
  if (f == kNil) return false;
  touch(f);
  return true;
}

std::size_t KvTier::place(const std::vector<std::uint64_t>& keys, bool warm,
                          std::vector<std::uint64_t>* evicted) {
  std::size_t stored = 0;
  std::uint32_t first = kNil, last = kNil;  // the pending run of present keys (as lookup)
  const std::uint64_t* const end = keys.data() + keys.size();
  for (const std::uint64_t* at = keys.data(); at != end; ++at) {
    const std::uint64_t k = *at;
    if (const std::uint32_t next = follow(last, k); next != kNil) {
      last = next;
      at += along(last, at + 1, end);  // the run's next keys
      continue;
    }
    move_run_to_back(first, last);  // before any eviction: touched chunks are the newest
    first = last = kNil;
    if (m_capacity_chunks == 0) {     // a chunk larger than the pool: LMCache drops the store
      if (!warm) ++m_dropped_chunks;  // (nothing is ever present in such a pool)
      continue;
    }
    // One probe finds k or makes its entry (issue 24: was a probe to find it, then another to
    // insert it): an entry already there is k's node if present, else an evicted key still
    // ever placed (a forgotten one's entry left with its eviction): it was seen before.
    auto [v, inserted] = m_keys.emplace(k, kNoNode);
    if (!inserted && (*v & kNodeBits) != kNoNode) {
      first = last = *v & kNodeBits;
      continue;
    }
    const bool seen_before = !inserted;
    bool erased = false;
    while (m_count >= m_capacity_chunks) {
      const std::uint32_t lru = m_head;
      const std::uint64_t gone = m_nodes[lru].key;
      if (evicted) evicted->push_back(gone);
      // Still ever placed: keep its entry without a node; a forgotten key leaves the map.
      std::uint32_t* g = m_keys.find_value(gone);  // present, so never nullptr
      if (*g & kForgotten) {
        m_keys.erase_value(g);
        erased = true;
      } else {
        *g = kNoNode;
      }
      unlink(lru);
      m_nodes[lru].next = m_free;
      m_free = lru;
      --m_count;
      ++m_evicted_chunks;
    }
    std::uint32_t n = m_free;
    if (n != kNil) {
      m_free = m_nodes[n].next;
    } else {
      n = static_cast<std::uint32_t>(m_nodes.size());
      m_nodes.push_back(Node{});
    }
    m_nodes[n].key = k;
    push_back(n);
    ++m_count;
    if (erased) v = m_keys.refind(v, k);  // an erase may have moved k's entry
    *v = n;
    if (!seen_before) ++m_distinct;
    if (warm) {
      ++m_warm_chunks;
    } else {
      ++m_stored_chunks;
      if (seen_before) ++m_restored_chunks;
    }
    ++stored;
  }
  move_run_to_back(first, last);
  return stored;
}

bool KvTier::contains(std::uint64_t key) const { return node_of(key) != kNil; }

void KvTier::forget(const std::vector<std::uint64_t>& keys, std::size_t from) {
  for (std::size_t i = from; i < keys.size(); ++i) {
    std::uint32_t* v = m_keys.find_value(keys[i]);
    if (v == nullptr || (*v & kForgotten)) continue;
    if ((*v & kNodeBits) == kNoNode)
      m_keys.erase_value(v);  // evicted and now not ever placed either
    else
      *v |= kForgotten;  // present: kept as the index until its eviction
  }
}

}  // namespace kappasim
