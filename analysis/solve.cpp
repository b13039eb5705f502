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
    t.value = parse_quantity(v).value;
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

}  // namespace kappasim::analysis
