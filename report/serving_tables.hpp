// Serving-run tables of the reproduce report (sections 5, 6, 7): see serving_tables.cpp.
#pragma once

#include <string>
#include <vector>

#include "report/figure.hpp"
#include "report/sweeps.hpp"

namespace kappasim::report {

// TTFT CDF data (ttft_s,cdf; at most ~400 points) from a run point's files/requests.csv; "" when
// the point has none.
std::string ttft_cdf(const std::string& point_dir);
// The folder of row r's point (the merged table holds every point of the sweep, in order).
std::string point_dir(const std::string& sweep_dir, const ResultsTable& t, std::size_t r);
// A value of the point's own config (points/pNNNNNN/point.yaml), e.g. "workload.rate"; NaN when
// absent or not a number.
double point_config_number(const std::string& dir, const std::string& dotted);
// The same value as written (e.g. "5 s"); "" when absent or not a scalar.
std::string point_config_text(const std::string& dir, const std::string& dotted);

// One line per ok row of a run sweep: does the node keep up with the offered load, and what
// binds it (token budget, VRAM, transfers), labelled by column `axis`.
std::string load_verdicts(const SweepData& d, const std::string& axis);
// One paragraph stating a replicated study's regime from its own runs (issue 22 item 3), over
// `configs` (rows grouped by configuration; replicate means per configuration, ranges over the
// configurations): offered (point.yaml workload.rate) vs served load, how many configurations are
// overloaded (TTFT then mostly queueing), the share of prompt tokens loaded from the tier vs
// recomputed, the tier hit rate, whether the tier holds the working set, what share of load +
// compute time KV loading takes, and the bound that follows. Reads requests_completed,
// requests_rejected, throughput_rps, queue_p50_s, ttft_p50_s, cached_tokens_total,
// computed_tokens_total, tier_hit_rate, tier_working_set_fits and transfer_time_fraction where
// the sweep has them (a missing one is left out of the sentence).
// `label` names the subset when a section states one regime per part ("Regime of <label> ...").
std::string regime_paragraph(const SweepData& d,
                             const std::vector<std::vector<std::size_t>>& configs,
                             const std::string& label = "");

// The same facts in one clause for the conclusions table: "offered 8 req/s, keeps up; 99.7% of
// prompt tokens loaded; tier holds the working set".
std::string regime_brief(const SweepData& d, const std::vector<std::vector<std::size_t>>& configs);

// How many of `configs` are overloaded by the rule the regime statements use (served under 90%
// of the rate admitted); 0 means every one keeps up, so their served throughputs are the offered
// load and a difference between them is the run's drain, not a capacity.
std::size_t overloaded_count(const SweepData& d,
                             const std::vector<std::vector<std::size_t>>& configs);

// The table of a run sweep, one row per point labelled by column `axis`, and its figures: the
// utilisation bars (FIG-utilisation.csv) and the TTFT CDFs (FIG-<label>.csv, figure FIG titled
// `title`) written into `files`. Returns the Markdown.
std::string serving_table(const SweepData& d, const std::string& axis, const std::string& fig,
                          const std::string& title, const FigureFolder& files);

}  // namespace kappasim::report
