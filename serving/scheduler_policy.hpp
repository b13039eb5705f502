// The scheduler's admission policy as a small interface with a name registry (serving.policy).
//
// What a policy decides: which waiting sequences to try to admit in one step, in which order,
// and what to do when one does not fit (stop, skip it, or hold everything). What it does not
// decide: running sequences are always served first, in admission order; the KV-block, token
// budget and max_num_seqs checks, the KV allocation, rejection of a prompt larger than the whole
// pool and the "passed over" bookkeeping are the Scheduler's (serving/scheduler.cpp), so every
// policy obeys the same resource rules and a new policy cannot break them.
//
// Adding a policy (docs/scheduler.md "How to add a policy"): one file under serving/policies/
// that defines a SchedulerPolicy and registers it with a static SchedulerPolicyRegistrar, plus
// its line in serving/CMakeLists.txt. Nothing in the engine or the scheduler changes; the config
// key serving.policy accepts the new name and `kappasim presets policies` lists it.
#pragma once

#include <cstring>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "core/registry.hpp"

namespace kappasim {

class Admission;  // serving/scheduler.hpp: the admission phase of one step

class SchedulerPolicy {
 public:
  virtual ~SchedulerPolicy() = default;
  // Called once per step after the running sequences got their tokens. Tries waiting
  // sequences with Admission::try_admit in the policy's order until it decides to stop.
  virtual void admit(Admission& step) = 0;
};

using SchedulerPolicyRegistry = Registry<SchedulerPolicy>;
SchedulerPolicyRegistry& scheduler_policies();
using SchedulerPolicyRegistrar = Registrar<SchedulerPolicyRegistry>;

// A registered policy's name: the value of serving.policy. A value type (compared by name) so
// configs built in code keep writing `cfg.policy = Policy::Fair`; the three constants are the
// policies that predate the registry, any other registered name works the same way
// (`Policy{"shortest_load"}`). `name` must point at storage that outlives the config (a string
// literal or a registry entry's name).
struct Policy {
  const char* name = "fifo";

  static const Policy Fifo;              // "fifo"
  static const Policy UtilizationAware;  // "utilization"
  static const Policy Fair;              // "fair"

  friend bool operator==(const Policy& a, const Policy& b) {
    return std::strcmp(a.name, b.name) == 0;
  }
  friend bool operator!=(const Policy& a, const Policy& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const Policy& p) { return os << p.name; }
};
inline constexpr Policy Policy::Fifo{"fifo"};
inline constexpr Policy Policy::UtilizationAware{"utilization"};
inline constexpr Policy Policy::Fair{"fair"};

// Every registered policy as (name, Policy), ordered by name: the choices of serving.policy.
const std::vector<std::pair<const char*, Policy>>& policy_names();
const char* policy_name(Policy p);
// A fresh policy object; InputError listing the registered names when `p` is not one.
std::unique_ptr<SchedulerPolicy> make_scheduler_policy(Policy p);

}  // namespace kappasim
