// Capacity at a TTFT SLO (issue 26 item 19; `kappasim measure capacity`, the `capacity` sweep
// kind; docs/analysis.md "Capacity at a TTFT SLO"): the largest steady-state throughput a
// configuration serves while the TTFT at a percentile stays within a bound.
//
// Search (search_capacity, pure: the probes are a callback, so it is tested on a synthetic
// oracle): per replicate (its own workload seed), probe the offered load workload.rate at both
// ends of [rate_lo, rate_hi]. The SLO holds at a probe when its steady-state window's TTFT at
// the percentile (ttft_q_s, serving/steady_window.hpp) is <= the bound. Not met at rate_lo: the
// replicate never meets the SLO in the range. Met at rate_hi: its capacity is at least that
// (a lower bound; widen the range). Else bisect in log space, midpoint sqrt(lo · hi), keeping
// lo met and hi not met, until hi / lo <= 1 + rel_tol. The replicate's capacity is the served
// throughput (served_rps) of its last met probe, and its offered capacity that probe's rate.
// All replicates advance in lockstep, one batch of probes (one process each, -j at once) per
// round; each replicate's answer depends only on its own probes, so the result does not depend
// on -j. Within a replicate the arrivals of one seed scale as 1/rate (the same draws), so its
// TTFT grows with the rate without seed noise between probes (common random numbers); the search
// takes it to be monotone.
//
// The capacity over replicates: mean, sample sd and Student t interval (core/stats) of the
// capacities of the replicates that met the SLO somewhere. Then each replicate runs once more at
// `fraction` (0.8) × the mean capacity, and its window TTFT quantiles are reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/stats.hpp"

namespace kappasim::analysis {

struct CapacitySpec {
  double slo_ttft_s = 0;            // the bound (required, > 0)
  double percentile = 0.99;         // (0, 1]
  int replicates = 3;               // >= 1
  double rate_lo = 0, rate_hi = 0;  // requests/s; 0: from the config's workload.rate (/64, x4)
  double rel_tol = 0.02;            // stop when hi / lo <= 1 + rel_tol
  double warmup = 0.2;    // steady-state window: fraction of requests left out at the start
  double fraction = 0.8;  // the load (x capacity) at which the TTFT quantiles are reported
  int jobs = 1;           // parallel probe processes (the sweep kind: 1)
  double confidence = 0.95;

  template <class V>
  void visit(V& v) {
    v.quantity("slo_ttft", slo_ttft_s, dim::time,
               req("the TTFT bound at the percentile, e.g. 2 s", Range::Positive));
    v.number("percentile", percentile,
             opt("the TTFT percentile the bound applies to (0 to 1; 0.99 = p99)", Range::Fraction));
    v.integer("replicates", replicates,
              opt("replicates (workload seeds seed, seed+1, ...)", Range::AtLeastOne));
    v.number(
        "rate_lo", rate_lo,
        opt("lowest offered load probed, requests/s (0: workload.rate / 64)", Range::NonNegative));
    v.number(
        "rate_hi", rate_hi,
        opt("highest offered load probed, requests/s (0: workload.rate x 4)", Range::NonNegative));
    v.number("tol", rel_tol, opt("stop when hi / lo <= 1 + tol", Range::Positive));
    v.number("warmup", warmup,
             opt("fraction of the requests, by arrival, left out as warm-up", Range::Fraction));
    v.number("fraction", fraction,
             opt("report TTFT quantiles at this fraction of the capacity", Range::Positive));
    v.integer("jobs", jobs, opt("parallel probe processes", Range::AtLeastOne));
  }
  // InputError naming `path`.KEY for values the visitor's ranges do not catch.
  void validate(const std::string& path) const;
};

// One probe asked of the oracle: replicate r (seed) at an offered rate.
struct CapacityProbeAsk {
  std::size_t replicate = 0;
  double rate = 0;
};
// Its answer: the capacity-probe kind's metrics (ttft_q_s, served_rps, ...), or an error.
struct CapacityProbeAnswer {
  bool ok = false;
  std::string error;
  std::map<std::string, double> metrics;
  std::vector<std::string> warnings;
};
using CapacityOracle =
    std::function<std::vector<CapacityProbeAnswer>(const std::vector<CapacityProbeAsk>&)>;

struct CapacityProbe {
  std::size_t replicate = 0;
  int round = 0;
  double rate = 0;
  bool met = false;
  std::map<std::string, double> metrics;
  std::vector<std::string> warnings;
  double metric(const std::string& name) const;  // NaN when absent
};

struct ReplicateCapacity {
  enum class Status { Found, MetAtTop, NeverMet } status = Status::NeverMet;
  double rate_met = 0;      // the last rate that met the SLO (NaN for NeverMet)
  double rate_not_met = 0;  // the first that did not (NaN for MetAtTop)
  double capacity_rps = 0;  // served_rps at rate_met (NaN for NeverMet)
  std::size_t probe = 0;    // index of the rate_met probe in CapacityResult::probes
};
const char* capacity_status_name(ReplicateCapacity::Status s);  // found | met_at_top | never_met

struct CapacityResult {
  std::vector<ReplicateCapacity> replicates;
  std::vector<CapacityProbe> probes;  // rounds in order, replicates in order within a round
  stats::Interval capacity;           // served rps over the replicates that met the SLO
  stats::Interval capacity_offered;   // their rate_met
  // Overall: never_met when no replicate met the SLO, met_at_top when some capacity is only a
  // lower bound, found otherwise (replicates that never met are then listed but not averaged).
  std::string status;
  // At fraction x capacity (empty when never met): one probe per replicate.
  double at_rate = 0;
  std::vector<CapacityProbe> at_probes;
};

// The search above; `oracle` throws (InputError) to stop it. std::logic_error for a spec without
// rate_lo < rate_hi (the driver fills them).
CapacityResult search_capacity(const CapacityOracle& oracle, const CapacitySpec& spec);

// The driver: `base` is a run config (--set applied; its `capacity:` section removed), relative
// paths from `base_dir`; every probe is a `capacity-probe` sweep point (its own process) in
// `work_dir`. The replicates' seeds are workload.seed (default 1) + 0, 1, ... (or `seed0` when
// given). Fills rate_lo/rate_hi from workload.rate when 0. InputError on bad input or a probe
// that fails.
CapacityResult measure_capacity(const ConfigNode& base, const std::string& base_dir,
                                CapacitySpec spec, const std::string& work_dir,
                                const std::vector<std::string>& preset_dirs,
                                const std::uint64_t* seed0 = nullptr,
                                CapacitySpec* resolved = nullptr);

// The outputs: a text table (the replicates, the interval, the regime at capacity and the
// TTFT quantiles at fraction x capacity), the same as JSON, and the probes as CSV. `seed0` is
// the first replicate's seed.
std::string capacity_text(const CapacityResult& r, const CapacitySpec& s, std::uint64_t seed0);
std::string capacity_json(const CapacityResult& r, const CapacitySpec& s, std::uint64_t seed0);
std::string capacity_probes_csv(const CapacityResult& r, std::uint64_t seed0);
// One row per replicate (its seed, status and capacity): what the sweep kind writes as
// files/replicates.csv, so two configurations on the same seeds compare replicate by replicate.
std::string capacity_replicates_csv(const CapacityResult& r, std::uint64_t seed0);

// The capacity sweep kind's metrics (analysis/capacity_kind.cpp), in this order.
std::vector<std::pair<std::string, double>> capacity_metrics(const CapacityResult& r);

}  // namespace kappasim::analysis
