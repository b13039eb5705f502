// A small derivative-free, bounded minimiser for `kappasim calibrate` (docs/analysis.md).
//
// Nelder–Mead (Lagarias et al. 1998 coefficients: reflection 1, expansion 2, contraction 1/2,
// shrink 1/2) run on unbounded variables u with x = lo + (hi - lo)·(1 + sin u)/2, so every
// point it evaluates lies inside the box [lo, hi] (the bounds-by-transformation of Box 1965 /
// Nelder–Mead as in Numerical Recipes and SciPy's minimize bounds wrappers). After convergence
// it restarts once from the best point with a fresh simplex (NM can stall on a degenerate
// simplex); it stops when a restart improves f by less than f_tol.
//
// Why not a library: Debian's libnlopt-dev (NLopt) would do, but it is one more dependency for
// ~150 lines, and every evaluation here is a simulator run, so the optimiser's own efficiency is
// irrelevant; this one is deterministic and tested on Rosenbrock (tests/unit/analysis_test.cpp).
#pragma once

#include <functional>
#include <vector>

namespace kappasim::analysis {

struct Bound {
  double lo = 0, hi = 0;
};

struct OptimizeOptions {
  int max_evaluations = 300;
  double f_tol = 1e-6;  // relative spread of f over the simplex at convergence
  double x_tol = 1e-4;  // simplex diameter at convergence, as a fraction of each bound's width
  int restarts = 2;
};

struct OptimizeResult {
  std::vector<double> x;
  double f = 0;
  int evaluations = 0;
  bool converged = false;  // false: stopped at max_evaluations
};

// Minimises f over the box. x0 must lie inside it; bounds must have lo < hi (callers check and
// report; here a violation throws std::invalid_argument).
OptimizeResult minimize_bounded(const std::function<double(const std::vector<double>&)>& f,
                                const std::vector<Bound>& bounds, const std::vector<double>& x0,
                                const OptimizeOptions& opt = {});

}  // namespace kappasim::analysis
