#include "core/units.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/error.hpp"

namespace kappasim {

Dimension Dimension::operator*(const Dimension& o) const {
  Dimension r;
  for (int i = 0; i < kCount; ++i) r.exp[i] = static_cast<std::int8_t>(exp[i] + o.exp[i]);
  return r;
}
Dimension Dimension::operator/(const Dimension& o) const {
  Dimension r;
  for (int i = 0; i < kCount; ++i) r.exp[i] = static_cast<std::int8_t>(exp[i] - o.exp[i]);
  return r;
}
Dimension Dimension::pow(int n) const {
  Dimension r;
  for (int i = 0; i < kCount; ++i) r.exp[i] = static_cast<std::int8_t>(exp[i] * n);
  return r;
}

namespace {

// A scale is applied as exact operations so that "GB" and "pJ" round-trip: multiply by 10^e or
// divide by 10^-e (10^k is exact in a double up to k = 22), multiply by 2^b, divide by 8 for bits.
struct Scale {
  int pow10 = 0;
  int pow2 = 0;
  double mult = 1;  // non-power scales (min, h)
};

double apply(double v, const Scale& s, int sign) {
  // sign = +1: value in unit -> SI; -1: SI -> value in unit.
  const int e10 = s.pow10 * sign;
  if (e10 > 0) v *= std::pow(10.0, e10);
  if (e10 < 0) v /= std::pow(10.0, -e10);
  v = std::ldexp(v, s.pow2 * sign);
  if (s.mult != 1) v = sign > 0 ? v * s.mult : v / s.mult;
  return v;
}

struct BaseUnit {
  const char* symbol;
  Dimension dim;
  Scale scale;
  bool binary_ok;  // accepts Ki/Mi/Gi prefixes
};

// Longest symbols first, so "min" wins over "m" and "FLOPS" over "FLOP".
const std::vector<BaseUnit>& base_units() {
  static const std::vector<BaseUnit> units = [] {
    std::vector<BaseUnit> u = {
        {"FLOPS", dim::flop_rate, {}, false},
        {"FLOP", dim::flops, {}, false},
        {"bit", dim::bytes, {0, -3, 1}, true},
        {"min", dim::time, {0, 0, 60}, false},
        {"Hz", dim::frequency, {}, false},
        {"B", dim::bytes, {}, true},
        {"b", dim::bytes, {0, -3, 1}, true},
        {"s", dim::time, {}, false},
        {"J", dim::energy, {}, false},
        {"W", dim::power, {}, false},
        {"T", dim::transfer_rate * dim::time, {}, false},
        {"m", dim::length, {}, false},
        {"h", dim::time, {0, 0, 3600}, false},
    };
    std::stable_sort(u.begin(), u.end(), [](const BaseUnit& a, const BaseUnit& b) {
      return std::string_view(a.symbol).size() > std::string_view(b.symbol).size();
    });
    return u;
  }();
  return units;
}

struct Prefix {
  const char* symbol;
  Scale scale;
  bool binary;
};

const std::vector<Prefix>& prefixes() {
  static const std::vector<Prefix> p = {
      {"", {}, false},
      {"k", {3, 0, 1}, false},
      {"M", {6, 0, 1}, false},
      {"G", {9, 0, 1}, false},
      {"T", {12, 0, 1}, false},
      {"P", {15, 0, 1}, false},
      {"E", {18, 0, 1}, false},
      {"m", {-3, 0, 1}, false},
      {"u", {-6, 0, 1}, false},
      {"\xC2\xB5", {-6, 0, 1}, false},  // U+00B5 micro sign
      {"\xCE\xBC", {-6, 0, 1}, false},  // U+03BC Greek mu
      {"n", {-9, 0, 1}, false},
      {"p", {-12, 0, 1}, false},
      {"f", {-15, 0, 1}, false},
      {"Ki", {0, 10, 1}, true},
      {"Mi", {0, 20, 1}, true},
      {"Gi", {0, 30, 1}, true},
      {"Ti", {0, 40, 1}, true},
      {"Pi", {0, 50, 1}, true},
      {"Ei", {0, 60, 1}, true},
  };
  return p;
}

const char* kKnownUnits =
    "B, bit (with k M G T P E or Ki Mi Gi Ti Pi Ei), s, min, h, FLOP, FLOPS, J, W, T (transfers), "
    "Hz, m, %, combined with / and * and ^n (e.g. GB/s, TFLOP/s, pJ/bit, GT/s, mm^2)";

std::string quoted(std::string_view s) {
  return "\"" + excerpt(std::string(s)) + "\"";
}  // short: never a whole file

// The largest power of a base unit, in a term ("mm^2") and in a whole unit: keeps the int8
// exponents of Dimension from wrapping and the scale list short.
constexpr int kMaxExponent = 9;

// Resolves one unit term such as "GiB", "us", "mm^2" into dimension and scale.
void resolve_term(std::string_view term, std::string_view whole, Dimension& d,
                  std::vector<std::pair<Scale, int>>& scales, int sign) {
  int power = 1;
  if (auto caret = term.find('^'); caret != std::string_view::npos) {
    std::string_view e = term.substr(caret + 1);
    int p = 0;
    auto [ptr, ec] = std::from_chars(e.data(), e.data() + e.size(), p);
    if (ec != std::errc() || ptr != e.data() + e.size() || e.empty() || p == 0)
      throw UnitError("malformed exponent in unit " + quoted(term) + " of " + quoted(whole));
    if (p > kMaxExponent || p < -kMaxExponent)
      throw UnitError("exponent out of range in unit " + quoted(term) + " of " + quoted(whole) +
                      "; expected -" + std::to_string(kMaxExponent) + " to " +
                      std::to_string(kMaxExponent));
    power = p;
    term = term.substr(0, caret);
  }
  if (term.empty()) throw UnitError("missing unit before '^' in " + quoted(whole));
  for (const BaseUnit& u : base_units()) {
    std::string_view sym(u.symbol);
    if (term.size() < sym.size() || term.substr(term.size() - sym.size()) != sym) continue;
    std::string_view pre = term.substr(0, term.size() - sym.size());
    for (const Prefix& p : prefixes()) {
      if (pre != p.symbol) continue;
      if (p.binary && !u.binary_ok)
        throw UnitError("binary prefix " + quoted(p.symbol) + " is only valid on B and bit, in " +
                        quoted(whole));
      Dimension ud = u.dim.pow(power * sign);
      for (int k = 0; k < Dimension::kCount; ++k)
        if (std::abs(d.exp[k] + ud.exp[k]) > kMaxExponent)
          throw UnitError("unit " + quoted(whole) + " raises a base unit beyond the power " +
                          std::to_string(kMaxExponent));
      d = d * ud;
      for (int i = 0; i < std::abs(power); ++i) {
        scales.push_back({p.scale, sign * (power > 0 ? 1 : -1)});
        scales.push_back({u.scale, sign * (power > 0 ? 1 : -1)});
      }
      return;
    }
  }
  std::string hint;
  if (term == "KB" || term == "Kb") hint = " (did you mean kB, or KiB for 1024 B?)";
  if (term == "FLOPs" || term.find("FLOPs") != std::string_view::npos)
    hint = " (write FLOP for a count or FLOP/s for a rate)";
  throw UnitError("unknown unit " + quoted(term) + " in " + quoted(whole) + hint +
                  "; known units: " + kKnownUnits);
}

}  // namespace

Quantity parse_quantity(std::string_view text) {
  const std::string_view whole = text;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  if (text.empty()) throw UnitError("empty value where a number with a unit was expected");
  std::string_view num = text;
  if (!num.empty() && num.front() == '+') num.remove_prefix(1);
  double v = 0;
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (ec == std::errc::result_out_of_range)
    throw UnitError("number out of range in " + quoted(whole));
  if (ec != std::errc() || ptr == num.data())
    throw UnitError("expected a number, optionally followed by a unit (e.g. \"64 GB/s\"), got " +
                    quoted(whole));
  std::string_view rest = trim(std::string_view(ptr, num.data() + num.size() - ptr));
  // from_chars accepts "inf" and "nan"; a config value never may be either.
  if (!std::isfinite(v)) throw UnitError("value is not a finite number: " + quoted(whole));

  Dimension d = dim::none;
  std::vector<std::pair<Scale, int>> scales;
  if (rest == "%") {
    return {v / 100.0, dim::none};
  }
  int sign = 1;
  std::size_t i = 0;
  bool expect_term = !rest.empty();
  while (i < rest.size()) {
    std::size_t j = i;
    while (j < rest.size() && rest[j] != '/' && rest[j] != '*' && rest[j] != ' ' &&
           !(rest.compare(j, 2, "\xC2\xB7") == 0))
      ++j;
    std::string_view term = rest.substr(i, j - i);
    if (term.empty()) throw UnitError("malformed unit " + quoted(rest) + " in " + quoted(whole));
    resolve_term(term, whole, d, scales, sign);
    expect_term = false;
    if (j >= rest.size()) break;
    if (rest[j] == ' ')
      throw UnitError("unexpected space in unit " + quoted(rest) + " of " + quoted(whole));
    if (rest[j] == '/') {
      sign = -1;  // everything after the first '/' divides: a/b*c means a/(b*c)
      i = j + 1;
    } else if (rest[j] == '*') {
      i = j + 1;
    } else {
      i = j + 2;  // middle dot
    }
    expect_term = true;
  }
  if (expect_term) throw UnitError("unit ends with an operator in " + quoted(whole));
  // Powers of ten are folded into the decimal exponent and the literal re-parsed, so that the
  // result is the double nearest to the exact decimal value ("1100 TFLOP/s" == "1.1 PFLOP/s").
  int pow10 = 0;
  for (auto& [s, sg] : scales) {
    pow10 += s.pow10 * sg;
    s.pow10 = 0;
  }
  if (pow10 != 0) {
    std::string lit(num.data(), static_cast<std::size_t>(ptr - num.data()));
    long exp10 = pow10;
    if (auto e = lit.find_first_of("eE"); e != std::string::npos) {
      // strtol saturates at LONG_MAX on a huge written exponent; clamp it first so the sum
      // cannot overflow (any |exponent| this large is out of range for a double anyway).
      long written = std::strtol(lit.c_str() + e + 1, nullptr, 10);
      exp10 += std::clamp(written, -100000L, 100000L);
      lit.resize(e);
    }
    lit += "e" + std::to_string(exp10);
    auto r = std::from_chars(lit.data(), lit.data() + lit.size(), v);
    if (r.ec != std::errc()) throw UnitError("value out of range: " + quoted(whole));
  }
  for (const auto& [s, sg] : scales) v = apply(v, s, sg);
  if (!std::isfinite(v)) throw UnitError("value overflows: " + quoted(whole));
  return {v, d};
}

double parse_quantity_as(std::string_view text, const Dimension& expected) {
  Quantity q = parse_quantity(text);
  if (q.dim != expected) {
    if (q.dim == dim::none)
      throw UnitError("expected a " + dimension_name(expected) + " with a unit (e.g. \"" +
                      example_literal(expected) + "\"), got the bare number \"" +
                      std::string(text) + "\"");
    throw UnitError("expected a " + dimension_name(expected) + " (e.g. \"" +
                    example_literal(expected) + "\"), got \"" + excerpt(std::string(text)) +
                    "\", a " + dimension_name(q.dim));
  }
  return q.value;
}

namespace {
struct Named {
  Dimension d;
  const char* name;
  const char* unit;
  const char* example;
};
const Named kNamed[] = {
    {dim::none, "plain number", "", "0.5"},
    {dim::bytes, "data size", "B", "80 GB"},
    {dim::time, "time", "s", "3.36 us"},
    {dim::bandwidth, "bandwidth", "B/s", "64 GB/s"},
    {dim::flops, "FLOP count", "FLOP", "141 GFLOP"},
    {dim::flop_rate, "compute rate", "FLOP/s", "989 TFLOP/s"},
    {dim::energy, "energy", "J", "1.5 J"},
    {dim::power, "power", "W", "700 W"},
    {dim::energy_per_byte, "energy per bit", "J/bit", "1.3 pJ/bit"},
    {dim::transfer_rate, "transfer rate", "T/s", "32 GT/s"},
    {dim::frequency, "frequency", "Hz", "1.98 GHz"},
    {dim::area, "area", "mm^2", "814 mm^2"},
    {dim::length, "length", "m", "5 nm"},
};
const Named* find_named(const Dimension& d) {
  for (const Named& n : kNamed)
    if (n.d == d) return &n;
  return nullptr;
}
std::string generic_unit(const Dimension& d) {
  static const char* sym[] = {"B", "s", "FLOP", "J", "T", "m"};
  std::string num, den;
  for (int i = 0; i < Dimension::kCount; ++i) {
    int e = d.exp[i];
    if (e == 0) continue;
    std::string& s = e > 0 ? num : den;
    if (!s.empty()) s += "*";
    s += sym[i];
    if (std::abs(e) != 1) s += "^" + std::to_string(std::abs(e));
  }
  if (den.empty()) return num.empty() ? std::string("1") : num;
  if (!num.empty()) return num + "/" + den;
  // Only negative exponents: "B^-1*s^-2" (parse_quantity reads it; "1/B" would be a number).
  std::string out;
  for (int i = 0; i < Dimension::kCount; ++i) {
    if (d.exp[i] == 0) continue;
    if (!out.empty()) out += "*";
    out += std::string(sym[i]) + "^" + std::to_string(d.exp[i]);
  }
  return out;
}
}  // namespace

std::string dimension_name(const Dimension& d) {
  if (const Named* n = find_named(d)) return n->name;
  return "quantity in " + generic_unit(d);
}
std::string canonical_unit(const Dimension& d) {
  if (const Named* n = find_named(d)) return n->unit;
  return generic_unit(d);
}
std::string example_literal(const Dimension& d) {
  if (const Named* n = find_named(d)) return n->example;
  return "1 " + generic_unit(d);
}

std::string format_number(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e16) {  // whole numbers in full: 327680, not 3.2768e+05
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  // Shortest representation that parses back to exactly v.
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {
// The decimal prefixes format_quantity and format_quantity_approx print, largest first.
struct PrintPrefix {
  int e;
  const char* s;
};
constexpr PrintPrefix kPrintPrefixes[] = {{18, "E"}, {15, "P"}, {12, "T"},  {9, "G"},
                                          {6, "M"},  {3, "k"},  {0, ""},    {-3, "m"},
                                          {-6, "u"}, {-9, "n"}, {-12, "p"}, {-15, "f"}};
}  // namespace

std::string format_quantity(double value, const Dimension& d) {
  if (d == dim::none) return format_number(value);
  std::string unit = canonical_unit(d);
  // The value in the canonical unit (only J/bit and mm^2 differ from SI base units).
  double base = value;
  if (d == dim::energy_per_byte) base = value / 8.0;  // J/B -> J/bit
  std::string fixed_prefix;
  if (d == dim::area) {
    base = value * 1e6;  // m^2 -> mm^2, printed without further prefix
    fixed_prefix = "x";
  }
  auto try_with = [&](int e, const char* pre) -> std::string {
    double m = e >= 0 ? base / std::pow(10.0, e) : base * std::pow(10.0, -e);
    // The shortest mantissa that parses back to exactly `value`; try neighbours of m too.
    for (double cand : {m, std::nextafter(m, HUGE_VAL), std::nextafter(m, -HUGE_VAL)}) {
      for (int prec = 1; prec <= 17; ++prec) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*g", prec, cand);
        if (std::string_view(buf).find('e') != std::string_view::npos && prec < 17) continue;
        std::string s = std::string(buf) + " " + pre + unit;
        try {
          if (parse_quantity(s).value == value) return s;
        } catch (const UnitError&) {
        }
      }
    }
    return {};
  };
  if (value != 0 && fixed_prefix.empty()) {
    const double a = std::fabs(base);
    for (const PrintPrefix& p : kPrintPrefixes) {
      if (a >= std::pow(10.0, p.e) * (1 - 1e-12) || p.e == -15) {
        std::string s = try_with(p.e, p.s);
        if (!s.empty()) return s;
        break;
      }
    }
  }
  std::string s = try_with(0, "");
  if (!s.empty()) return s;
  // The canonical unit cannot hold this value exactly (a subnormal J/B is not a whole number of
  // J/bit; m^2 beyond 1.8e302 overflows in mm^2): the SI base units never rescale it.
  return format_number(value) + " " + generic_unit(d);
}

std::string format_quantity_approx(double value, const Dimension& d, int digits) {
  if (digits < 1) digits = 1;
  if (!std::isfinite(value) || value == 0 || d == dim::energy_per_byte || d == dim::area)
    return format_quantity(value, d);  // nothing to round, or units with their own scaling
  const std::string unit = canonical_unit(d);
  // The value rounded to `digits` significant digits first, so that 999.96 lands in the
  // prefix of the 1000 it prints as.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits - 1, value);
  const double rounded = std::strtod(buf, nullptr);
  if (d == dim::none) return format_number(rounded);
  const double a = std::fabs(rounded);
  for (const PrintPrefix& p : kPrintPrefixes) {
    if (a >= std::pow(10.0, p.e) * (1 - 1e-12) || p.e == -15) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, rounded / std::pow(10.0, p.e));
      return std::string(buf) + " " + p.s + unit;
    }
  }
  return format_quantity(value, d);
}

}  // namespace kappasim
