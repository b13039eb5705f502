// The cluster's router as a small interface with a name registry (cluster.router), as the
// scheduler's admission policy (serving/scheduler_policy.hpp). Pure C++, no SystemC: a router
// reads the cluster through ClusterView, which serving/cluster.cpp implements over the live
// engines, so a router is testable with a hand-built view.
//
// What a router decides: the node an arriving request goes to, from the nodes' live state. What
// it does not: the cached-token lookup, the backlog and service estimates (serving/
// cluster_spec.hpp estimate_backlog / estimate_service) and the queueing are the cluster's.
//
// Adding a router (docs/routing.md "How to add a router"): one file under serving/routers/ that
// defines a RouterPolicy and registers it with a static RouterRegistrar, plus its line in
// serving/CMakeLists.txt. cluster.router accepts the name; `kappasim presets policies` lists it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "core/registry.hpp"
#include "workloads/request.hpp"

namespace kappasim {

// What a router may read of the cluster at an arrival (node indices 0 .. nodes()-1, in node
// group order, then index within the group), or of an engine's DP-attention ranks (nodes are
// then ranks; serving/rank_view.hpp).
class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::size_t nodes() const = 0;
  // Requests routed to node i that have not finished (queued for it or inside its engine).
  virtual std::size_t outstanding(std::size_t i) const = 0;
  // Of them, those in its schedulers' waiting queues (or queued before it), and the rest.
  virtual std::size_t waiting(std::size_t i) const = 0;
  std::size_t running(std::size_t i) const { return outstanding(i) - waiting(i); }
  // Seconds from now until `r` would finish on node i if sent there now: the node's backlog plus
  // r's isolated service time at the cached tokens r finds there (kappa_aware's estimate).
  virtual double estimated_completion_s(std::size_t i, const Request& r) const = 0;
  // What the cache-aware routers read of node i for `r` (issue 23 part 4):
  struct NodeCache {
    std::int64_t cached_tokens = 0;           // of r's prompt, held by the node's KV store now
                                              // (leading whole chunks; at most the prompt − 1)
    std::int64_t pending_prefill_tokens = 0;  // prompt tokens still to prefill there (queued
                                              // requests included)
    std::int64_t kv_tokens_used = 0;          // KV tokens its running requests hold in HBM
    std::int64_t kv_tokens_total = 0;         // its paged KV pool, in tokens
    double store_bytes = 0;                   // what its KV store (DRAM tier) holds
  };
  virtual NodeCache cache(std::size_t i, const Request& r) const = 0;
  // Node i's compute capacity, in peak dense FLOP/s (its GPUs × the GPU's peak at the node's
  // compute dtype): what weighted_round_robin shares arrivals by. An engine's DP-attention ranks
  // are equal, so the default, 1 per node, is theirs.
  virtual double capacity(std::size_t) const { return 1.0; }
};

class RouterPolicy {
 public:
  virtual ~RouterPolicy() = default;
  // The node for `r` (< view.nodes()). Called once per arrival, in arrival order; a router may
  // keep state between calls (round_robin's cursor). Must be deterministic.
  virtual std::size_t choose(const Request& r, const ClusterView& view) = 0;
};

using RouterRegistry = Registry<RouterPolicy>;
RouterRegistry& routers();
using RouterRegistrar = Registrar<RouterRegistry>;

// A registered router's name: the value of cluster.router; compared by name (see Policy in
// serving/scheduler_policy.hpp). The constants are the routers that predate the registry.
struct RouterKind {
  const char* name = "round_robin";

  static const RouterKind RoundRobin;   // "round_robin": node i, i+1, ... whatever the load
  static const RouterKind LeastLoaded;  // "least_loaded": fewest outstanding; ties lowest index
  static const RouterKind KappaAware;   // "kappa_aware": earliest estimated completion

  friend bool operator==(const RouterKind& a, const RouterKind& b) {
    return std::strcmp(a.name, b.name) == 0;
  }
  friend bool operator!=(const RouterKind& a, const RouterKind& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const RouterKind& r) { return os << r.name; }
};
inline constexpr RouterKind RouterKind::RoundRobin{"round_robin"};
inline constexpr RouterKind RouterKind::LeastLoaded{"least_loaded"};
inline constexpr RouterKind RouterKind::KappaAware{"kappa_aware"};

// Every registered router as (name, RouterKind), ordered by name: the choices of cluster.router.
const std::vector<std::pair<const char*, RouterKind>>& router_names();
const char* router_name(RouterKind r);
// A fresh router; InputError listing the registered names when `r` is not one.
std::unique_ptr<RouterPolicy> make_router(RouterKind r);

}  // namespace kappasim
