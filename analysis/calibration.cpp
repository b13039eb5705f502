// Calibration file parsing and the fit (see calibration.hpp).
#include "analysis/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/solve.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace kappasim::analysis {

namespace {

[[noreturn]] void fail(const ConfigNode& at, const std::string& msg) {
  throw InputError(at.key_loc.file.empty() ? at.loc : at.key_loc, msg);
}

void check_keys(const ConfigNode& map, const std::vector<std::string>& allowed,
                const std::string& where) {
  if (!map.is_map()) fail(map, "expected a map (" + where + ")");
  for (const auto& [k, v] : map.entries) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == k;
    if (ok) continue;
    fail(v, unknown_key_message(k, allowed, where));
  }
}

const ConfigNode& need(const ConfigNode& map, const char* key, const std::string& where) {
  const ConfigNode* n = map.find(key);
  if (!n) throw InputError(map.loc, std::string("missing key '") + key + "' in " + where);
  return *n;
}

std::string scalar(const ConfigNode& n, const std::string& what) {
  if (!n.is_scalar() || n.scalar.empty()) fail(n, "expected a single value (" + what + ")");
  return n.scalar;
}

Quantity quantity(const ConfigNode& n, const std::string& what) {
  try {
    return parse_quantity(scalar(n, what));
  } catch (const UnitError& e) {
    fail(n, what + ": " + e.what());
  }
}

double same_dim(const ConfigNode& n, const Dimension& d, const std::string& what) {
  const Quantity q = quantity(n, what);
  if (!(q.dim == d))
    fail(n, what + ": '" + n.scalar + "' is a " + dimension_name(q.dim) + ", expected a " +
                dimension_name(d) + " like " + example_literal(d));
  return q.value;
}

}  // namespace

std::string FreeParameter::text(double v) const {
  return dim == dim::none ? format_number(v) : format_quantity(v, dim);
}

CalibrationSpec parse_calibration(const ConfigNode& root, const std::string& base_dir) {
  CalibrationSpec s;
  check_keys(root,
             {"name", "description", "overlay", "parameters", "measurements", "max_evaluations"},
             "a calibration file");
  s.name = root.find("name") ? scalar(*root.find("name"), "the calibration's name") : "calibration";
  if (const ConfigNode* o = root.find("overlay")) {
    check_keys(*o, {"system", "name"}, "overlay (the system preset the fitted values refine)");
    s.overlay_system = scalar(need(*o, "system", "overlay"), "a system preset name");
    s.overlay_name = o->find("name") ? scalar(*o->find("name"), "the overlay preset's name")
                                     : s.overlay_system + "-calibrated";
  }
  if (const ConfigNode* m = root.find("max_evaluations")) {
    const Quantity q = quantity(*m, "max_evaluations");
    if (!(q.dim == dim::none) || q.value < 10 || q.value > 100000)
      fail(*m, "max_evaluations: expected a whole number from 10 to 100000");
    s.options.max_evaluations = static_cast<int>(q.value);
  }
  const ConfigNode& ps = need(root, "parameters", "a calibration file");
  if (ps.kind != ConfigNode::Kind::Seq || ps.items.empty())
    fail(ps, "parameters: expected a non-empty list of {key, lo, hi[, start]}");
  std::set<std::string> keys;
  for (const ConfigNode& p : ps.items) {
    check_keys(p, {"key", "lo", "hi", "start"}, "a free parameter");
    FreeParameter fp;
    fp.key = scalar(need(p, "key", "a free parameter"),
                    "a config key like system.gpu.dma_copy_overhead");
    if (!keys.insert(fp.key).second) fail(p, "free parameter '" + fp.key + "' is listed twice");
    const Quantity lo = quantity(need(p, "lo", "a free parameter"), "lo of '" + fp.key + "'");
    fp.dim = lo.dim;
    fp.bound.lo = lo.value;
    fp.bound.hi = same_dim(need(p, "hi", "a free parameter"), fp.dim, "hi of '" + fp.key + "'");
    if (!(fp.bound.lo < fp.bound.hi))
      fail(*p.find("hi"), "bounds of '" + fp.key + "' are empty or inverted: lo " +
                              p.find("lo")->scalar + " must be below hi " + p.find("hi")->scalar);
    fp.start = p.find("start") ? same_dim(*p.find("start"), fp.dim, "start of '" + fp.key + "'")
                               : (fp.bound.lo + fp.bound.hi) / 2;
    if (fp.start < fp.bound.lo || fp.start > fp.bound.hi)
      fail(*p.find("start"), "start of '" + fp.key + "' lies outside [lo, hi]");
    s.params.push_back(fp);
  }
  const ConfigNode& ms = need(root, "measurements", "a calibration file");
  if (ms.kind != ConfigNode::Kind::Seq || ms.items.empty())
    fail(ms, "measurements: expected a non-empty list");
  std::set<std::string> ids;
  for (const ConfigNode& m : ms.items) {
    check_keys(m,
               {"id", "command", "value", "run", "kind", "metric", "measured", "uncertainty", "fit",
                "source"},
               "a measurement");
    Measurement x;
    x.loc = m.loc;
    x.id = scalar(need(m, "id", "a measurement"), "an id like kernel-4k");
    for (char c : x.id)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
        fail(*m.find("id"), "measurement id '" + x.id + "': expected [a-z0-9.-]");
    if (!ids.insert(x.id).second)
      fail(*m.find("id"), "measurement id '" + x.id + "' is used twice");
    const bool cmd = m.find("command") != nullptr, run = m.find("run") != nullptr;
    if (cmd == run)
      fail(m, "measurement '" + x.id +
                  "': give exactly one of command: (with value:) or run: (with metric:)");
    if (cmd) {
      const ConfigNode& c = *m.find("command");
      if (c.kind != ConfigNode::Kind::Seq || c.items.empty())
        fail(c, "measurement '" + x.id +
                    "': command: expected a kappasim argv list like [probe, h2d, ...]");
      for (const auto& a : c.items) x.command.push_back(scalar(a, "a command-line argument"));
      x.pointer = scalar(need(m, "value", "measurement '" + x.id + "'"),
                         "a JSON pointer like /0/bandwidth_bytes_per_s");
      if (x.pointer.empty() || x.pointer[0] != '/')
        fail(*m.find("value"),
             "measurement '" + x.id + "': value: expected a JSON pointer starting with '/'");
      if (m.find("metric") || m.find("kind"))
        fail(m, "measurement '" + x.id + "': metric:/kind: belong to the run: form");
    } else {
      std::string path = scalar(*m.find("run"), "a run config path");
      x.run_config =
          (!path.empty() && path[0] != '/' && !base_dir.empty()) ? base_dir + "/" + path : path;
      x.metric = scalar(need(m, "metric", "measurement '" + x.id + "'"), "a metric name");
      if (m.find("kind")) x.kind = scalar(*m.find("kind"), "a sweep point kind");
      if (m.find("value"))
        fail(*m.find("value"), "measurement '" + x.id + "': value: belongs to the command: form");
    }
    const Quantity meas = quantity(need(m, "measured", "measurement '" + x.id + "'"), "measured");
    x.dim = meas.dim;
    x.measured = meas.value;
    // The dimension the metric's name declares (issue 26 item 7: "12.5 GB" for a bandwidth was
    // accepted). A run: metric follows the summary naming rule; for a command: the last
    // component of the pointer is checked when its suffix names a unit.
    {
      const std::string name =
          x.command.empty() ? x.metric : x.pointer.substr(x.pointer.rfind('/') + 1);
      const Dimension md = metric_dimension(name);
      if ((!x.command.empty() ? !(md == dim::none) : true) && !(md == x.dim))
        fail(*m.find("measured"),
             "measured of '" + x.id + "': " + scalar(*m.find("measured"), "measured") + " is " +
                 (x.dim == dim::none ? std::string("a plain number")
                                     : "a " + dimension_name(x.dim)) +
                 " but " + name + " is " +
                 (md == dim::none
                      ? std::string("dimensionless (give a plain number)")
                      : "a " + dimension_name(md) + " (e.g. " + example_literal(md) + ")"));
      if (!(x.dim == dim::none) && x.measured < 0)
        fail(*m.find("measured"), "measured of '" + x.id + "': a " + dimension_name(x.dim) +
                                      " cannot be negative, got " +
                                      scalar(*m.find("measured"), "measured"));
    }
    x.sigma = same_dim(need(m, "uncertainty", "measurement '" + x.id + "'"), x.dim,
                       "uncertainty of '" + x.id + "'");
    if (!(x.sigma > 0))
      fail(*m.find("uncertainty"), "uncertainty of '" + x.id + "' must be above zero");
    if (const ConfigNode* f = m.find("fit")) {
      const std::string v = scalar(*f, "true or false");
      if (v != "true" && v != "false") fail(*f, "fit: expected true or false");
      x.fit = v == "true";
    }
    s.measurements.push_back(x);
  }
  std::size_t fitted = 0;
  for (const auto& m : s.measurements) fitted += m.fit ? 1 : 0;
  if (fitted < s.params.size())
    fail(ms, std::to_string(fitted) + " measurement(s) to fit but " +
                 std::to_string(s.params.size()) +
                 " free parameter(s): the fit needs at least as many measurements as parameters");
  return s;
}

double chi2_p_value(double chi2, int dof) {
  if (dof <= 0) return 1;
  if (!(chi2 > 0)) return 1;
  // Q(a, x), a = dof/2, x = chi2/2: the series for P when x < a + 1, else Lentz's continued
  // fraction for Q (Abramowitz & Stegun 6.5.29 and 6.5.31).
  const double a = dof / 2.0, x = chi2 / 2.0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {
    double sum = 1 / a, term = sum;
    for (int n = 1; n < 1000 && std::fabs(term) > std::fabs(sum) * 1e-15; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return std::max(0.0, 1 - sum * std::exp(-x + a * std::log(x) - lg));
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

double chi2(const std::vector<double>& sim, const std::vector<Measurement>& m,
            const std::vector<std::size_t>& which) {
  double c = 0;
  for (std::size_t k = 0; k < which.size(); ++k) {
    const Measurement& x = m[which[k]];
    const double r = (sim[k] - x.measured) / x.sigma;
    c += std::isnan(r) ? 1e30 : r * r;
  }
  return c;
}

namespace {

struct Fit {
  std::vector<double> x;
  double chi2;
  int evaluations;
  bool converged;
};

Fit fit_subset(const CalibrationSpec& s, const Simulate& simulate,
               const std::vector<std::size_t>& which, const std::vector<double>& x0) {
  std::vector<Bound> b;
  for (const auto& p : s.params) b.push_back(p.bound);
  auto f = [&](const std::vector<double>& x) {
    return chi2(simulate(x, which), s.measurements, which);
  };
  const OptimizeResult r = minimize_bounded(f, b, x0, s.options);
  return {r.x, r.f, r.evaluations, r.converged};
}

}  // namespace

CalibrationResult calibrate(const CalibrationSpec& s, const Simulate& simulate,
                            bool leave_one_out) {
  std::vector<std::size_t> fitted, all;
  for (std::size_t i = 0; i < s.measurements.size(); ++i) {
    all.push_back(i);
    if (s.measurements[i].fit) fitted.push_back(i);
  }
  std::vector<double> x0;
  for (const auto& p : s.params) x0.push_back(p.start);
  const Fit f = fit_subset(s, simulate, fitted, x0);
  CalibrationResult r;
  r.x = f.x;
  r.chi2 = f.chi2;
  r.evaluations = f.evaluations;
  r.converged = f.converged;
  r.at_fit = simulate(r.x, all);
  r.loo = r.at_fit;
  r.loo_x.assign(all.size(), r.x);
  r.held_out.assign(all.size(), false);
  for (std::size_t i : all) r.held_out[i] = !s.measurements[i].fit;
  if (leave_one_out && fitted.size() > s.params.size()) {
    for (std::size_t i : fitted) {
      r.held_out[i] = true;
      std::vector<std::size_t> rest;
      for (std::size_t j : fitted)
        if (j != i) rest.push_back(j);
      const Fit g = fit_subset(s, simulate, rest, r.x);
      r.evaluations += g.evaluations;
      r.loo[i] = simulate(g.x, {i})[0];
      r.loo_x[i] = g.x;
    }
  }
  // How far each parameter moves each fitted measurement over its whole range (the others at the
  // fit), in uncertainties. A range swing, not a local derivative: simulated metrics are often
  // piecewise flat (whole steps, whole chunks), where a small difference reads as zero.
  r.sensitivity.assign(fitted.size(), std::vector<double>(s.params.size(), 0.0));
  for (std::size_t p = 0; p < s.params.size(); ++p) {
    std::vector<double> xl = r.x, xh = r.x;
    xl[p] = s.params[p].bound.lo;
    xh[p] = s.params[p].bound.hi;
    const std::vector<double> yl = simulate(xl, fitted), yh = simulate(xh, fitted);
    for (std::size_t k = 0; k < fitted.size(); ++k)
      r.sensitivity[k][p] = (yh[k] - yl[k]) / s.measurements[fitted[k]].sigma;
  }
  return r;
}

}  // namespace kappasim::analysis
