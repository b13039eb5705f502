// Serving-run tables of the reproduce report (sections 5, 6, 7): see serving_tables.cpp.
#pragma once

#include <string>

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

// One line per ok row of a run sweep: does the node keep up with the offered load, and what
// binds it (token budget, VRAM, transfers), labelled by column `axis`.
std::string load_verdicts(const SweepData& d, const std::string& axis);
// The table of a run sweep, one row per point labelled by column `axis`, and its figures: the
// utilisation bars (FIG-utilisation.csv) and the TTFT CDFs (FIG-<label>.csv, figure FIG titled
// `title`) written into `files`. Returns the Markdown.
std::string serving_table(const SweepData& d, const std::string& axis, const std::string& fig,
                          const std::string& title, const FigureFolder& files);

}  // namespace kappasim::report
