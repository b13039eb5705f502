// fair: utilization plus a wait bound (serving.fairness_max_wait). A waiting sequence that has
// waited at least fairness_max_wait_s is urgent; urgent ones are tried first, oldest first, and
// when the oldest urgent one does not fit nothing else is admitted that step (the running ones
// drain until it fits). Then the rest as utilization does. Guarantee: a sequence whose prompt
// fits the empty KV pool waits at most fairness_max_wait_s plus the time to drain what was
// running (and the urgent ones ahead of it) when it became urgent. docs/scheduler.md.
#include "serving/scheduler.hpp"

namespace kappasim {
namespace {

class Fair final : public SchedulerPolicy {
 public:
  void admit(Admission& step) override {
    const double bound = step.config().fairness_max_wait_s;
    // 1. Urgent sequences, oldest first; the first that cannot be admitted holds the step.
    for (auto it = step.waiting().begin(); it != step.waiting().end();) {
      if (step.now() - it->enqueue_s() < bound) {
        ++it;
        continue;
      }
      const Admission::Outcome o = step.try_admit(it);
      if (o == Admission::Outcome::NoRoom || o == Admission::Outcome::DoesNotFit) return;
    }
    // 2. Everyone left, first-fit in arrival order (as utilization).
    for (auto it = step.waiting().begin(); it != step.waiting().end();) {
      const Admission::Outcome o = step.try_admit(it);
      if (o == Admission::Outcome::NoRoom) return;
      if (o == Admission::Outcome::DoesNotFit) ++it;
    }
  }
};

const SchedulerPolicyRegistrar kFair(
    scheduler_policies(), "fair",
    "utilization, but a request waiting fairness_max_wait goes first and holds the step",
    []() -> std::unique_ptr<SchedulerPolicy> { return std::make_unique<Fair>(); });

}  // namespace
}  // namespace kappasim
