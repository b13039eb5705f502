#include "report/replicates.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "report/format.hpp"

namespace kappasim::report {

const char* const kReplicateNote =
    "cells with ± are the mean over the replicate workload seeds ± the 95% Student t half-width "
    "(n replicates); the best configuration is the one with the best mean, and it is called lower "
    "or higher than the baseline only when the 95% interval of their replicate-by-replicate "
    "differences (same seeds on both sides) excludes 0";

std::vector<std::vector<std::size_t>> configurations(const ResultsTable& t,
                                                     const std::vector<std::string>& cols) {
  std::vector<std::vector<std::size_t>> out;
  std::map<std::string, std::size_t> index;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    std::string key;
    for (const auto& c : cols) key += t.get(r, c) + '\x1f';
    const auto it = index.emplace(key, out.size()).first;
    if (it->second == out.size()) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

std::optional<std::size_t> first_ok(const ResultsTable& t, const std::vector<std::size_t>& rows) {
  for (std::size_t r : rows)
    if (t.ok(r)) return r;
  return std::nullopt;
}

double mean_of(const ResultsTable& t, const std::vector<std::size_t>& rows,
               const std::string& name) {
  std::vector<double> xs;
  for (std::size_t r : rows)
    if (t.ok(r)) xs.push_back(t.num(r, name));
  return stats::mean_interval(xs).mean;
}

namespace {
// The replicates both configurations ran, paired by replicate (a's value, b's value).
std::vector<std::pair<double, double>> pairs(const ResultsTable& t,
                                             const std::vector<std::size_t>& a,
                                             const std::vector<std::size_t>& b,
                                             const std::string& name) {
  std::map<std::string, double> va, vb;
  for (std::size_t r : a)
    if (t.ok(r)) va[t.get(r, "replicate")] = t.num(r, name);
  for (std::size_t r : b)
    if (t.ok(r)) vb[t.get(r, "replicate")] = t.num(r, name);
  std::vector<std::pair<double, double>> out;
  for (const auto& [k, v] : va)
    if (vb.count(k)) out.emplace_back(v, vb[k]);
  return out;
}
}  // namespace

stats::Interval paired(const ResultsTable& t, const std::vector<std::size_t>& a,
                       const std::vector<std::size_t>& b, const std::string& name) {
  std::vector<double> xa, xb;
  for (const auto& [x, y] : pairs(t, a, b, name)) xa.push_back(x), xb.push_back(y);
  return stats::paired_difference(xa, xb);
}

namespace {
// Every replicate's two values agree to 9 significant digits: the runs did the same thing, and
// a paired difference would only print the rounding of the figures (1e-16 relative).
bool same_in_every_replicate(const std::vector<std::pair<double, double>>& p) {
  if (p.empty()) return false;
  for (const auto& [x, y] : p)
    if (std::fabs(x - y) > 1e-9 * std::max(std::fabs(x), std::fabs(y))) return false;
  return true;
}
}  // namespace

std::string versus(const ResultsTable& t, const std::vector<std::size_t>& a,
                   const std::vector<std::size_t>& b, const std::string& name,
                   const std::string& b_name, const std::string& unit) {
  const stats::Interval d = paired(t, a, b, name);
  if (d.n < 2) return "one replicate: not tested against " + b_name + "'s";
  if (same_in_every_replicate(pairs(t, a, b, name)))
    return "the same as " + b_name + "'s in every replicate (to 9 significant digits)";
  const int sign = stats::interval_sign(d);
  const std::string diff =
      "paired difference" + (unit.empty() ? "" : " in " + unit) + ": " + stats::format_interval(d);
  if (sign == 0)
    return "within the replicate spread of " + b_name + "'s (" + diff +
           ", the 95% interval contains 0)";
  return std::string(sign < 0 ? "lower" : "higher") + " than " + b_name + "'s (" + diff + ")";
}

std::vector<Best> best_per_group(const ResultsTable& t, const std::vector<std::string>& group,
                                 const std::string& choice, const std::string& metric, bool lower,
                                 const std::string& baseline_choice) {
  std::vector<Best> out;
  std::map<std::string, std::size_t> index;
  std::vector<std::vector<std::vector<std::size_t>>> choices;  // per group: configurations
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (!t.ok(r)) continue;
    std::string key;
    for (const auto& g : group) key += (key.empty() ? "" : ", ") + g + " " + t.get(r, g);
    if (!index.count(key)) {
      index[key] = out.size();
      out.push_back({key, "", NAN, NAN, {}, {}, {}});
      choices.emplace_back();
    }
    auto& cs = choices[index[key]];
    auto c = std::find_if(cs.begin(), cs.end(), [&](const auto& rows) {
      return t.get(rows[0], choice) == t.get(r, choice);
    });
    if (c == cs.end())
      cs.push_back({r});
    else
      c->push_back(r);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    Best& b = out[i];
    for (const auto& rows : choices[i]) {
      const double v = mean_of(t, rows, metric);
      if (std::isfinite(v) && (std::isnan(b.value) || (lower ? v < b.value : v > b.value))) {
        b.value = v;
        b.winner = t.get(rows[0], choice);
        b.winner_rows = rows;
      }
      if (t.get(rows[0], choice) == baseline_choice) {
        b.baseline = v;
        b.baseline_rows = rows;
      }
      b.choices.emplace_back(t.get(rows[0], choice), rows);
    }
  }
  return out;
}

std::string ratio_versus(const ResultsTable& t, const std::vector<std::size_t>& a,
                         const std::vector<std::size_t>& b, const std::string& name,
                         const std::string& b_name) {
  const auto p = pairs(t, a, b, name);
  if (p.size() < 2) return "";
  std::vector<double> logs;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& [x, y] : p) {
    if (!(x > 0) || !(y > 0)) return "";
    logs.push_back(std::log(x / y));
    lo = std::min(lo, x / y);
    hi = std::max(hi, x / y);
  }
  const stats::Interval d = stats::mean_interval(logs);
  const bool below = std::isfinite(d.hi) && d.hi < 0, above = std::isfinite(d.lo) && d.lo > 0;
  return fmt_num(std::exp(d.mean)) + "× " + b_name + "'s by the geometric mean over the paired " +
         "seeds (" + fmt_num(lo) + "–" + fmt_num(hi) + "× seed by seed; the paired log-ratio " +
         "interval " +
         (below   ? std::string("lies below 1: lower")
          : above ? std::string("lies above 1: higher")
                  : std::string("contains 1")) +
         ")";
}

std::string different_request_sets(
    const ResultsTable& t,
    const std::vector<std::pair<std::string, std::vector<std::size_t>>>& choices,
    const std::string& noun, const std::string& why) {
  if (!t.has("requests_rejected") || choices.size() < 2) return "";
  std::string list;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& [name, rows] : choices) {
    const double r = mean_of(t, rows, "requests_rejected");
    if (!std::isfinite(r)) continue;
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    list += (list.empty() ? "" : ", ") + name + " " + fmt_num(r);
  }
  if (!(hi > lo)) return "";
  return "; over different request sets: " + noun + " rejected per replicate " + list + " (" + why +
         ")";
}

std::string rejection_note(const ResultsTable& t, const Best& b) {
  return different_request_sets(t, b.choices, "requests",
                                "prompts larger than the whole KV pool: a choice that rejects "
                                "more serves only the shorter prompts, so its latency is not "
                                "comparable with the others'");
}

}  // namespace kappasim::report
