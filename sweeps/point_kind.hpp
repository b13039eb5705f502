// What one sweep point computes. A sweep (sweeps/sweep_spec.hpp) expands a base config and its
// axes into points; each point runs in its own process (SystemC elaborates once per process)
// and hands its config to a *point kind*, which returns the point's metrics. Kinds:
//   run         a serving simulation (kappasim run): the summary's figures
//   kappa       the analytic κ model for the config's model x system (kappasim kappa)
//   cluster     a routed pool of serving nodes (serving/cluster)
//   design      the area/power design-space model (models/design)
//   selftest    the sweep machinery's own test kind (echoes its axes; can fail on request)
// A kind is registered once at start-up by the application (apps/kappasim/sweep_kinds.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"

namespace kappasim::sweep {

struct PointContext {
  std::string base_dir;  // folder that relative paths in the config resolve against (the spec's)
  std::string out_dir;   // staging folder for extra files the point writes (moved into place
                         // together with its result; the folder exists when the kind runs)
  std::uint64_t seed = 0;  // the point's seed, derived from the sweep's seed and the point
};

// Deterministic figures only (never wall-clock times): merged results must be byte-identical
// whatever the number of workers. Order is the kind's fixed order.
struct PointResult {
  std::vector<std::pair<std::string, double>> metrics;
};

// Runs one point. `config` is the base config with the point's axis values applied. Bad input
// throws InputError (the point is recorded as invalid with the message); anything else that
// escapes, or a crash, is recorded as failed. Either way the rest of the sweep goes on.
using PointFn = std::function<PointResult(const ConfigNode& config, const PointContext& ctx)>;

struct PointKind {
  std::string name;
  std::string doc;  // one line for `kappasim sweep kinds`
  PointFn run;
};

class KindRegistry {
 public:
  void add(PointKind k);
  const PointKind* find(const std::string& name) const;  // null if unknown
  std::vector<std::string> names() const;
  const std::vector<PointKind>& all() const { return m_kinds; }

 private:
  std::vector<PointKind> m_kinds;
};

// The process-wide registry (filled by the application before any sweep runs).
KindRegistry& kinds();

}  // namespace kappasim::sweep
