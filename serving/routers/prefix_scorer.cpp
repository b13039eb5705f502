// prefix_scorer: llm-d's inference scheduler (Endpoint Picker) with its precise prefix-cache
// scorer, as the llm-d "optimized baseline" guide configures it: the weighted sum of three
// scorers, each in [0, 1], and the max-score picker:
//   3 × prefix-cache score   the share of the request's prompt the node's KV cache holds
//   2 × queue score          (most waiting − its waiting) / (most − fewest); 1 when all equal
//   2 × KV-cache score       1 − its paged KV pool's used fraction
// (weights: llm-d guides/optimized-baseline EndpointPickerConfig, prefix-cache-scorer 3,
// queue-scorer 2, kv-cache-utilization-scorer 2). Ties go to the lowest index (the picker picks
// at random among ties; deterministic here). The cached share is of the node's KV store: llm-d's
// precise scorer reads vLLM's KV events of its GPU prefix cache; with LMCache offloading the
// store is where a prefix outlives the GPU cache.
#include <algorithm>
#include <limits>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

constexpr double kPrefixWeight = 3, kQueueWeight = 2, kKvWeight = 2;  // [S] llm-d guide

class PrefixScorer final : public RouterPolicy {
 public:
  std::size_t choose(const Request& r, const ClusterView& view) override {
    const std::size_t n = view.nodes();
    std::size_t most = 0, fewest = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < n; ++i) {
      most = std::max(most, view.waiting(i));
      fewest = std::min(fewest, view.waiting(i));
    }
    const double prompt = static_cast<double>(std::max<std::int64_t>(r.prompt_tokens(), 1));
    std::size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      const ClusterView::NodeCache c = view.cache(i, r);
      const double prefix = static_cast<double>(c.cached_tokens) / prompt;
      const double queue = most == fewest ? 1.0
                                          : static_cast<double>(most - view.waiting(i)) /
                                                static_cast<double>(most - fewest);
      const double kv = c.kv_tokens_total > 0 ? 1.0 - static_cast<double>(c.kv_tokens_used) /
                                                          static_cast<double>(c.kv_tokens_total)
                                              : 0.0;
      const double score = kPrefixWeight * prefix + kQueueWeight * queue + kKvWeight * kv;
      if (score > best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }
};

const RouterRegistrar kPrefixScorer(routers(), "prefix_scorer",
                                    "llm-d's scheduler: 3 x cached prompt share + 2 x queue "
                                    "score + 2 x free KV share, highest; ties: lowest",
                                    []() -> std::unique_ptr<RouterPolicy> {
                                      return std::make_unique<PrefixScorer>();
                                    });

}  // namespace
}  // namespace kappasim
