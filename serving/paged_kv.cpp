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
    throw InputError(
        "model '" + m + "' does not fit on GPU '" + g + "' at tp " + std::to_string(tp) + ": HBM " +
        format_quantity(gpu.hbm_capacity_bytes, dim::bytes) + " × " +
        format_number(gpu_memory_utilization) + " = " + format_quantity(usable, dim::bytes) +
        ", weights per GPU " + format_quantity(w, dim::bytes) + ", activation reserve " +
        format_quantity(activation_reserve_bytes, dim::bytes) +
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
  m_hybrid = h;
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

void PagedKv::allocate(std::uint64_t seq, std::int64_t tokens) {
  if (m_held.count(seq))
    throw std::logic_error("PagedKv::allocate: sequence " + std::to_string(seq) +
                           " already holds blocks");
  const std::int64_t b = blocks_for(tokens);
  if (b > free_blocks())
    throw std::logic_error("PagedKv::allocate: sequence " + std::to_string(seq) + " needs " +
                           std::to_string(b) + " blocks, " + std::to_string(free_blocks()) +
                           " free of " + std::to_string(m_total));
  m_held.emplace(seq, b);
  m_used += b;
  if (m_used > m_total) throw std::logic_error("PagedKv: used blocks exceed the total");
}

bool PagedKv::grow(std::uint64_t seq, std::int64_t tokens) {
  auto it = m_held.find(seq);
  if (it == m_held.end())
    throw std::logic_error("PagedKv::grow: sequence " + std::to_string(seq) + " holds no blocks");
  const std::int64_t more = blocks_for(tokens) - it->second;
  if (more < 0 && m_hybrid) {  // blocks that left a window or a chunk are freed
    it->second += more;
    m_used += more;
  }
  if (more <= 0) return true;
  if (more > free_blocks()) return false;
  it->second += more;
  m_used += more;
  return true;
}

void PagedKv::release(std::uint64_t seq) {
  auto it = m_held.find(seq);
  if (it == m_held.end())
    throw std::logic_error("PagedKv::release: sequence " + std::to_string(seq) +
                           " holds no blocks");
  m_used -= it->second;
  m_held.erase(it);
  if (m_used < 0) throw std::logic_error("PagedKv: used blocks below zero");
}

double PagedKv::utilization() const {
  return m_total > 0 ? static_cast<double>(m_used) / static_cast<double>(m_total) : 0;
}

}  // namespace kappasim
