// dp_balance: vLLM's data-parallel load balancer (DPLBAsyncMPClient, vllm/v1/engine/
// core_client.py): the target with the least waiting x 4 + running requests, ties to the lowest
// index. The engine's default for its DP-attention ranks (serving.dp_router); also a cluster
// router (nodes' schedulers summed).
#include <limits>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

class DpBalance final : public RouterPolicy {
 public:
  std::size_t choose(const Request&, const ClusterView& view) override {
    std::size_t best = 0;
    std::size_t best_score = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < view.nodes(); ++i) {
      const std::size_t score = view.waiting(i) * 4 + view.running(i);
      if (score < best_score) {
        best = i;
        best_score = score;
      }
    }
    return best;
  }
};

const RouterRegistrar kDpBalance(routers(), "dp_balance",
                                 "vLLM's DP balancer: least waiting x 4 + running; ties: lowest",
                                 []() -> std::unique_ptr<RouterPolicy> {
                                   return std::make_unique<DpBalance>();
                                 });

}  // namespace
}  // namespace kappasim
