// kappa_aware: the node with the earliest estimated completion of the request (backlog plus its
// isolated service time at the cached tokens it finds there; serving/cluster_spec.hpp
// estimate_backlog / estimate_service, docs/routing.md); ties go to the lowest node index.
#include <limits>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

class KappaAware final : public RouterPolicy {
 public:
  std::size_t choose(const Request& r, const ClusterView& view) override {
    std::size_t best = 0;
    double best_t = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < view.nodes(); ++i) {
      const double t = view.estimated_completion_s(i, r);
      if (t < best_t) {
        best = i;
        best_t = t;
      }
    }
    return best;
  }
};

const RouterRegistrar kKappaAware(
    routers(), "kappa_aware",
    "earliest estimated completion (backlog + service); ties: lowest index",
    []() -> std::unique_ptr<RouterPolicy> { return std::make_unique<KappaAware>(); });

}  // namespace
}  // namespace kappasim
