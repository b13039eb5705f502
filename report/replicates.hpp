// Replicates in the study tables (issue 11.1): a study spec with `replicates: N` has N rows per
// configuration (column `replicate`), replicate i of every configuration on the same workload
// seed H(seed, i) (seed_per_point: false), so two configurations are compared replicate by
// replicate (stats::paired_difference). Used by sections 8.2, 8.4 and 8.5.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "report/results.hpp"

namespace kappasim::report {

// How the studies' tables and conclusions read replicates (one sentence for the report).
extern const char* const kReplicateNote;

// Rows grouped by configuration (equal values in `cols`), in first-seen (point) order.
std::vector<std::vector<std::size_t>> configurations(const ResultsTable& t,
                                                     const std::vector<std::string>& cols);
// The first ok row of a configuration (its labels), if any.
std::optional<std::size_t> first_ok(const ResultsTable& t, const std::vector<std::size_t>& rows);
// Mean of `name` over the ok rows with a value (NaN when none).
double mean_of(const ResultsTable& t, const std::vector<std::size_t>& rows,
               const std::string& name);
// a − b of `name`, paired by replicate index over the replicates both completed.
stats::Interval paired(const ResultsTable& t, const std::vector<std::size_t>& a,
                       const std::vector<std::size_t>& b, const std::string& name);
// How A's `name` compares with B's: "lower than B's (paired difference in s: −1.2 ± 0.3 (n=3))"
// only when the paired 95% interval excludes 0; otherwise "within the replicate spread of B's";
// "the same as B's in every replicate" when each pair agrees to 9 significant digits (the two
// runs did the same thing; a paired difference would print only the figures' rounding).
std::string versus(const ResultsTable& t, const std::vector<std::size_t>& a,
                   const std::vector<std::size_t>& b, const std::string& name,
                   const std::string& b_name, const std::string& unit);

// A's `name` over B's as a ratio, paired by replicate on log scale (a latency that a change
// divides by a factor in every seed, where one seed's long queue swamps the difference in
// seconds): "0.2× no buffer's in every seed (0.15–0.23×; the paired log-ratio interval excludes
// 1: lower)" or "... (the paired log-ratio interval contains 1)". "" under two pairs or where a
// value is not positive.
std::string ratio_versus(const ResultsTable& t, const std::vector<std::size_t>& a,
                         const std::vector<std::size_t>& b, const std::string& name,
                         const std::string& b_name);

// The configuration with the best mean `metric` per group of rows sharing `group` columns
// (lower or higher is better), and the baseline choice's mean and rows in the same group.
struct Best {
  std::string group, winner;
  double value = NAN, baseline = NAN;  // means over the replicates
  std::vector<std::size_t> winner_rows, baseline_rows;
  // Every choice of the group and its rows, in the table's order.
  std::vector<std::pair<std::string, std::vector<std::size_t>>> choices;
};
std::vector<Best> best_per_group(const ResultsTable& t, const std::vector<std::string>& group,
                                 const std::string& choice, const std::string& metric, bool lower,
                                 const std::string& baseline_choice);

// "" when every choice of `b` rejected as many requests per replicate (`requests_rejected`, the
// prompts larger than the whole KV pool); else a clause saying the choices were judged over
// different request sets, with each one's mean rejections: a choice that rejects more serves only
// the shorter prompts, so its latency is not comparable with the others'.
std::string rejection_note(const ResultsTable& t, const Best& b);
// The same over any named choices: "; over different request sets: <noun> rejected per
// replicate A 3, B 0 (<why>)", "" where every choice rejected as many.
std::string different_request_sets(
    const ResultsTable& t,
    const std::vector<std::pair<std::string, std::vector<std::size_t>>>& choices,
    const std::string& noun, const std::string& why);

}  // namespace kappasim::report
