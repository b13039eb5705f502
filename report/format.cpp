#include "report/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kappasim::report {

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
  if (s.find('e') != std::string::npos && a >= 1 && a < 1e7)
    std::snprintf(buf, sizeof buf, "%.0f", v), s = buf;
  return s;
}

std::string pct(double x) { return std::isfinite(x) ? fmt_num(100 * x, 3) + "%" : "—"; }
std::string gbs(double v) { return std::isfinite(v) ? fmt_num(v / 1e9) : "—"; }

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string kappa_crit_cell(double kappa_crit, double binds_from_start, double never_binds,
                            double kappa_max) {
  if (std::isfinite(kappa_crit)) return fmt_num(kappa_crit);
  if (binds_from_start == 1) return "< 1";
  if (never_binds == 1 && std::isfinite(kappa_max)) return "> " + fmt_num(kappa_max);
  return "—";
}

}  // namespace kappasim::report
