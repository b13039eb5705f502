// round_robin: node 0, 1, ..., N-1, 0, ... in node order, whatever the load or the cache (vLLM
// production-stack's roundrobin routing logic). The cursor counts arrivals since the start.
#include <cstdint>

#include "serving/router_policy.hpp"

namespace kappasim {
namespace {

class RoundRobin final : public RouterPolicy {
 public:
  std::size_t choose(const Request&, const ClusterView& view) override {
    return static_cast<std::size_t>(m_next++ % view.nodes());
  }

 private:
  std::uint64_t m_next = 0;
};

const RouterRegistrar kRoundRobin(routers(), "round_robin",
                                  "node i, i+1, ... in node order, whatever the load",
                                  []() -> std::unique_ptr<RouterPolicy> {
                                    return std::make_unique<RoundRobin>();
                                  });

}  // namespace
}  // namespace kappasim
