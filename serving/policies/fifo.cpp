// fifo (vLLM --scheduling-policy fcfs, the default): admit in arrival order and stop at the first
// waiting sequence that does not fit, so a large prompt blocks the smaller ones behind it
// (head-of-line blocking) until enough running sequences finish. No starvation: the head is
// admitted as soon as its blocks are free.
#include "serving/scheduler.hpp"

namespace kappasim {
namespace {

class Fifo final : public SchedulerPolicy {
 public:
  void admit(Admission& step) override {
    for (auto it = step.waiting().begin(); it != step.waiting().end();) {
      const Admission::Outcome o = step.try_admit(it);
      if (o == Admission::Outcome::NoRoom || o == Admission::Outcome::DoesNotFit) return;
    }
  }
};

const SchedulerPolicyRegistrar kFifo(
    scheduler_policies(), "fifo",
    "arrival order; stops at the first request that does not fit (vLLM fcfs)",
    []() -> std::unique_ptr<SchedulerPolicy> { return std::make_unique<Fifo>(); });

}  // namespace
}  // namespace kappasim
