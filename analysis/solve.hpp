// Inverse design for `kappasim solve` (docs/analysis.md): the value of one parameter at which a
// target "METRIC OP VALUE" starts to hold. Pure: the metric is a callback (a simulation run or
// the analytic model in the CLI), so the search is tested on closed forms.
//
// Search: evaluate both ends of [lo, hi]. If the target holds at exactly one end, bisect (the
// metric is taken to be monotone there). If it holds at neither, or at both, scan `scan_points`
// equally spaced interior points for the first change (a bracketed search for non-monotone
// metrics) and bisect that bracket. The answer is the bracket end where the target holds, once
// the bracket is narrower than rel_tol of the range.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace kappasim::analysis {

enum class CompareOp { Lt, Le, Gt, Ge };

struct Target {
  std::string metric;
  CompareOp op = CompareOp::Lt;
  double value = 0;
  Dimension dim;     // of the value as written (dimensionless for a bare number)
  std::string text;  // as given
};

// "ttft_p99_s < 1", "kappa_crit>=11.5", "throughput_rps >= 7.5". InputError (naming --target)
// on anything else. The value may carry a unit ("1 s", "64 GB/s"): it is compared in SI.
Target parse_target(const std::string& text);
bool target_met(const Target& t, double metric_value);

// The dimension a metric's name declares by its suffix (the naming rule of the summary figures:
// _s seconds, _Bps / _bytes_per_s bandwidth, _j energy, _w power, bytes in the name a size);
// dimensionless otherwise (kappa_crit, throughput_rps, ratios and counts).
Dimension metric_dimension(const std::string& metric);
// InputError naming --target when the target's value carries a unit of another dimension than
// the metric's (issue 26 item 9: "kappa_crit >= 10 GB/s" was compared as 1e10).
void check_target_dimension(const Target& t);

struct SolveOptions {
  int scan_points = 8;    // interior points of the bracketing scan
  double rel_tol = 1e-3;  // final bracket width as a fraction of hi - lo
  int max_probes = 60;
  bool geometric = false;  // midpoints and scan points in log space (lo > 0)
  bool integer = false;    // a count: probes rounded to whole numbers, stop at adjacent ones
};

struct Probe {
  double x = 0;
  double metric = 0;
  bool met = false;
  std::uint64_t index = 0;  // the candidate's index (solve_discrete)
};

struct SolveResult {
  enum class Status { Found, MetEverywhere, NeverMet } status = Status::NeverMet;
  double x = 0;      // the bracket end where the target holds (Found), lo (MetEverywhere)
  double other = 0;  // the bracket end where it does not (Found)
  std::uint64_t x_index = 0, other_index = 0;  // their candidates (solve_discrete)
  std::string method;                          // bisection | bracketed scan + bisection
  std::vector<Probe> probes;                   // in evaluation order
};

SolveResult solve_threshold(const std::function<double(double)>& metric, double lo, double hi,
                            const Target& target, const SolveOptions& opt = {});

// The same search over the ordered candidates 0 .. last (last >= 1; up to 2^64 of them): a
// whole-number key (candidate i = LO + i, kept in 64-bit integers, so a seed range up to
// 2^64 - 1 never passes through a double) or a key with a set of valid values (PCIe lane
// widths). Every probe is a candidate; the bracket stops at adjacent candidates or at rel_tol of
// the candidates. `value(i)` (ascending) places log-space midpoints and scan points (geometric);
// Probe::x is value(index), Probe::index the candidate. SolveResult::x/other are values; the
// indices of the answer are the probes'.
SolveResult solve_discrete(const std::function<double(std::uint64_t)>& metric,
                           const std::function<double(std::uint64_t)>& value, std::uint64_t last,
                           const Target& target, const SolveOptions& opt = {});

}  // namespace kappasim::analysis
