#include "sweeps/aggregate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/table.hpp"
#include "core/units.hpp"

namespace kappasim::sweep {

namespace {

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string num(double v) { return std::isfinite(v) ? format_number(v) : ""; }
std::string json_num(double v) { return std::isfinite(v) ? format_number(v) : "null"; }

// The index of column `c`, or t.columns.size() when the table has none.
std::size_t column_index(const SweepTable& t, const std::string& c) {
  const auto it = std::find(t.columns.begin(), t.columns.end(), c);
  return it == t.columns.end() ? t.columns.size()
                               : static_cast<std::size_t>(it - t.columns.begin());
}

// The indices of the group-by columns; InputError naming one the table lacks.
std::vector<std::size_t> group_columns(const SweepTable& t,
                                       const std::vector<std::string>& group_by) {
  std::vector<std::size_t> gcols;
  for (const auto& g : group_by) {
    const std::size_t i = column_index(t, g);
    if (i == t.columns.size()) throw InputError("aggregate: the table has no column '" + g + "'");
    gcols.push_back(i);
  }
  return gcols;
}

}  // namespace

Aggregated aggregate_table(const SweepTable& t, const std::vector<std::string>& group_by,
                           const std::vector<std::string>& skip, double confidence) {
  auto index_of = [&](const std::string& c) { return column_index(t, c); };
  const std::vector<std::size_t> gcols = group_columns(t, group_by);
  const std::size_t status_col = index_of("status");
  auto is_ok = [&](const std::vector<std::string>& row) {
    return status_col == t.columns.size() || row[status_col] == "ok";
  };
  // Metric columns: not grouped, not skipped, every non-empty cell a number.
  std::vector<std::size_t> mcols;
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    if (std::find(gcols.begin(), gcols.end(), c) != gcols.end()) continue;
    if (std::find(skip.begin(), skip.end(), t.columns[c]) != skip.end()) continue;
    if (c == status_col) continue;
    bool numeric = true;
    for (const auto& row : t.rows) {
      double v = 0;
      if (!row[c].empty() && !parse_number(row[c], v)) numeric = false;
    }
    if (numeric) mcols.push_back(c);
  }
  // Groups in first-seen order.
  std::vector<std::vector<std::string>> keys;
  std::map<std::vector<std::string>, std::size_t> index;
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    std::vector<std::string> key;
    for (std::size_t c : gcols) key.push_back(t.rows[r][c]);
    auto [it, fresh] = index.emplace(key, keys.size());
    if (fresh) {
      keys.push_back(key);
      members.emplace_back();
    }
    members[it->second].push_back(r);
  }

  char tag[16];
  std::snprintf(tag, sizeof tag, "ci%g", confidence * 100);
  const std::string ci = tag;
  Aggregated out;
  std::vector<std::string> header(group_by);
  header.push_back("rows");
  header.push_back("ok");
  for (std::size_t c : mcols)
    for (const std::string& suffix : std::vector<std::string>{
             "_mean", "_sd", "_" + ci + "_lo", "_" + ci + "_hi", "_" + ci + "_half", "_n"})
      header.push_back(t.columns[c] + suffix);
  for (std::size_t i = 0; i < header.size(); ++i) out.csv += (i ? "," : "") + csv_field(header[i]);
  out.csv += "\n";
  out.json = "{\"confidence\": " + format_number(confidence) + ", \"groups\": [";
  for (std::size_t g = 0; g < keys.size(); ++g) {
    std::size_t ok = 0;
    for (std::size_t r : members[g]) ok += is_ok(t.rows[r]) ? 1 : 0;
    std::vector<std::string> row = keys[g];
    row.push_back(std::to_string(members[g].size()));
    row.push_back(std::to_string(ok));
    std::string json = std::string(g ? "," : "") + "\n  {\"config\": {";
    for (std::size_t i = 0; i < group_by.size(); ++i) {
      double v = 0;
      json += (i ? ", " : "") + json_escape(group_by[i]) + ": " +
              (parse_number(keys[g][i], v) && std::isfinite(v) ? format_number(v)
                                                               : json_escape(keys[g][i]));
    }
    json += "}, \"rows\": " + std::to_string(members[g].size()) +
            ", \"ok\": " + std::to_string(ok) + ", \"metrics\": {";
    for (std::size_t m = 0; m < mcols.size(); ++m) {
      std::vector<double> xs;
      for (std::size_t r : members[g]) {
        double v = 0;
        if (is_ok(t.rows[r]) && parse_number(t.rows[r][mcols[m]], v)) xs.push_back(v);
      }
      const stats::Interval iv = stats::mean_interval(xs, confidence);
      for (double v : {iv.mean, iv.sd, iv.lo, iv.hi, iv.half_width}) row.push_back(num(v));
      row.push_back(std::to_string(iv.n));
      json += std::string(m ? ", " : "") + json_escape(t.columns[mcols[m]]) +
              ": {\"n\": " + std::to_string(iv.n) + ", \"mean\": " + json_num(iv.mean) +
              ", \"sd\": " + json_num(iv.sd) + ", \"" + ci + "_lo\": " + json_num(iv.lo) + ", \"" +
              ci + "_hi\": " + json_num(iv.hi) + ", \"" + ci +
              "_half\": " + json_num(iv.half_width) + "}";
    }
    json += "}}";
    out.json += json;
    for (std::size_t c = 0; c < row.size(); ++c) out.csv += (c ? "," : "") + csv_field(row[c]);
    out.csv += "\n";
  }
  out.json += keys.empty() ? "]}\n" : "\n]}\n";
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_baseline(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--baseline '" + text +
                       "': expected KEY=VALUE[,KEY=VALUE...] naming axis columns of results.csv "
                       "(e.g. serving.policy=fifo)");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string paired_table(const SweepTable& t, const std::vector<std::string>& group_by,
                         const std::vector<std::string>& skip,
                         const std::vector<std::pair<std::string, std::string>>& baseline,
                         double confidence) {
  auto index_of = [&](const std::string& c) { return column_index(t, c); };
  const std::vector<std::size_t> gcols = group_columns(t, group_by);
  std::vector<std::pair<std::size_t, std::string>> want;
  for (const auto& [k, v] : baseline) {
    if (std::find(group_by.begin(), group_by.end(), k) == group_by.end()) {
      std::string all;
      for (const auto& g : group_by) all += (all.empty() ? "" : ", ") + g;
      throw InputError("--baseline: '" + k + "' is not an axis column of results.csv (columns: " +
                       (all.empty() ? std::string("none: the sweep has no axes") : all) + ")");
    }
    want.emplace_back(index_of(k), v);
  }
  const std::size_t status_col = index_of("status"), rep_col = index_of("replicate");
  auto is_ok = [&](const std::vector<std::string>& row) {
    return status_col == t.columns.size() || row[status_col] == "ok";
  };
  std::vector<std::size_t> mcols;
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    if (std::find(gcols.begin(), gcols.end(), c) != gcols.end()) continue;
    if (std::find(skip.begin(), skip.end(), t.columns[c]) != skip.end()) continue;
    if (c == status_col || c == rep_col) continue;
    bool numeric = true;
    for (const auto& row : t.rows) {
      double v = 0;
      if (!row[c].empty() && !parse_number(row[c], v)) numeric = false;
    }
    if (numeric) mcols.push_back(c);
  }
  // Configurations in first-seen order; per configuration, its rows by replicate.
  std::vector<std::vector<std::string>> keys;
  std::map<std::vector<std::string>, std::size_t> index;
  std::vector<std::map<std::string, std::size_t>> by_rep;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    std::vector<std::string> key;
    for (std::size_t c : gcols) key.push_back(t.rows[r][c]);
    auto [it, fresh] = index.emplace(key, keys.size());
    if (fresh) {
      keys.push_back(key);
      by_rep.emplace_back();
    }
    by_rep[it->second][rep_col == t.columns.size() ? "0" : t.rows[r][rep_col]] = r;
  }
  std::vector<std::size_t> matches;
  for (std::size_t g = 0; g < keys.size(); ++g) {
    bool m = true;
    for (const auto& [c, v] : want) {
      const std::size_t at =
          static_cast<std::size_t>(std::find(gcols.begin(), gcols.end(), c) - gcols.begin());
      m = m && keys[g][at] == v;
    }
    if (m) matches.push_back(g);
  }
  std::string spec;
  for (const auto& [k, v] : baseline) spec += (spec.empty() ? "" : ",") + k + "=" + v;
  if (matches.size() != 1)
    throw InputError("--baseline '" + spec + "': matches " + std::to_string(matches.size()) +
                     " configurations of results.csv; expected exactly one (name more axis "
                     "columns)");
  const std::size_t base = matches[0];

  char tag[16];
  std::snprintf(tag, sizeof tag, "ci%g", confidence * 100);
  const std::string ci = tag;
  std::vector<std::string> header(group_by);
  for (std::size_t c : mcols)
    for (const std::string& suffix : std::vector<std::string>{
             "_diff_mean", "_diff_" + ci + "_lo", "_diff_" + ci + "_hi", "_diff_n", "_vs_baseline"})
      header.push_back(t.columns[c] + suffix);
  std::string out;
  for (std::size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + csv_field(header[i]);
  out += "\n";
  for (std::size_t g = 0; g < keys.size(); ++g) {
    if (g == base) continue;
    std::vector<std::string> row = keys[g];
    for (std::size_t c : mcols) {
      std::vector<double> a, b;
      for (const auto& [rep, r] : by_rep[g]) {
        const auto br = by_rep[base].find(rep);
        if (br == by_rep[base].end()) continue;
        double x = 0, y = 0;
        if (is_ok(t.rows[r]) && is_ok(t.rows[br->second]) && parse_number(t.rows[r][c], x) &&
            parse_number(t.rows[br->second][c], y)) {
          a.push_back(x);
          b.push_back(y);
        }
      }
      const stats::Interval d = stats::paired_difference(a, b, confidence);
      row.push_back(num(d.mean));
      row.push_back(num(d.lo));
      row.push_back(num(d.hi));
      row.push_back(std::to_string(d.n));
      const int sign = stats::interval_sign(d);
      row.push_back(d.n < 2 ? "" : sign < 0 ? "lower" : sign > 0 ? "higher" : "within");
    }
    for (std::size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + csv_field(row[c]);
    out += "\n";
  }
  return out;
}

std::vector<std::string> config_columns(const SweepSpec& s, const SweepTable& t) {
  const std::vector<std::string> labels = s.axis_labels();
  std::vector<std::string> out;
  for (const auto& c : t.columns) {
    bool config = std::find(labels.begin(), labels.end(), c) != labels.end();
    for (const auto& l : labels) config = config || is_axis_si_column(l, c);
    if (config) out.push_back(c);
  }
  return out;
}

}  // namespace kappasim::sweep
