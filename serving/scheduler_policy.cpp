#include "serving/scheduler_policy.hpp"

namespace kappasim {

SchedulerPolicyRegistry& scheduler_policies() {
  static SchedulerPolicyRegistry registry("scheduler policy");  // built on first use
  return registry;
}

const std::vector<std::pair<const char*, Policy>>& policy_names() {
  // Rebuilt if a registration came after the last call (all come before main in practice).
  static std::vector<std::pair<const char*, Policy>> names;
  const auto entries = scheduler_policies().entries();
  if (names.size() != entries.size()) {
    names.clear();
    for (const auto* e : entries) names.emplace_back(e->name, Policy{e->name});
  }
  return names;
}

const char* policy_name(Policy p) { return p.name; }

std::unique_ptr<SchedulerPolicy> make_scheduler_policy(Policy p) {
  return scheduler_policies().at(p.name, "serving.policy").make();
}

}  // namespace kappasim
