// Small-sample statistics for replicated runs: the Student t distribution (CDF and quantile),
// the mean with its sample standard deviation and a two-sided t confidence interval, and the
// one-line text the report prints ("1.23 ± 0.05 (n=3)").
//
// Model: the n replicates of one configuration are independent draws (independent seeds) of a
// metric with a finite variance; the interval is mean ± t(1 - α/2, n - 1) · s / √n with s the
// sample standard deviation (n - 1 in the denominator). It ignores the non-normality of tail
// metrics (TTFT p99) at small n; the interval is then approximate. No external library: the t
// CDF is the regularized incomplete beta function (continued fraction, Lentz's method, as in
// Press et al., Numerical Recipes 3rd ed., §6.4), and the quantile is its inverse by bisection
// (monotone, to ~1e-12 relative), checked against textbook table values in
// tests/unit/stats_test.cpp. Pure: no SystemC, no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kappasim::stats {

// P(T <= t) for Student's t with `df` > 0 degrees of freedom.
double student_t_cdf(double t, double df);
// The p-quantile (0 < p < 1) of Student's t with `df` > 0 degrees of freedom:
// student_t_quantile(0.975, 2) = 4.303, (0.975, 9) = 2.262. Throws std::invalid_argument
// outside the domain.
double student_t_quantile(double p, double df);

struct Interval {
  std::size_t n = 0;      // finite samples used
  double mean = 0;        // NaN when n == 0
  double sd = 0;          // sample standard deviation; NaN when n < 2
  double half_width = 0;  // t(1 - (1 - confidence)/2, n - 1) · sd / √n; NaN when n < 2
  double lo = 0, hi = 0;  // mean ∓ half_width (NaN when n < 2)
};
// Mean, sample standard deviation and two-sided `confidence` interval of the finite values in
// `xs` (NaN and infinities are skipped: a replicate without the metric is not a sample).
// Equal samples give that value as the mean and a spread of exactly 0.
Interval mean_interval(const std::vector<double>& xs, double confidence = 0.95);

// "1.23 ± 0.05 (n=3)": mean and half-width with `digits` significant digits of the half-width
// (the mean rounded to the same decimal place); n < 2 gives "1.23 (n=1)", n == 0 gives "".
// A half-width of 0, or one that rounds away at the mean's sixth significant digit, gives
// "0.0109431 ± 0 (n=3)".
std::string format_interval(const Interval& iv, int digits = 2);

// ---- paired comparison over common random numbers (issue 11.1) ----
// Replicate i of configuration A and replicate i of configuration B share their workload seed
// (a sweep's seed per replicate is H(seed, replicate), the same for every configuration), so
// the per-replicate differences a[i] - b[i] are the samples: their mean with its Student t
// interval (mean_interval of the differences, n - 1 degrees of freedom). The seed-to-seed
// spread common to both cancels, which makes this a sharper test than checking whether the two
// separate intervals overlap. Pairs where either value is not finite are skipped.
// std::invalid_argument when the sizes differ.
Interval paired_difference(const std::vector<double>& a, const std::vector<double>& b,
                           double confidence = 0.95);
// -1 when the interval lies entirely below 0 (A < B), +1 entirely above (A > B), 0 when it
// contains 0 or is undefined (n < 2): the difference is within the replicate spread.
int interval_sign(const Interval& diff);

}  // namespace kappasim::stats
