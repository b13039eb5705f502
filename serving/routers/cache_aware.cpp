// cache_aware: SGLang's router (sgl-model-gateway, policy cache_aware; the algorithm in its
// CacheAware router's comment, defaults from its CLI, src/main.rs):
//  - the system is imbalanced when both (most − fewest outstanding requests) > balance_abs 64
//    and most > balance_rel 1.5 × fewest: then the node with the fewest outstanding requests;
//  - else the node whose cache holds the largest share of the request's prompt, if that share
//    is above cache_threshold 0.3;
//  - else the node whose cache holds least (SGLang: the smallest tree, "most available cache
//    capacity").
// Ties go to the lowest index. SGLang's approximate tree records which prompts were routed where;
// here the share is what the node's KV store holds (exact, as with KV events) and the "tree size"
// is its store's bytes.
#include <algorithm>
#include <limits>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

// [S] sgl-model-gateway CLI defaults (--cache-threshold, --balance-abs-threshold,
// --balance-rel-threshold).
constexpr double kCacheThreshold = 0.3;
constexpr std::size_t kBalanceAbs = 64;
constexpr double kBalanceRel = 1.5;

class CacheAware final : public RouterPolicy {
 public:
  std::size_t choose(const Request& r, const ClusterView& view) override {
    const std::size_t n = view.nodes();
    std::size_t most = 0, fewest = std::numeric_limits<std::size_t>::max(), least_loaded = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t load = view.outstanding(i);
      if (load < fewest) {
        fewest = load;
        least_loaded = i;
      }
      if (load > most) most = load;
    }
    if (most - fewest > kBalanceAbs &&
        static_cast<double>(most) > kBalanceRel * static_cast<double>(fewest))
      return least_loaded;
    const double prompt = static_cast<double>(std::max<std::int64_t>(r.prompt_tokens(), 1));
    std::size_t best = 0, smallest = 0;
    double best_rate = -1, smallest_bytes = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      const ClusterView::NodeCache c = view.cache(i, r);
      const double rate = static_cast<double>(c.cached_tokens) / prompt;
      if (rate > best_rate) {
        best_rate = rate;
        best = i;
      }
      if (c.store_bytes < smallest_bytes) {
        smallest_bytes = c.store_bytes;
        smallest = i;
      }
    }
    return best_rate > kCacheThreshold ? best : smallest;
  }
};

const RouterRegistrar kCacheAware(routers(), "cache_aware",
                                  "SGLang's router: least loaded when imbalanced, else the "
                                  "best prefix match above 0.3, else the emptiest cache",
                                  []() -> std::unique_ptr<RouterPolicy> {
                                    return std::make_unique<CacheAware>();
                                  });

}  // namespace
}  // namespace kappasim
