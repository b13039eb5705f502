// Threshold search (see solve.hpp).
#include "analysis/solve.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim::analysis {

Target parse_target(const std::string& text) {
  const std::string expect =
      "--target '" + text +
      "': expected \"METRIC OP VALUE\" with OP one of <, <=, >, >= (e.g. \"ttft_p99_s < 1\")";
  std::size_t i = text.find_first_of("<>");
  if (i == std::string::npos || i == 0) throw InputError(expect);
  Target t;
  t.text = text;
  std::size_t j = i + 1;
  const bool eq = j < text.size() && text[j] == '=';
  if (eq) ++j;
  t.op =
      text[i] == '<' ? (eq ? CompareOp::Le : CompareOp::Lt) : (eq ? CompareOp::Ge : CompareOp::Gt);
  auto trim = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t a = 0;
    while (a < s.size() && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    return s.substr(a);
  };
  t.metric = trim(text.substr(0, i));
  const std::string v = trim(text.substr(j));
  if (t.metric.empty() || v.empty() || v.find_first_of("<>=") != std::string::npos)
    throw InputError(expect);
  for (char c : t.metric)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
      throw InputError(expect);
  try {
    const Quantity q = parse_quantity(v);
    t.value = q.value;
    t.dim = q.dim;
  } catch (const UnitError& e) {
    throw InputError("--target '" + text + "': " + e.what());
  }
  return t;
}

bool target_met(const Target& t, double m) {
  if (std::isnan(m)) return false;
  switch (t.op) {
    case CompareOp::Lt:
      return m < t.value;
    case CompareOp::Le:
      return m <= t.value;
    case CompareOp::Gt:
      return m > t.value;
    case CompareOp::Ge:
      return m >= t.value;
  }
  return false;
}

Dimension metric_dimension(const std::string& m) {
  auto ends = [&](const std::string& suf) {
    return m.size() > suf.size() && m.compare(m.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (ends("_Bps") || ends("_bytes_per_s")) return dim::bandwidth;
  if (ends("_s")) return dim::time;
  if (ends("_j")) return dim::energy;
  if (ends("_w")) return dim::power;
  if (m.find("bytes") != std::string::npos) return dim::bytes;
  return dim::none;
}

void check_target_dimension(const Target& t) {
  if (t.dim == dim::none) return;  // a bare number: compared in the metric's SI unit
  const Dimension md = metric_dimension(t.metric);
  if (t.dim == md) return;
  throw InputError("--target '" + t.text + "': the value is a " + dimension_name(t.dim) + " but " +
                   t.metric + " is " +
                   (md == dim::none
                        ? std::string("dimensionless (give a plain number)")
                        : "a " + dimension_name(md) + " (e.g. " + example_literal(md) + ")"));
}

SolveResult solve_threshold(const std::function<double(double)>& metric, double lo, double hi,
                            const Target& target, const SolveOptions& opt) {
  SolveResult r;
  const bool geo = opt.geometric && lo > 0 && hi > 0;
  auto at = [&](double x) {
    Probe p{x, metric(x), false};
    p.met = target_met(target, p.metric);
    r.probes.push_back(p);
    return p;
  };
  auto rnd = [&](double x) { return opt.integer ? std::round(x) : x; };
  auto mid = [&](double a, double b) { return rnd(geo ? std::sqrt(a * b) : (a + b) / 2); };
  Probe a = at(lo);
  Probe b = at(hi);
  r.method = "bisection";
  if (a.met == b.met) {
    // Scan the interior for the first change of state.
    r.method = "bracketed scan + bisection";
    Probe prev = a;
    bool found = false;
    for (int k = 1; k <= opt.scan_points + 1 && !found; ++k) {
      const double f = static_cast<double>(k) / (opt.scan_points + 1);
      Probe p = k == opt.scan_points + 1
                    ? b
                    : at(rnd(geo ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f));
      if (p.x == prev.x) continue;  // integer scan points can coincide
      if (p.met != prev.met) {
        a = prev;
        b = p;
        found = true;
      }
      prev = p;
    }
    if (!found) {
      r.status = a.met ? SolveResult::Status::MetEverywhere : SolveResult::Status::NeverMet;
      r.x = lo;
      return r;
    }
  }
  const double width = std::fabs(hi - lo);
  const double stop = std::max(opt.rel_tol * width, opt.integer ? 1.0 : 0.0);
  while (std::fabs(b.x - a.x) > stop && static_cast<int>(r.probes.size()) < opt.max_probes) {
    Probe m = at(mid(a.x, b.x));
    if (m.met == a.met)
      a = m;
    else
      b = m;
  }
  r.status = SolveResult::Status::Found;
  r.x = a.met ? a.x : b.x;
  r.other = a.met ? b.x : a.x;
  return r;
}

SolveResult solve_discrete(const std::function<double(std::uint64_t)>& metric,
                           const std::function<double(std::uint64_t)>& value, std::uint64_t last,
                           const Target& target, const SolveOptions& opt) {
  SolveResult r;
  const bool geo = opt.geometric && value(0) > 0;
  auto at = [&](std::uint64_t i) {
    Probe p;
    p.index = i;
    p.x = value(i);
    p.metric = metric(i);
    p.met = target_met(target, p.metric);
    r.probes.push_back(p);
    return p;
  };
  // The candidate whose value is nearest `v` (values ascend), between a and b.
  auto nearest_to = [&](double v, std::uint64_t a, std::uint64_t b) {
    while (b - a > 1) {
      const std::uint64_t m = a + (b - a) / 2;
      (value(m) < v ? a : b) = m;
    }
    return std::fabs(value(a) - v) <= std::fabs(value(b) - v) ? a : b;
  };
  auto mid = [&](std::uint64_t a, std::uint64_t b) {
    if (geo) {
      std::uint64_t m = nearest_to(std::sqrt(value(a) * value(b)), a, b);
      if (m != a && m != b) return m;
    }
    return a + (b - a) / 2;
  };
  auto scan_at = [&](int k) -> std::uint64_t {
    const long double f = static_cast<long double>(k) / (opt.scan_points + 1);
    if (geo)
      return nearest_to(static_cast<double>(value(0) * std::pow(value(last) / value(0), f)), 0,
                        last);
    return static_cast<std::uint64_t>(static_cast<long double>(last) * f + 0.5L);
  };
  Probe a = at(0);
  Probe b = at(last);
  r.method = "bisection";
  if (a.met == b.met) {
    r.method = "bracketed scan + bisection";
    Probe prev = a;
    bool found = false;
    for (int k = 1; k <= opt.scan_points + 1 && !found; ++k) {
      std::uint64_t i = k == opt.scan_points + 1 ? last : scan_at(k);
      if (i <= prev.index) continue;  // scan points can coincide on few candidates
      Probe p = i == last ? b : at(i);
      if (p.met != prev.met) {
        a = prev;
        b = p;
        found = true;
      }
      prev = p;
    }
    if (!found) {
      r.status = a.met ? SolveResult::Status::MetEverywhere : SolveResult::Status::NeverMet;
      r.x = a.x;
      r.x_index = a.index;
      return r;
    }
  }
  const long double tol = static_cast<long double>(opt.rel_tol) * static_cast<long double>(last);
  const std::uint64_t stop =
      std::max<std::uint64_t>(1, tol >= 1.8e19L ? last : static_cast<std::uint64_t>(tol));
  while (b.index - a.index > stop && static_cast<int>(r.probes.size()) < opt.max_probes) {
    Probe m = at(mid(a.index, b.index));
    if (m.met == a.met)
      a = m;
    else
      b = m;
  }
  r.status = SolveResult::Status::Found;
  r.x = a.met ? a.x : b.x;
  r.other = a.met ? b.x : a.x;
  r.x_index = a.met ? a.index : b.index;
  r.other_index = a.met ? b.index : a.index;
  return r;
}

}  // namespace kappasim::analysis
