#include "report/results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/stats.hpp"
#include "report/format.hpp"
#include "serving/time_breakdown.hpp"
#include "sweeps/sweep_results.hpp"

namespace kappasim::report {

int ResultsTable::col(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

std::string ResultsTable::get(std::size_t row, const std::string& name) const {
  const int c = col(name);
  if (c < 0 || row >= rows.size() || static_cast<std::size_t>(c) >= rows[row].size()) return "";
  return rows[row][static_cast<std::size_t>(c)];
}

double ResultsTable::num(std::size_t row, const std::string& name) const {
  const std::string s = get(row, name);
  if (s.empty()) return NAN;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' ? v : NAN;
}

std::vector<std::size_t> ResultsTable::where(const std::map<std::string, std::string>& eq) const {
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    bool match = true;
    for (const auto& [k, v] : eq) match = match && get(r, k) == v;
    if (match) out.push_back(r);
  }
  return out;
}

ResultsTable read_results(const std::string& sweep_dir) {
  sweep::SweepTable t = sweep::read_results_csv(sweep_dir);
  ResultsTable r;
  r.columns = std::move(t.columns);
  r.rows = std::move(t.rows);
  return r;
}

std::string interval_cell(const ResultsTable& t, const std::vector<std::size_t>& rows,
                          const std::string& name, int digits) {
  std::vector<double> xs;
  for (std::size_t r : rows)
    if (t.ok(r) && std::isfinite(t.num(r, name))) xs.push_back(t.num(r, name));
  if (xs.empty()) return "—";
  if (xs.size() == 1) return fmt_num(xs.front());
  return stats::format_interval(stats::mean_interval(xs, 0.95), digits);
}

std::string bound_shares(const ResultsTable& t, const std::vector<std::size_t>& rows) {
  std::vector<std::pair<double, std::string>> v;
  for (int b = 0; b < kLoadBounds; ++b) {
    const std::string name = load_bound_name(static_cast<LoadBound>(b));
    double sum = 0;
    int n = 0;
    for (std::size_t r : rows) {
      const double x = t.num(r, "load_bound_share_" + name);
      if (std::isfinite(x)) sum += x, ++n;
    }
    const double x = n > 0 ? sum / n : NAN;
    if (std::isfinite(x) && x >= 0.01) v.emplace_back(x, name);
  }
  if (v.empty()) return "—";
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [x, name] : v)
    out += (out.empty() ? "" : ", ") + name + " " + fmt_num(100 * x, 2) + "%";
  return out;
}
std::string bound_shares(const ResultsTable& t, std::size_t r) {
  return bound_shares(t, std::vector<std::size_t>{r});
}

std::string baseline_path(const ResultsTable& t, std::size_t r) {
  return t.has("load_path") ? t.get(r, "load_path") : std::string("kernel");
}

}  // namespace kappasim::report
