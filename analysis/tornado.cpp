// Tornado ranking and its outputs (see tornado.hpp).
#include "analysis/tornado.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/units.hpp"

namespace kappasim::analysis {

double TornadoRow::swing() const {
  if (!metric_low || !metric_high) return -1;
  return std::fabs(*metric_high - *metric_low);
}

std::vector<TornadoRow> rank_tornado(std::vector<TornadoRow> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const TornadoRow& a, const TornadoRow& b) {
    const double sa = a.swing(), sb = b.swing();
    if (sa != sb) return sa > sb;
    return a.key < b.key;
  });
  return rows;
}

namespace {
std::string num(const std::optional<double>& v) {
  if (!v) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", *v);
  return b;
}
std::string csvq(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}
}  // namespace

std::string tornado_table(const std::vector<TornadoRow>& ranked, const std::string& metric,
                          double base_metric, std::optional<double> seed_spread) {
  std::string out = "metric " + metric + " at base: " + num(base_metric) + "\n";
  out += "rank  swing        rel      key  [kind, range]  low -> metric | high -> metric\n";
  int rank = 0;
  for (const auto& r : ranked) {
    ++rank;
    const double s = r.swing();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%4d  ", rank);
    std::string line = buf;
    if (s < 0) {
      line += "-            -        ";
    } else {
      std::snprintf(buf, sizeof buf, "%-12.6g %-8.3g ", s,
                    base_metric != 0 ? s / std::fabs(base_metric) : 0.0);
      line += buf;
    }
    line += r.key + "  [" + r.kind + ", " + r.range + "]  " + r.low_text + " -> " +
            num(r.metric_low) + " | " + r.high_text + " -> " + num(r.metric_high);
    if (seed_spread && s >= 0 && s < *seed_spread) line += "  (within seed spread)";
    if (!r.error.empty()) line += "  (" + r.error + ")";
    out += line + "\n";
  }
  return out;
}

std::string tornado_csv(const std::vector<TornadoRow>& ranked, double base_metric,
                        std::optional<double> seed_spread) {
  std::string out =
      "rank,key,kind,range,base,low,high,metric_base,metric_low,metric_high,swing,error,"
      "within_seed_spread\n";
  int rank = 0;
  for (const auto& r : ranked) {
    ++rank;
    out += std::to_string(rank) + "," + csvq(r.key) + "," + r.kind + "," + csvq(r.range) + "," +
           csvq(r.base_text) + "," + csvq(r.low_text) + "," + csvq(r.high_text) + "," +
           format_number(base_metric) + "," + (r.metric_low ? format_number(*r.metric_low) : "") +
           "," + (r.metric_high ? format_number(*r.metric_high) : "") + "," +
           (r.swing() >= 0 ? format_number(r.swing()) : "") + "," + csvq(r.error) + "," +
           (seed_spread && r.swing() >= 0 ? (r.swing() < *seed_spread ? "true" : "false") : "") +
           "\n";
  }
  return out;
}

std::string tornado_gnuplot(const std::vector<TornadoRow>& ranked, const std::string& metric,
                            double base_metric, const std::string& csv_name, int max_rows) {
  int n = 0;
  for (const auto& r : ranked)
    if (r.swing() >= 0 && n < max_rows) ++n;
  std::string s;
  s += "# Tornado chart of " + metric + " (kappasim sensitivity): one bar per parameter from the\n";
  s += "# metric at its low value to the metric at its high value; base line at the base run.\n";
  s += "set datafile separator ','\n";
  s += "set title 'Sensitivity of " + metric + " (one parameter at a time)'\n";
  s += "set xlabel '" + metric + "'\n";
  s += "set ytics nomirror\nset grid xtics\nset key bottom right\n";
  s += "set yrange [0.5:" + std::to_string(n) + ".5]\n";
  s += "set arrow from " + format_number(base_metric) + ", graph 0 to " +
       format_number(base_metric) + ", graph 1 nohead dt 2\n";
  // Rank 1 on top: y = n + 1 - rank; rows past max_rows and rows without both metrics skipped.
  s += "plot '" + csv_name + "' every ::1::" + std::to_string(n) + " using (($9+$10)/2):(" +
       std::to_string(n + 1) +
       "-$1):(($10>$9?$10-$9:$9-$10)/2):(0.35):ytic(2) with boxxyerrorbars fill solid 0.5 title "
       "'low ... high', \\\n";
  s += "     '' every ::1::" + std::to_string(n) + " using 9:(" + std::to_string(n + 1) +
       "-$1) with points pt 7 title 'at low', \\\n";
  s += "     '' every ::1::" + std::to_string(n) + " using 10:(" + std::to_string(n + 1) +
       "-$1) with points pt 5 title 'at high'\n";
  return s;
}

}  // namespace kappasim::analysis
