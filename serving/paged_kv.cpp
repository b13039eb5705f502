#include "serving/paged_kv.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim {

double effective_kv_bytes_per_gpu(const ModelSpec& model, const GpuSpec& gpu, int tp, DType weights,
                                  double activation_reserve_bytes, double gpu_memory_utilization) {
  if (tp < 1) throw std::invalid_argument("effective_kv_bytes_per_gpu: tp must be >= 1");
  if (!(gpu_memory_utilization > 0 && gpu_memory_utilization <= 1))
    throw std::invalid_argument(
        "effective_kv_bytes_per_gpu: gpu_memory_utilization must be in (0, 1]");
  if (!(activation_reserve_bytes >= 0))
    throw std::invalid_argument("effective_kv_bytes_per_gpu: activation reserve must be >= 0");
  const double usable = gpu.hbm_capacity_bytes * gpu_memory_utilization;
  const double w = weight_bytes(model, weights) / tp;
  const double v = usable - w - activation_reserve_bytes;
  if (!(v > 0)) {
    const std::string m = model.name.empty() ? model.display_name : model.name;
    const std::string g = gpu.name.empty() ? gpu.display_name : gpu.name;
    throw InputError("model '" + m + "' does not fit on GPU '" + g + "' at tp " +
                     std::to_string(tp) + ": HBM " +
                     format_quantity(gpu.hbm_capacity_bytes, dim::bytes) + " × " +
                     format_number(gpu_memory_utilization) + " = " +
                     format_quantity_approx(usable, dim::bytes, 6) + ", weights per GPU " +
                     format_quantity_approx(w, dim::bytes, 6) + ", activation reserve " +
                     format_quantity_approx(activation_reserve_bytes, dim::bytes, 6) +
                     " leave no room for KV (raise tp or gpu_memory_utilization, or use a GPU "
                     "with more HBM)");
  }
  return v;
}

std::int64_t kv_blocks_for(double v_eff_bytes, int block_tokens,
                           double kv_bytes_per_token_per_gpu) {
  if (block_tokens < 1 || !(kv_bytes_per_token_per_gpu > 0))
    throw std::invalid_argument("kv_blocks_for: block_tokens and KV bytes must be positive");
  if (!(v_eff_bytes > 0)) return 0;
  return static_cast<std::int64_t>(
      std::floor(v_eff_bytes / (static_cast<double>(block_tokens) * kv_bytes_per_token_per_gpu)));
}

PagedKv::PagedKv(std::int64_t total_blocks, int block_tokens)
    : m_total(total_blocks), m_block_tokens(block_tokens) {
  if (total_blocks < 0) throw std::invalid_argument("PagedKv: total_blocks must be >= 0");
  if (block_tokens < 1) throw std::invalid_argument("PagedKv: block_tokens must be >= 1");
}

void PagedKv::set_hybrid(const HybridKv& h) {
  if (!(h.full_Bpt > 0)) throw std::invalid_argument("PagedKv::set_hybrid: no full-layer bytes");
  if (m_apc) throw std::logic_error("PagedKv::set_hybrid: after enable_prefix_cache");
  m_hybrid = h;
  const double unit = static_cast<double>(m_block_tokens) * h.full_Bpt;
  m_state_blocks =
      h.state_B > 0 ? static_cast<std::int64_t>(std::ceil(h.state_B / unit - 1e-9)) : 0;
}

std::int64_t PagedKv::blocks_for(std::int64_t tokens) const {
  if (tokens <= 0) return 0;
  const std::int64_t full = (tokens + m_block_tokens - 1) / m_block_tokens;
  if (!m_hybrid) return full;
  // The other layer kinds' bytes (window, chunk, state) over a full-layer block's, rounded up.
  const double unit = static_cast<double>(m_block_tokens) * m_hybrid->full_Bpt;
  const double rest = m_hybrid->pool_bytes(static_cast<double>(tokens), m_block_tokens) -
                      static_cast<double>(full) * unit;
  return full + static_cast<std::int64_t>(std::ceil(std::max(0.0, rest) / unit - 1e-9));
}

void PagedKv::enable_prefix_cache() {
  if (m_used != 0 || m_apc) throw std::logic_error("PagedKv::enable_prefix_cache: pool in use");
  m_apc = true;
  m_free.clear();
  if (m_total > 0) m_free.push_back({m_total, 0});
}

std::int64_t PagedKv::match(const std::vector<std::uint64_t>& keys, std::int64_t max_blocks) const {
  std::int64_t n = 0;
  if (!m_apc) return 0;
  for (std::uint64_t k : keys) {
    if (n >= max_blocks || !m_keys.count(k)) break;
    ++n;
  }
  // Hybrid with linear layers: back to the last block whose state is cached (MambaManager).
  if (m_state_blocks > 0)
    while (n > 0 && !m_states.count(keys[static_cast<std::size_t>(n - 1)])) --n;
  return n;
}

const PagedKv::KeyState* PagedKv::hit_state(const std::vector<std::uint64_t>& keys,
                                            std::int64_t hit) const {
  if (m_state_blocks == 0 || hit <= 0) return nullptr;
  const auto it = m_states.find(keys.at(static_cast<std::size_t>(hit - 1)));
  if (it == m_states.end())
    throw std::logic_error("PagedKv: no state is cached after block " + std::to_string(hit));
  return &it->second;
}

std::int64_t PagedKv::blocks_needed(std::int64_t tokens, const std::vector<std::uint64_t>& keys,
                                    std::int64_t hit) const {
  return std::max<std::int64_t>(0, blocks_for(tokens) - hit) + free_among(keys, hit);
}

std::int64_t PagedKv::free_among(const std::vector<std::uint64_t>& keys, std::int64_t hit) const {
  std::int64_t from_free = 0;
  for (std::int64_t i = 0; i < hit; ++i) {
    const auto it = m_keys.find(keys.at(static_cast<std::size_t>(i)));
    if (it == m_keys.end())
      throw std::logic_error("PagedKv::free_among: block " + std::to_string(i) +
                             " is not registered");
    if (it->second.refs == 0) ++from_free;
  }
  if (const KeyState* st = hit_state(keys, hit); st && st->refs == 0) from_free += m_state_blocks;
  return from_free;
}

void PagedKv::take_free(std::int64_t n) {
  while (n > 0) {
    if (m_free.empty()) throw std::logic_error("PagedKv: the free queue ran out");
    FreeEntry& e = m_free.front();
    if (e.run > 0) {
      const std::int64_t t = std::min(n, e.run);
      e.run -= t;
      n -= t;
      if (e.run == 0) m_free.pop_front();
    } else if (e.state) {  // a cached state's blocks reused: the state is evicted
      m_states.erase(e.key);
      ++m_generation;
      m_evicted += m_state_blocks;
      m_free.pop_front();
      n -= m_state_blocks;
      if (n < 0) m_free.push_front({-n, 0});  // what the state freed beyond n: unregistered
    } else {                                  // a registered block reused: its key is evicted
      m_keys.erase(e.key);
      ++m_generation;
      ++m_evicted;
      m_free.pop_front();
      --n;
    }
  }
}

void PagedKv::push_free_run(std::int64_t n) {
  if (n <= 0) return;
  if (!m_free.empty() && m_free.back().run > 0)
    m_free.back().run += n;
  else
    m_free.push_back({n, 0});
}

void PagedKv::allocate_shared(std::uint64_t seq, std::int64_t tokens,
                              const std::vector<std::uint64_t>& keys, std::int64_t hit) {
  if (!m_apc) {
    if (hit != 0) throw std::logic_error("PagedKv::allocate_shared: prefix caching is off");
    allocate(seq, tokens);
    return;
  }
  if (m_held.find(seq))
    throw std::logic_error("PagedKv::allocate: sequence " + std::to_string(seq) +
                           " already holds blocks");
  const std::int64_t need = blocks_needed(tokens, keys, hit);
  if (need > free_blocks())
    throw std::logic_error("PagedKv::allocate: sequence " + std::to_string(seq) + " needs " +
                           std::to_string(need) + " free blocks, " + std::to_string(free_blocks()) +
                           " free of " + std::to_string(m_total));
  Holding h;
  if (hit > 0) ++m_generation;
  for (std::int64_t i = 0; i < hit; ++i) {
    const std::uint64_t k = keys[static_cast<std::size_t>(i)];
    KeyState& ks = m_keys.at(k);
    if (ks.refs++ == 0) m_free.erase(ks.free);
    h.keys.push_back(k);
  }
  if (hit_state(keys, hit)) {  // the hit's state, held (its blocks are in `need` when free)
    const std::uint64_t k = keys[static_cast<std::size_t>(hit - 1)];
    KeyState& st = m_states.at(k);
    if (st.refs++ == 0) m_free.erase(st.free);
    h.state = k;
  }
  const std::int64_t fresh = std::max<std::int64_t>(0, blocks_for(tokens) - hit);
  take_free(fresh);
  h.unregistered = fresh;
  h.next = hit;
  m_used += need;
  m_held.insert(seq, hit + fresh);
  m_holdings.emplace(seq, std::move(h));
  if (m_used > m_total) throw std::logic_error("PagedKv: used blocks exceed the total");
}

void PagedKv::register_blocks(std::uint64_t seq, const std::vector<std::uint64_t>& keys,
                              std::int64_t upto) {
  if (!m_apc) return;
  const auto it = m_holdings.find(seq);
  if (it == m_holdings.end())
    throw std::logic_error("PagedKv::register_blocks: sequence " + std::to_string(seq) +
                           " holds no blocks");
  Holding& h = it->second;
  upto = std::min<std::int64_t>(upto, static_cast<std::int64_t>(keys.size()));
  for (; h.next < upto && h.unregistered > 0; ++h.next) {
    const std::uint64_t k = keys[static_cast<std::size_t>(h.next)];
    if (m_keys.count(k)) continue;  // another block holds this key: this one stays unregistered
    m_keys[k].refs = 1;
    ++m_generation;
    h.keys.push_back(k);
    --h.unregistered;
  }
  // The state after `upto` blocks (vLLM "align": a step's prefill ends on a block boundary and
  // its state is kept in that block), into the free queue's tail as the newest cached entry.
  if (m_state_blocks == 0 || upto <= 0) return;
  const std::uint64_t k = keys[static_cast<std::size_t>(upto - 1)];
  if (m_states.count(k) || free_blocks() < m_state_blocks) return;
  take_free(m_state_blocks);
  KeyState& st = m_states[k];
  st.free = m_free.insert(m_free.end(), {0, k, true});
  ++m_generation;
}

void PagedKv::allocate(std::uint64_t seq, std::int64_t tokens) {
  if (m_apc) {
    allocate_shared(seq, tokens, {}, 0);
    return;
  }
  if (m_held.find(seq))
    throw std::logic_error("PagedKv::allocate: sequence " + std::to_string(seq) +
                           " already holds blocks");
  const std::int64_t b = blocks_for(tokens);
  if (b > free_blocks())
    throw std::logic_error("PagedKv::allocate: sequence " + std::to_string(seq) + " needs " +
                           std::to_string(b) + " blocks, " + std::to_string(free_blocks()) +
                           " free of " + std::to_string(m_total));
  m_held.insert(seq, b);
  m_used += b;
  if (m_used > m_total) throw std::logic_error("PagedKv: used blocks exceed the total");
}

bool PagedKv::grow(std::uint64_t seq, std::int64_t tokens) {
  std::int64_t* held = m_held.find(seq);
  if (!held)
    throw std::logic_error("PagedKv::grow: sequence " + std::to_string(seq) + " holds no blocks");
  const std::int64_t more = blocks_for(tokens) - *held;
  if (more < 0 && m_hybrid) {  // blocks that left a window or a chunk are freed
    *held += more;
    m_used += more;
  }
  if (more <= 0) return true;
  if (more > free_blocks()) return false;
  if (m_apc) {
    take_free(more);
    m_holdings.at(seq).unregistered += more;
  }
  *held += more;
  m_used += more;
  return true;
}

void PagedKv::release(std::uint64_t seq) {
  std::int64_t held = 0;
  if (!m_held.erase(seq, &held))
    throw std::logic_error("PagedKv::release: sequence " + std::to_string(seq) +
                           " holds no blocks");
  m_used -= held;
  if (m_apc) {  // tail first: its unregistered blocks, then its registered ones last to first
    const auto h = m_holdings.find(seq);
    if (!h->second.keys.empty()) ++m_generation;
    push_free_run(h->second.unregistered);
    for (auto k = h->second.keys.rbegin(); k != h->second.keys.rend(); ++k) {
      KeyState& ks = m_keys.at(*k);
      if (--ks.refs > 0) {
        ++m_used;  // still held by another sequence
        continue;
      }
      ks.free = m_free.insert(m_free.end(), {0, *k});
    }
    if (h->second.state) {  // the hit's state: back to the queue when nobody else holds it
      ++m_generation;
      KeyState& st = m_states.at(*h->second.state);
      if (--st.refs == 0) {
        m_used -= m_state_blocks;
        st.free = m_free.insert(m_free.end(), {0, *h->second.state, true});
      }
    }
    m_holdings.erase(h);
  }
  if (m_used < 0) throw std::logic_error("PagedKv: used blocks below zero");
}

double PagedKv::utilization() const {
  return m_total > 0 ? static_cast<double>(m_used) / static_cast<double>(m_total) : 0;
}

}  // namespace kappasim
