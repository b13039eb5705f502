// The serving engine's ranks as a router sees them (issue 21): what the requests in the engine
// and the ranks' KV pools and stores hold now, for one rank or for the whole engine. It owns
// nothing: it reads the engine's ranks (serving/rank.hpp: scheduler, paged KV pool, KV store) and
// its per-request ledger (serving/request_ledger.hpp). As a ClusterView its nodes are the ranks,
// which is how the engine's own rank router (serving.dp_router) chooses a rank for an arrival; its
// whole-engine questions are what a cluster's router asks of one node (serving/cluster.cpp).
// Reads only; no SystemC of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "serving/cluster_spec.hpp"
#include "serving/rank.hpp"
#include "serving/request_ledger.hpp"
#include "serving/router_policy.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {

class RankView final : public ClusterView {
 public:
  RankView(const RunSpec& spec, const std::vector<std::unique_ptr<Rank>>& ranks,
           const RequestLedger& ledger)
      : m_spec(spec), m_ranks(ranks), m_ledger(ledger) {}

  // ---- rank i as a router's node ----
  std::size_t nodes() const override { return m_ranks.size(); }
  std::size_t outstanding(std::size_t i) const override;
  std::size_t waiting(std::size_t i) const override;
  // kappa_aware over ranks: the cluster's estimator (serving/cluster_spec) on the rank's backlog,
  // r's cached tokens in the rank's KV store.
  double estimated_completion_s(std::size_t i, const Request& r) const override;
  NodeCache cache(std::size_t i, const Request& r) const override;

  // ---- the whole engine: every rank ----
  // Requests arrived and not finished; of them in the schedulers' waiting queues; their prompt
  // tokens still to prefill; the cached tokens of those not yet admitted (whose load is ahead).
  std::size_t outstanding() const { return m_ledger.outstanding(); }
  std::size_t waiting() const { return waiting_on(-1); }
  std::int64_t compute_tokens() const { return m_ledger.compute_tokens(); }
  std::int64_t pending_load_tokens() const { return m_ledger.pending_load_tokens(); }
  // Tokens of r's prompt the best rank's KV store holds now (leading whole chunks of its DRAM
  // tier; with warm_tier the reusable prefix counts as held, as arrivals place it; at most the
  // prompt less one).
  std::int64_t cached_tokens(const Request& r) const;
  // KV tokens the running requests hold in the paged pools, the pools' size in tokens, and the
  // bytes the KV stores' DRAM tiers hold.
  std::int64_t kv_tokens_used() const { return kv_tokens_used_on(-1); }
  std::int64_t kv_tokens_total() const { return kv_tokens_total_on(-1); }
  double store_bytes() const { return store_bytes_on(-1); }

 private:
  // Rank r's alone (r >= 0), or every rank's (r < 0).
  std::size_t waiting_on(int r) const;
  std::int64_t cached_tokens_on(const Request& req, int rank) const;
  std::int64_t kv_tokens_used_on(int r) const;
  std::int64_t kv_tokens_total_on(int r) const;
  double store_bytes_on(int r) const;

  const RunSpec& m_spec;
  const std::vector<std::unique_ptr<Rank>>& m_ranks;
  const RequestLedger& m_ledger;
  mutable std::optional<NodeModel> m_model;  // kappa_aware's estimator, made at its first use
};

}  // namespace kappasim
