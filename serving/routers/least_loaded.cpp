// least_loaded: the node with the fewest outstanding requests (routed, not finished); ties go to
// the lowest node index. Counts requests, not their size or their cached tokens.
#include <limits>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

class LeastLoaded final : public RouterPolicy {
 public:
  std::size_t choose(const Request&, const ClusterView& view) override {
    std::size_t best = 0;
    std::size_t best_load = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < view.nodes(); ++i) {
      const std::size_t load = view.outstanding(i);
      if (load < best_load) {
        best = i;
        best_load = load;
      }
    }
    return best;
  }
};

const RouterRegistrar kLeastLoaded(routers(), "least_loaded",
                                   "fewest outstanding requests; ties: lowest node index",
                                   []() -> std::unique_ptr<RouterPolicy> {
                                     return std::make_unique<LeastLoaded>();
                                   });

}  // namespace
}  // namespace kappasim
