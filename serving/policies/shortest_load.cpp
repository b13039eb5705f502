// shortest_load: admit the waiting sequence with the fewest cached tokens to load (K_hit) first,
// a shortest-job-first on the load phase: a step's loads finish before its compute can use them,
// so one long load delays every sequence admitted with it. Mean TTFT falls when short loads go
// first (the shortest-processing-time rule), at the price of the long ones. It orders by load
// only: where a small K means a tier miss on a long prompt (the same tokens computed instead of
// loaded), the fewest-load request is the longest job and mean TTFT can rise (docs/scheduler.md).
//
//  - order: cached_tokens ascending; ties in arrival order (a stable sort of the arrival-ordered
//    queue), so the result is deterministic and equals fifo when every K is equal.
//  - a sequence that does not fit (KV blocks, or budget with chunked prefill off) is skipped and
//    the next in load order is tried (first-fit, as utilization); the step stops when the budget
//    or max_num_seqs is spent.
//  - starvation: NOT bounded. A sequence with a long load waits as long as shorter loads keep
//    arriving and fill the steps; use `fair` for a wait bound. Its `credit` counts the steps in
//    which a later arrival went ahead of it.
//
// This file is the worked example of docs/scheduler.md "How to add a policy": the policy and its
// registration are all there is; the engine and the scheduler are untouched.
#include <algorithm>
#include <vector>

#include "serving/scheduler.hpp"

namespace kappasim {
namespace {

class ShortestLoad final : public SchedulerPolicy {
 public:
  void admit(Admission& step) override {
    std::vector<Admission::Cursor> order;
    order.reserve(step.waiting().size());
    for (auto it = step.waiting().begin(); it != step.waiting().end(); ++it) order.push_back(it);
    std::stable_sort(order.begin(), order.end(), [](Admission::Cursor a, Admission::Cursor b) {
      return a->cached_tokens() < b->cached_tokens();
    });
    // Admitting one leaves a tombstone in its own slot, so the other cursors stay valid.
    for (Admission::Cursor it : order)
      if (step.try_admit(it) == Admission::Outcome::NoRoom) return;
  }
};

const SchedulerPolicyRegistrar kShortestLoad(
    scheduler_policies(), "shortest_load",
    "fewest cached tokens to load first (ties: arrival order); first-fit; no wait bound",
    []() -> std::unique_ptr<SchedulerPolicy> { return std::make_unique<ShortestLoad>(); });

}  // namespace
}  // namespace kappasim
