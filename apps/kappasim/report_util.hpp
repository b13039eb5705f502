// Pieces of the generated reports (kappasim reproduce): Markdown tables, gnuplot scripts written
// next to their data and rendered to PNG and SVG, reading a sweep's merged results.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kappasim::cli {

// A number for a report: `digits` significant digits, no exponent for ordinary magnitudes;
// "—" for NaN.
std::string fmt_num(double v, int digits = 3);

// A GitHub-flavoured Markdown table.
std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows);

// A sweep's merged results.csv as strings (sweeps/sweep_results), with lookups by column name.
struct ResultsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  int col(const std::string& name) const;  // -1 if absent
  std::string get(std::size_t row, const std::string& name) const;  // "" if absent
  double num(std::size_t row, const std::string& name) const;       // NaN if absent or empty
  bool ok(std::size_t row) const { return get(row, "status") == "ok"; }
  // Rows whose columns equal the given values.
  std::vector<std::size_t> where(const std::map<std::string, std::string>& eq) const;
};
// Reads DIR/results.csv. InputError naming the file if missing or malformed.
ResultsTable read_results(const std::string& sweep_dir);

// ---- replicate intervals in report tables (issue 11.1; core/stats) ----
// The mean of column `name` over the ok `rows` (blank cells skipped) with its 95% Student t
// interval when there are two or more samples: "1.23 ± 0.05 (n=3)" (`digits` significant
// digits of the half-width); one sample: fmt_num(v); none: "—". Rows of one configuration's
// replicates: t.where({{axis, value}, ...}).
std::string interval_cell(const ResultsTable& t, const std::vector<std::size_t>& rows,
                          const std::string& name, int digits = 2);

// A gnuplot figure: `body` holds the plot commands (set ... / plot ...) and runs once per
// output format; the script sets the terminal and output around it. Data files are referenced
// by name relative to the figure's folder.
struct Figure {
  std::string name;   // file stem: NAME.gp, NAME.png, NAME.svg
  std::string title;  // a comment at the top of the script
  std::string body;
  int width = 900, height = 560;
};
// Writes DIR/NAME.gp (atomically) and, when gnuplot is on the PATH, renders DIR/NAME.png and
// DIR/NAME.svg. Returns true when the PNG was rendered.
bool render_figure(const std::string& dir, const Figure& f);
// Whether gnuplot can be run.
bool have_gnuplot();

}  // namespace kappasim::cli
