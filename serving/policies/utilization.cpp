// utilization (the κ paper's utilisation-aware scheduler, Fig. 8): first-fit in arrival order
// over the whole waiting queue. A sequence that does not fit is skipped (counted as passed over
// when a later one is admitted) and later ones that fit are admitted, so free KV blocks and
// budget are not left idle behind a large prompt. A large prompt can starve while smaller ones
// keep fitting; `fair` bounds that wait.
#include "serving/scheduler.hpp"

namespace kappasim {
namespace {

class Utilization final : public SchedulerPolicy {
 public:
  void admit(Admission& step) override {
    for (auto it = step.waiting().begin(); it != step.waiting().end();) {
      const Admission::Outcome o = step.try_admit(it);
      if (o == Admission::Outcome::NoRoom) return;
      if (o == Admission::Outcome::DoesNotFit) ++it;  // skip it, try the next arrival
    }
  }
};

const SchedulerPolicyRegistrar kUtilization(
    scheduler_policies(), "utilization",
    "first-fit in arrival order: skips a request that does not fit (κ paper Fig. 8)",
    []() -> std::unique_ptr<SchedulerPolicy> { return std::make_unique<Utilization>(); });

}  // namespace
}  // namespace kappasim
