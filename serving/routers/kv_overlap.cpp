// kv_overlap: NVIDIA Dynamo's KV router (docs/router/kv_cache_routing.md, "Cost Calculation";
// `--router-mode kv`): the worker with the lowest
//   cost = overlap_score_weight × prefill blocks + decode blocks
// where the prefill blocks are the worker's prompt tokens still to prefill plus this request's
// uncached ones (its prompt less what the worker holds), and the decode blocks the KV its active
// sequences hold plus this request's prompt; both in blocks of the engine's block size, which
// scales the two terms alike, so tokens are compared here. overlap_score_weight: 1, Dynamo's
// default (`--kv-overlap-score-weight`); router temperature 0 (its default): deterministic, ties to
// the lowest index. The cached tokens are the node's KV store's (Dynamo learns them from the
// engines' KV events; here they are exact).
#include <limits>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

constexpr double kOverlapScoreWeight = 1.0;  // [S] Dynamo --kv-overlap-score-weight default

class KvOverlap final : public RouterPolicy {
 public:
  std::size_t choose(const Request& r, const ClusterView& view) override {
    std::size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    const double prompt = static_cast<double>(r.prompt_tokens());
    for (std::size_t i = 0; i < view.nodes(); ++i) {
      const ClusterView::NodeCache c = view.cache(i, r);
      const double prefill = static_cast<double>(c.pending_prefill_tokens) + prompt -
                             static_cast<double>(c.cached_tokens);
      const double decode = static_cast<double>(c.kv_tokens_used) + prompt;
      const double cost = kOverlapScoreWeight * prefill + decode;
      if (cost < best_cost) {
        best = i;
        best_cost = cost;
      }
    }
    return best;
  }
};

const RouterRegistrar kKvOverlap(routers(), "kv_overlap",
                                 "Dynamo's KV router: least prefill tokens left + active KV "
                                 "tokens, its cached prefix discounted; ties: lowest",
                                 []() -> std::unique_ptr<RouterPolicy> {
                                   return std::make_unique<KvOverlap>();
                                 });

}  // namespace
}  // namespace kappasim
