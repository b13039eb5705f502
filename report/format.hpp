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
// The median (mean of the middle two for an even count); NaN when empty.
double median_of(std::vector<double> v);

}  // namespace kappasim::report
