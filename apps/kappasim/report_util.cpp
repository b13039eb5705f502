#include "apps/kappasim/report_util.hpp"

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"
#include "core/output.hpp"
#include "core/stats.hpp"
#include "sweeps/sweep_results.hpp"
#include "sweeps/sweep_spec.hpp"

namespace kappasim::cli {

std::string fmt_num(double v, int digits) {
  if (!std::isfinite(v)) return "—";
  char buf[64];
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e7 || a < 1e-3))
    std::snprintf(buf, sizeof buf, "%.*e", digits - 1, v);
  else
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  std::string s = buf;
  // %g may still use an exponent for large integers with few digits: spell those out.
  if (s.find('e') != std::string::npos && a >= 1 && a < 1e7) std::snprintf(buf, sizeof buf, "%.0f", v), s = buf;
  return s;
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

std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
    return o;
  };
  std::string out = "|";
  for (const auto& h : header) out += " " + esc(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (std::size_t i = 0; i < header.size(); ++i) out += " " + esc(i < r.size() ? r[i] : "") + " |";
    out += "\n";
  }
  return out;
}

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


bool have_gnuplot() {
  static const bool have = std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  return have;
}

bool render_figure(const std::string& dir, const Figure& f) {
  std::ostringstream gp;
  gp << "# " << f.title << "\n"
     << "# Written by kappasim reproduce. Restyle freely and rerun in this folder:\n"
     << "#   gnuplot " << f.name << ".gp   (writes " << f.name << ".png and " << f.name << ".svg)\n"
     << "set datafile separator ','\n"
     << "set datafile missing ''\n"
     << "set encoding utf8\n"
     << "do for [fmt in \"png svg\"] {\n"
     << "  if (fmt eq \"png\") { set terminal pngcairo size " << f.width << "," << f.height
     << " font 'DejaVu Sans,10' noenhanced }\n"
     << "  if (fmt eq \"svg\") { set terminal svg size " << f.width << "," << f.height
     << " font 'DejaVu Sans,10' noenhanced }\n"
     << "  set output '" << f.name << ".'.fmt\n"
     << f.body << "\n"
     << "  unset output\n"
     << "}\n";
  const std::filesystem::path script = std::filesystem::path(dir) / (f.name + ".gp");
  write_file_atomic(script.string(), gp.str());
  if (!have_gnuplot()) return false;
  const std::string cmd = "cd " + sweep::shell_quote(dir) + " && gnuplot " + sweep::shell_quote(f.name + ".gp") +
                          " >" + sweep::shell_quote(f.name + ".gnuplot.log") + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const bool ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0 &&
                  std::filesystem::exists(std::filesystem::path(dir) / (f.name + ".png"));
  if (ok) std::filesystem::remove(std::filesystem::path(dir) / (f.name + ".gnuplot.log"));
  return ok;
}

}  // namespace kappasim::cli
