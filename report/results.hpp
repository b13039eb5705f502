// A sweep's merged results.csv as the report sections read it (strings, lookups by column
// name), and the cells built from it: replicate intervals (issue 11.1; core/stats) and the
// load-bound shares of a configuration (issue 12 item 10).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kappasim::report {

// A sweep's merged results.csv as strings (sweeps/sweep_results), with lookups by column name.
struct ResultsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  int col(const std::string& name) const;  // -1 if absent
  bool has(const std::string& name) const { return col(name) >= 0; }
  std::string get(std::size_t row, const std::string& name) const;  // "" if absent
  double num(std::size_t row, const std::string& name) const;       // NaN if absent or empty
  bool ok(std::size_t row) const { return get(row, "status") == "ok"; }
  // Rows whose columns equal the given values.
  std::vector<std::size_t> where(const std::map<std::string, std::string>& eq) const;
};
// Reads DIR/results.csv. InputError naming the file if missing or malformed.
ResultsTable read_results(const std::string& sweep_dir);

// The mean of column `name` over the ok `rows` (blank cells skipped) with its 95% Student t
// interval when there are two or more samples: "1.23 ± 0.05 (n=3)" (`digits` significant
// digits of the half-width); one sample: fmt_num(v); none: "—". Rows of one configuration's
// replicates: t.where({{axis, value}, ...}).
std::string interval_cell(const ResultsTable& t, const std::vector<std::size_t>& rows,
                          const std::string& name, int digits = 2);

// What bound the loads of a configuration's rows (their load_bound_share_* columns, replicates
// averaged): largest first, those of at least 1%, e.g. "host_dram 79%, link 20%"; "—" when it
// loaded nothing.
std::string bound_shares(const ResultsTable& t, const std::vector<std::size_t>& rows);
std::string bound_shares(const ResultsTable& t, std::size_t r);

// The studies' baseline of row r (issue 22): its load path (column `load_path`: kernel, LMCache's
// default, or layerwise, the paper's testbed), "kernel" where the sweep has no such column.
std::string baseline_path(const ResultsTable& t, std::size_t r);

}  // namespace kappasim::report
