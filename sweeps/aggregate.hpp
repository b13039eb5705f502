// Replicate aggregation of a merged sweep table (kappasim sweep collect --aggregate,
// docs/sweeps.md "Replicates and intervals"). Pure: a SweepTable in, CSV and JSON text out; no
// SystemC, no files. The statistics are core/stats (Student t interval over independent seeds).
//
// Rows are grouped by the values of `group_by` (the configuration: the axis columns), groups in
// first-seen (point) order, so the output is a pure function of results.csv and byte-identical
// for any -j. Only rows with status "ok" are samples. Every other column that is not in `skip`
// and whose non-empty cells all parse as numbers is a metric; a blank cell is not a sample (n
// counts the samples per metric).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sweeps/sweep_results.hpp"

namespace kappasim::sweep {

struct Aggregated {
  std::string csv;   // one row per configuration
  std::string json;  // {"confidence": 0.95, "groups": [{"config": {...}, "rows": N, "ok": K,
                     // "metrics": {...}}]}
};

// CSV columns: the group_by columns, rows, ok, then per metric M: M_mean, M_sd, M_ci95_lo,
// M_ci95_hi, M_ci95_half, M_n (empty when undefined: sd and the interval need n >= 2). The
// "ci95" in the names follows `confidence` (0.9 → ci90). Throws InputError when a group_by
// column is missing.
Aggregated aggregate_table(const SweepTable& t, const std::vector<std::string>& group_by,
                           const std::vector<std::string>& skip, double confidence = 0.95);

// Paired differences against a baseline configuration (`sweep collect --aggregate --baseline
// KEY=VALUE[,KEY=VALUE...]`, issue 26 item 20; docs/sweeps.md "Comparing two configurations"):
// `baseline` picks one configuration by the values of some group_by columns (the others must
// then be equal for a single match). For every other configuration and metric M, the samples are
// the differences config − baseline of replicates paired by the `replicate` column (replicate 0
// only without one; with seed_per_point: false replicate r of both saw the same requests: common
// random numbers), both ok and not blank. CSV columns: the group_by columns, then per M:
// M_diff_mean, M_diff_ciNN_lo, M_diff_ciNN_hi, M_diff_n, M_vs_baseline (lower | higher | within,
// from stats::interval_sign; blank when n < 2). InputError when the baseline matches no
// configuration or several, or names a column that is not a group_by column.
std::string paired_table(const SweepTable& t, const std::vector<std::string>& group_by,
                         const std::vector<std::string>& skip,
                         const std::vector<std::pair<std::string, std::string>>& baseline,
                         double confidence = 0.95);
// "KEY=VALUE,KEY=VALUE" -> pairs; InputError naming --baseline otherwise.
std::vector<std::pair<std::string, std::string>> parse_baseline(const std::string& text);

// The columns of a sweep's results.csv that describe the configuration: the axis labels and
// their numeric SI companions (sweep_results.hpp), in table order.
std::vector<std::string> config_columns(const SweepSpec& s, const SweepTable& t);

}  // namespace kappasim::sweep
