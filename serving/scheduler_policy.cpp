#include "serving/scheduler_policy.hpp"

namespace kappasim {

SchedulerPolicyRegistry& scheduler_policies() {
  static SchedulerPolicyRegistry registry("policy", "scheduler policy",
                                          "serving.policy");  // built on first use
  return registry;
}

const std::vector<std::pair<const char*, Policy>>& policy_names() {
  // Rebuilt if a registration came after the last call (all come before main in practice).
  static std::vector<std::pair<const char*, Policy>> names;
  const auto entries = scheduler_policies().entries();
  if (names.size() != entries.size()) {
    names.clear();
    for (const auto* e : entries) names.emplace_back(e->name.c_str(), Policy{e->name.c_str()});
  }
  return names;
}

const char* policy_name(Policy p) { return p.name; }

std::unique_ptr<SchedulerPolicy> make_scheduler_policy(Policy p) {
  return scheduler_policies().make(p.name);
}

}  // namespace kappasim
