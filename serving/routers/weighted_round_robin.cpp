// weighted_round_robin: each node gets a share of the arrivals in proportion to its compute
// capacity (ClusterView::capacity: its GPUs' peak dense FLOP/s at its compute dtype), in nginx's
// smooth weighted round-robin order (ngx_http_upstream_round_robin.c: every pick adds each
// node's weight to its credit, takes the node with the most credit and charges it the weights'
// sum), so a 8:8:2 pool sends 8 of every 18 requests to each large node, spread, not in runs.
// The capacity-aware baseline for a mixed pool (issue 22): round robin gives an 8-GPU and a
// 2-GPU node the same share; this one does not, and still reads neither load nor cache.
#include <vector>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

class WeightedRoundRobin final : public RouterPolicy {
 public:
  std::size_t choose(const Request&, const ClusterView& view) override {
    const std::size_t n = view.nodes();
    if (m_credit.size() != n) m_credit.assign(n, 0.0);
    double total = 0;
    std::size_t best = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double w = view.capacity(i);
      total += w;
      m_credit[i] += w;
      if (m_credit[i] > m_credit[best]) best = i;  // ties: the lowest node index
    }
    m_credit[best] -= total;
    return best;
  }

 private:
  std::vector<double> m_credit;
};

const RouterRegistrar kWeightedRoundRobin(
    routers(), "weighted_round_robin",
    "arrivals shared in proportion to each node's peak compute (smooth weighted round robin)",
    []() -> std::unique_ptr<RouterPolicy> { return std::make_unique<WeightedRoundRobin>(); });

}  // namespace
}  // namespace kappasim
