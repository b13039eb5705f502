// Bounded Nelder–Mead by transformation (see optimize.hpp).
#include "analysis/optimize.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace kappasim::analysis {

namespace {

struct Box {
  const std::vector<Bound>& b;
  std::vector<double> to_x(const std::vector<double>& u) const {
    std::vector<double> x(u.size());
    for (std::size_t i = 0; i < u.size(); ++i) {
      const double w = b[i].hi - b[i].lo;
      x[i] = std::clamp(b[i].lo + w * (1 + std::sin(u[i])) / 2, b[i].lo, b[i].hi);
    }
    return x;
  }
  std::vector<double> to_u(const std::vector<double>& x) const {
    std::vector<double> u(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double t = 2 * (x[i] - b[i].lo) / (b[i].hi - b[i].lo) - 1;
      u[i] = std::asin(std::clamp(t, -1.0, 1.0));
    }
    return u;
  }
};

}  // namespace

OptimizeResult minimize_bounded(const std::function<double(const std::vector<double>&)>& f,
                                const std::vector<Bound>& bounds, const std::vector<double>& x0,
                                const OptimizeOptions& opt) {
  const std::size_t n = bounds.size();
  if (n == 0 || x0.size() != n) throw std::invalid_argument("minimize_bounded: dimension mismatch");
  for (std::size_t i = 0; i < n; ++i)
    if (!(bounds[i].lo < bounds[i].hi) || x0[i] < bounds[i].lo || x0[i] > bounds[i].hi)
      throw std::invalid_argument("minimize_bounded: x0 outside the bounds or lo >= hi");
  Box box{bounds};
  OptimizeResult r;
  auto eval = [&](const std::vector<double>& u) {
    ++r.evaluations;
    const double v = f(box.to_x(u));
    return std::isnan(v) ? HUGE_VAL : v;
  };

  std::vector<double> best_u = box.to_u(x0);
  double best_f = eval(best_u);
  for (int round = 0; round <= opt.restarts; ++round) {
    // Initial simplex: best point plus a step of 0.5 rad along each axis (about a quarter of the
    // width near the middle), away from the nearer bound's turning point.
    std::vector<std::vector<double>> s(n + 1, best_u);
    std::vector<double> fs(n + 1, best_f);
    for (std::size_t i = 0; i < n; ++i) {
      s[i + 1][i] += best_u[i] > 0 ? -0.5 : 0.5;
      fs[i + 1] = eval(s[i + 1]);
    }
    bool converged = false;
    while (r.evaluations < opt.max_evaluations) {
      std::vector<std::size_t> idx(n + 1);
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(),
                       [&](std::size_t a, std::size_t b) { return fs[a] < fs[b]; });
      std::vector<std::vector<double>> s2;
      std::vector<double> f2;
      for (std::size_t i : idx) {
        s2.push_back(s[i]);
        f2.push_back(fs[i]);
      }
      s.swap(s2);
      fs.swap(f2);
      // Convergence: f spread and simplex size in x (fraction of each bound's width).
      double spread = std::fabs(fs[n] - fs[0]);
      double diam = 0;
      const std::vector<double> x_best = box.to_x(s[0]);
      for (std::size_t k = 1; k <= n; ++k) {
        const std::vector<double> xk = box.to_x(s[k]);
        for (std::size_t i = 0; i < n; ++i)
          diam = std::max(diam, std::fabs(xk[i] - x_best[i]) / (bounds[i].hi - bounds[i].lo));
      }
      if (spread <= opt.f_tol * (std::fabs(fs[0]) + 1e-300) + 1e-300 || diam <= opt.x_tol) {
        converged = true;
        break;
      }
      std::vector<double> c(n, 0.0);
      for (std::size_t k = 0; k < n; ++k)
        for (std::size_t i = 0; i < n; ++i) c[i] += s[k][i] / static_cast<double>(n);
      auto along = [&](double t) {
        std::vector<double> p(n);
        for (std::size_t i = 0; i < n; ++i) p[i] = c[i] + t * (s[n][i] - c[i]);
        return p;
      };
      const std::vector<double> xr = along(-1);
      const double fr = eval(xr);
      if (fr < fs[0]) {
        const std::vector<double> xe = along(-2);
        const double fe = eval(xe);
        if (fe < fr) {
          s[n] = xe;
          fs[n] = fe;
        } else {
          s[n] = xr;
          fs[n] = fr;
        }
      } else if (fr < fs[n - 1]) {
        s[n] = xr;
        fs[n] = fr;
      } else {
        const bool outside = fr < fs[n];
        const std::vector<double> xc = along(outside ? -0.5 : 0.5);
        const double fc = eval(xc);
        if (fc < (outside ? fr : fs[n])) {
          s[n] = xc;
          fs[n] = fc;
        } else {
          for (std::size_t k = 1; k <= n; ++k) {
            for (std::size_t i = 0; i < n; ++i) s[k][i] = s[0][i] + 0.5 * (s[k][i] - s[0][i]);
            fs[k] = eval(s[k]);
          }
        }
      }
    }
    std::size_t b = static_cast<std::size_t>(std::min_element(fs.begin(), fs.end()) - fs.begin());
    const double gain = best_f - fs[b];
    if (fs[b] < best_f) {
      best_f = fs[b];
      best_u = s[b];
    }
    r.converged = converged;
    if (!converged) break;
    if (round > 0 && gain <= opt.f_tol * (std::fabs(best_f) + 1e-300) + 1e-300) break;
  }
  r.x = box.to_x(best_u);
  r.f = best_f;
  return r;
}

}  // namespace kappasim::analysis
