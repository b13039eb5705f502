// What one sweep point computes. A sweep (sweeps/sweep_spec.hpp) expands a base config and its
// axes into points; each point runs in its own process (SystemC elaborates once per process)
// and hands its config to a *point kind*, which returns the point's metrics. Each domain
// registers its own kinds, in its own file, with a static KindRegistration:
//   run, cluster         serving simulations (serving/run_kinds.cpp)
//   isolated, kappa-crit isolated requests on the simulator beside the analytic model
//                        (serving/measure_kinds.cpp: they run serving/measure)
//   capacity-probe       one serving run in its steady-state window (serving/capacity_kinds.cpp)
//   capacity             capacity at a TTFT SLO, its probes child processes
//                        (analysis/capacity_kind.cpp)
//   kappa                the analytic κ model (models/analytic/kappa_kind.cpp)
//   design               the area/power design-space model (models/design/design_kind.cpp)
//   selftest             the sweep machinery's own test kind (sweeps/selftest_kind.cpp)
// Those files are built into object libraries (kappasim_kinds, kappasim_sim_kinds: CMakeLists.txt)
// so the linker never drops a registration nothing else refers to. The registry is the one name
// registry (core/registry.hpp: `kappasim list sweep-kind`, did-you-mean on an unknown name); it
// lists kinds by name (sorted), whatever order static initialisation ran in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/registry.hpp"

namespace kappasim::sweep {

struct PointContext {
  std::string base_dir;    // folder that relative paths in the config resolve against (the spec's)
  std::string out_dir;     // staging folder for extra files the point writes (moved into place
                           // together with its result; the folder exists when the kind runs,
                           // unless the kind is registered with files = false)
  std::uint64_t seed = 0;  // the point's seed, derived from the sweep's seed and the point
};

// Deterministic figures only (never wall-clock times): merged results must be byte-identical
// whatever the number of workers. Order is the kind's fixed order.
struct PointResult {
  std::vector<std::pair<std::string, double>> metrics;
  // What `kappasim run` would print as a warning for the same config (issue 26 item 21: a tier
  // that overflows), one deterministic line each; result.json records them and the sweep's final
  // output counts and names the points that warned.
  std::vector<std::string> warnings;
};

// Runs one point. `config` is the base config with the point's axis values applied. Bad input
// throws InputError (the point is recorded as invalid with the message); anything else that
// escapes, or a crash, is recorded as failed. Either way the rest of the sweep goes on.
using PointFn = std::function<PointResult(const ConfigNode& config, const PointContext& ctx)>;

// One column a kind writes to a sweep's results.csv, declared once beside the kind (the house
// rule of serving/stat_catalog, which declares a serving run's requests.csv and summary.json):
// its name, unit and definition. A family is one declaration for many columns: one '*' in the
// name stands for any run of characters ("load_bound_share_*", "t_*_s"). `kappasim metrics kinds`
// and docs/metrics.md's table of them come from these.
struct KindColumn {
  std::string name;
  std::string unit;  // "s", "B/s", "FLOP/s", "tokens", "1" (a ratio, a count or a flag)
  std::string doc;
};

struct PointKind {
  std::string name;
  std::string doc;  // one line for `kappasim sweep kinds` and `kappasim list sweep-kind`
  PointFn run;
  // Pure, quick and free of process-wide state (the analytic kinds): the runner may run several
  // of its points one after another in one forked child (issue 24: one fork, one copy-on-write
  // warm-up, for many points; the same files per point). Never for a kind that simulates (one
  // SystemC simulation per process), starts processes, or can crash on purpose (selftest).
  bool batch = false;
  // Whether the kind writes files of its own (PointContext::out_dir). A kind that writes none
  // (the analytic kinds) gets no staging folder: the runner neither creates nor removes one per
  // point (issue 24: ≈ 2,000 mkdir/rmdir pairs in `reproduce`, and each removed folder an inode
  // ext4's allocator must skip for a while). Such a kind's out_dir names a folder that does not
  // exist, so a file written there fails loudly.
  bool files = true;
  // The columns its points write, in their order. A kind that declares them may write no other
  // (check_declared); one that declares none (run and cluster: their figures are summary.json's,
  // declared in serving/stat_catalog) is not checked here.
  std::vector<KindColumn> columns{};
  explicit operator bool() const { return static_cast<bool>(run); }  // registered (not empty)
};

// Whether `metric` is one of `kind`'s declared columns (by name, or a family's pattern).
bool declares(const PointKind& kind, const std::string& metric);
// std::logic_error naming the kind and the metric when a kind that declares its columns returned
// one it does not declare (an internal error: the point is recorded as failed).
void check_declared(const PointKind& kind, const PointResult& result);
// The declared columns of every kind that declares them, one row each (kKindColumnHeader: kinds
// by name, columns in their order), and the same as docs/metrics.md's Markdown table (the
// column names in backticks; a trailing newline).
inline const std::vector<std::string> kKindColumnHeader = {"kind", "column", "unit", "definition"};
std::vector<std::vector<std::string>> kind_column_rows();
std::string kind_columns_markdown();

// The sweep kinds' name registry (core/registry.hpp's NamedRegistry; config key: the sweep
// spec's `kind`, the point command's --kind).
class KindRegistry : public NamedRegistry<PointKind> {
 public:
  KindRegistry() : NamedRegistry<PointKind>("sweep-kind", "point kind", "kind") {}
  // std::logic_error for a name registered twice or a kind without a name or function.
  void add(PointKind k) {
    const std::string name = k.name, doc = k.doc;
    NamedRegistry<PointKind>::add(name, doc, std::move(k));
  }
  const PointKind* find(const std::string& name) const {  // null if unknown
    const Entry* e = NamedRegistry<PointKind>::find(name);
    return e ? &e->value : nullptr;
  }
  std::vector<PointKind> all() const {  // sorted by name
    std::vector<PointKind> out;
    for (const Entry* e : entries()) out.push_back(e->value);
    return out;
  }
};

// The process-wide registry (filled at static initialisation by the domains' kind files).
KindRegistry& kinds();

// Static registration: `const KindRegistration kMyKind{{"name", "doc", fn}};` at namespace
// scope in the domain's file adds the kind to kinds() before main runs.
struct KindRegistration {
  explicit KindRegistration(PointKind k) { kinds().add(std::move(k)); }
};

}  // namespace kappasim::sweep
