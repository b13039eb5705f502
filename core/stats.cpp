#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace kappasim::stats {

namespace {

// Continued fraction of the incomplete beta function (Numerical Recipes 3rd ed., betacf).
double beta_cf(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEps = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) break;
  }
  return h;
}

// Regularized incomplete beta I_x(a, b).
double inc_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double ln_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(ln_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_cdf: degrees of freedom must be > 0");
  if (std::isnan(t)) return t;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2).
  const double x = df / (df + t * t);
  const double tail = 0.5 * inc_beta(df / 2, 0.5, x);
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_quantile: degrees of freedom must be > 0");
  if (!(p > 0 && p < 1)) throw std::invalid_argument("student_t_quantile: p must lie in (0, 1)");
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  // Bracket [0, hi] with cdf(hi) >= p, then bisect (the CDF is monotone).
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p && hi < 1e300) hi *= 2;
  for (int i = 0; i < 2000 && hi - lo > 1e-13 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (student_t_cdf(mid, df) < p)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

Interval mean_interval(const std::vector<double>& xs, double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("mean_interval: confidence must lie in (0, 1)");
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Interval iv;
  double sum = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : xs)
    if (std::isfinite(x)) {
      sum += x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      ++iv.n;
    }
  if (iv.n == 0) {
    iv.mean = iv.sd = iv.half_width = iv.lo = iv.hi = kNaN;
    return iv;
  }
  const double n = static_cast<double>(iv.n);
  // Equal samples have that value as their mean and no spread; the division of their rounded
  // sum would leave the mean an ulp off and a spread of ~1e-17 (a report printed it to 19
  // decimal places).
  iv.mean = lo == hi ? lo : sum / n;
  if (iv.n < 2) {
    iv.sd = iv.half_width = iv.lo = iv.hi = kNaN;
    return iv;
  }
  if (lo == hi) {
    iv.sd = iv.half_width = 0;
    iv.lo = iv.hi = iv.mean;
    return iv;
  }
  // Two-pass variance (numerically stable for the small n of replicates).
  double ss = 0;
  for (double x : xs)
    if (std::isfinite(x)) ss += (x - iv.mean) * (x - iv.mean);
  iv.sd = std::sqrt(ss / (n - 1));
  const double t = student_t_quantile(1 - (1 - confidence) / 2, n - 1);
  iv.half_width = t * iv.sd / std::sqrt(n);
  iv.lo = iv.mean - iv.half_width;
  iv.hi = iv.mean + iv.half_width;
  return iv;
}

std::string format_interval(const Interval& iv, int digits) {
  if (iv.n == 0 || !std::isfinite(iv.mean)) return "";
  if (digits < 1) digits = 1;
  char buf[128];
  if (iv.n < 2 || !std::isfinite(iv.half_width)) {
    std::snprintf(buf, sizeof buf, "%.3g (n=%zu)", iv.mean, iv.n);
    return buf;
  }
  // A half-width that rounds away at the sixth significant digit of the mean is shown as none:
  // the replicates agree to the digits printed (else a 1e-18 spread of a 0.01 s mean would set
  // 19 decimal places).
  if (iv.half_width == 0 ||
      (iv.mean != 0 &&
       iv.half_width < 0.5 * std::pow(10.0, std::floor(std::log10(std::fabs(iv.mean))) - 5))) {
    std::snprintf(buf, sizeof buf, "%.6g ± 0 (n=%zu)", iv.mean, iv.n);
    return buf;
  }
  // Decimal places that show `digits` significant digits of the half-width.
  const int exponent = static_cast<int>(std::floor(std::log10(std::fabs(iv.half_width))));
  const int decimals = std::max(0, digits - 1 - exponent);
  if (decimals > 0 || exponent < 6) {
    std::snprintf(buf, sizeof buf, "%.*f ± %.*f (n=%zu)", decimals, iv.mean, decimals,
                  iv.half_width, iv.n);
  } else {
    std::snprintf(buf, sizeof buf, "%.*g ± %.*g (n=%zu)", digits + 1, iv.mean, digits,
                  iv.half_width, iv.n);
  }
  std::string s = buf;
  if (s.rfind("-0", 0) == 0 && s.find_first_not_of("-0.", 0) == s.find(' '))
    s.erase(0, 1);  // "-0.00" → "0.00"
  return s;
}

Interval paired_difference(const std::vector<double>& a, const std::vector<double>& b,
                           double confidence) {
  if (a.size() != b.size())
    throw std::invalid_argument("paired_difference: the two samples differ in size");
  std::vector<double> d;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::isfinite(a[i]) && std::isfinite(b[i])) d.push_back(a[i] - b[i]);
  return mean_interval(d, confidence);
}

int interval_sign(const Interval& diff) {
  if (diff.n < 2 || !std::isfinite(diff.lo) || !std::isfinite(diff.hi)) return 0;
  if (diff.hi < 0) return -1;
  if (diff.lo > 0) return 1;
  return 0;
}

}  // namespace kappasim::stats
