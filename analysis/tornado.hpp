// One-at-a-time sensitivity (`kappasim sensitivity`, docs/analysis.md): each tagged parameter
// set to its low and its high value with everything else at base; the swing of the metric is
// |metric(high) - metric(low)|, and the rows are ranked by swing (a tornado chart). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kappasim::analysis {

struct TornadoRow {
  std::string key;                             // dotted config path
  std::string kind;                            // assumption | derived
  std::string base_text, low_text, high_text;  // values as written into the configs
  std::string range;  // "declared" or "default ±50%" (how low/high were chosen)
  std::optional<double> metric_low, metric_high;  // empty: that run was invalid or failed
  std::string error;                              // why a run gave no metric
  double swing() const;                           // |high - low|; -1 when either is missing
};

// Ranked: largest swing first, ties by key; rows without both metrics last (by key).
std::vector<TornadoRow> rank_tornado(std::vector<TornadoRow> rows);

// Text table (rank, key, kind, low, high, metric at low, at high, swing, swing / |base|).
// `seed_spread` (the base metric's max - min over a few seeds): rows whose swing is below it are
// marked "within seed spread" (the CSV's within_seed_spread column; empty without a spread).
std::string tornado_table(const std::vector<TornadoRow>& ranked, const std::string& metric,
                          double base_metric, std::optional<double> seed_spread = std::nullopt);
// CSV of the same.
std::string tornado_csv(const std::vector<TornadoRow>& ranked, double base_metric,
                        std::optional<double> seed_spread = std::nullopt);
// gnuplot plot commands (no terminal/output: report/figure render_figure adds them)
// drawing horizontal bars from metric(low) to metric(high) around the base line,
// largest on top, reading `csv_name` (written next to it).
std::string tornado_gnuplot(const std::vector<TornadoRow>& ranked, const std::string& metric,
                            double base_metric, const std::string& csv_name, int max_rows = 20);

}  // namespace kappasim::analysis
