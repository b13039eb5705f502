#include "serving/rank_view.hpp"

#include <algorithm>

#include "serving/kv_store.hpp"

namespace kappasim {

namespace {
int rank_of(std::size_t i) { return static_cast<int>(i); }
}  // namespace

std::size_t RankView::outstanding(std::size_t i) const { return m_ledger.outstanding(rank_of(i)); }

std::size_t RankView::waiting(std::size_t i) const { return waiting_on(rank_of(i)); }

double RankView::estimated_completion_s(std::size_t i, const Request& r) const {
  if (!m_model) m_model = make_node_model(m_spec);
  const std::int64_t K = cached_tokens_on(r, rank_of(i));
  return estimate_backlog(*m_model, m_ledger.pending_load_tokens(rank_of(i)),
                          m_ledger.compute_tokens(rank_of(i))) +
         estimate_service(*m_model, K, r.prompt_tokens() - K).total_s;
}

ClusterView::NodeCache RankView::cache(std::size_t i, const Request& r) const {
  NodeCache c;
  c.cached_tokens = cached_tokens_on(r, rank_of(i));
  c.pending_prefill_tokens = m_ledger.compute_tokens(rank_of(i));
  c.kv_tokens_used = kv_tokens_used_on(rank_of(i));
  c.kv_tokens_total = kv_tokens_total_on(rank_of(i));
  c.store_bytes = store_bytes_on(rank_of(i));
  return c;
}

std::int64_t RankView::cached_tokens(const Request& r) const {
  std::int64_t most = 0;
  for (const auto& rk : m_ranks) most = std::max(most, cached_tokens_on(r, rk->index));
  return most;
}

std::size_t RankView::waiting_on(int r) const {
  std::size_t n = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) n += rank->sched->waiting();
  return n;
}

std::int64_t RankView::cached_tokens_on(const Request& r, int rank) const {
  const KvTier& t = m_ranks.at(static_cast<std::size_t>(rank))->store->dram();
  const int chunk = t.chunk_tokens();
  const std::vector<std::uint64_t> keys = chunk_keys(r, chunk);
  std::size_t hits = 0;
  while (hits < keys.size() && t.contains(keys[hits])) ++hits;
  if (m_spec.serving.warm_tier)  // arrivals put the prefix's whole chunks in the tier
    hits = std::max<std::size_t>(
        hits,
        std::min<std::size_t>(keys.size(), static_cast<std::size_t>(r.prefix_tokens / chunk)));
  std::int64_t held = static_cast<std::int64_t>(hits) * chunk;
  // serving.prefix_caching: or the leading blocks its GPUs' prefix cache holds (llm-d's prefix
  // scorer sees both: vLLM publishes KV events for the GPU's blocks and the offloaded ones).
  const PagedKv& kv = *m_ranks.at(static_cast<std::size_t>(rank))->kv;
  if (kv.prefix_caching()) {
    const std::int64_t b = kv.block_tokens();
    held = std::max(held, kv.match(chunk_keys(r, static_cast<int>(b)), r.prompt_tokens()) * b);
  }
  // As make_sequence: at least one prompt token is computed.
  return std::clamp<std::int64_t>(held, 0, std::max<std::int64_t>(r.prompt_tokens() - 1, 0));
}

std::int64_t RankView::kv_tokens_used_on(int r) const {
  std::int64_t n = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) n += rank->kv->used_blocks() * rank->kv->block_tokens();
  return n;
}

std::int64_t RankView::kv_tokens_total_on(int r) const {
  std::int64_t n = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) n += rank->kv->total_tokens();
  return n;
}

double RankView::store_bytes_on(int r) const {
  double b = 0;
  for (const auto& rank : m_ranks)
    if (r < 0 || rank->index == r) b += rank->store->dram().used_bytes();
  return b;
}

}  // namespace kappasim
