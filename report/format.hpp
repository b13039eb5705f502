// Number formatting for the generated reports (kappasim reproduce, kappasim report): a number,
// a percentage or a GB/s figure as a Markdown cell, "—" where there is no value.
#pragma once

#include <string>
#include <vector>

namespace kappasim::report {

// A number for a report: `digits` significant digits, no exponent for ordinary magnitudes;
// "—" for NaN.
std::string fmt_num(double v, int digits = 3);
// 100·x with 3 significant digits and "%"; "—" when not finite.
std::string pct(double x);
// B/s as GB/s (fmt_num); "—" when not finite.
std::string gbs(double v);
// A simulated κ_crit cell (issue 20 part 4): the crossing when there is one; else a bound from
// the searched grid (κ = 1 … kappa_max): "< 1" when load already exceeded compute at κ = 1
// (link_binds_from_start), "> kappa_max" when it never reached compute (link_never_binds); "—"
// when neither is known.
std::string kappa_crit_cell(double kappa_crit, double binds_from_start, double never_binds,
                            double kappa_max);
// The median (mean of the middle two for an even count); NaN when empty.
double median_of(std::vector<double> v);

}  // namespace kappasim::report
