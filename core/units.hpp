// Units and quantities: one parser, one formatter, used by every config field and CLI option.
//
// A quantity is a double in SI base units plus a dimension vector. The base "units" are the
// ones this simulator reasons in: byte, second, FLOP, joule, transfer (GT/s, MT/s) and metre
// (for die area). Decimal prefixes (k M G T P E, m u/µ n p f) and binary prefixes (Ki Mi Gi Ti
// Pi Ei, only on B and bit) are never confused: "80 GB" is 80e9 B, "80 GiB" is 80·2^30 B.
// No SystemC here: this header is included by the analytic model and the config loader.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kappasim {

// Exponents of the base units.
struct Dimension {
  enum Base : int { kByte, kSecond, kFlop, kJoule, kTransfer, kMetre, kCount };
  std::array<std::int8_t, kCount> exp{};

  constexpr Dimension() = default;
  constexpr Dimension(int byte, int second, int flop, int joule, int transfer, int metre)
      : exp{static_cast<std::int8_t>(byte),     static_cast<std::int8_t>(second),
            static_cast<std::int8_t>(flop),     static_cast<std::int8_t>(joule),
            static_cast<std::int8_t>(transfer), static_cast<std::int8_t>(metre)} {}

  constexpr bool operator==(const Dimension& o) const {
    for (int i = 0; i < kCount; ++i)
      if (exp[i] != o.exp[i]) return false;
    return true;
  }
  constexpr bool operator!=(const Dimension& o) const { return !(*this == o); }
  Dimension operator*(const Dimension& o) const;
  Dimension operator/(const Dimension& o) const;
  Dimension pow(int n) const;
};

namespace dim {
//                                       B   s  FLOP  J   T   m
inline constexpr Dimension none{0, 0, 0, 0, 0, 0};
inline constexpr Dimension bytes{1, 0, 0, 0, 0, 0};
inline constexpr Dimension time{0, 1, 0, 0, 0, 0};
inline constexpr Dimension bandwidth{1, -1, 0, 0, 0, 0};
inline constexpr Dimension flops{0, 0, 1, 0, 0, 0};
inline constexpr Dimension flop_rate{0, -1, 1, 0, 0, 0};
inline constexpr Dimension energy{0, 0, 0, 1, 0, 0};
inline constexpr Dimension power{0, -1, 0, 1, 0, 0};
inline constexpr Dimension energy_per_byte{-1, 0, 0, 1, 0, 0};
inline constexpr Dimension transfer_rate{0, -1, 0, 0, 1, 0};
inline constexpr Dimension frequency{0, -1, 0, 0, 0, 0};
inline constexpr Dimension area{0, 0, 0, 0, 0, 2};
inline constexpr Dimension length{0, 0, 0, 0, 0, 1};
}  // namespace dim

// A human name for a dimension ("bandwidth", "data size", ...) or its unit expression.
std::string dimension_name(const Dimension& d);
// The canonical unit a dimension is printed in ("B/s", "FLOP/s", "J/bit", ...).
std::string canonical_unit(const Dimension& d);
// An example literal of that dimension, for error messages ("64 GB/s").
std::string example_literal(const Dimension& d);

struct Quantity {
  double value = 0;  // in SI base units (B, s, FLOP, J, T, m)
  Dimension dim;
};

// Thrown on a malformed literal or a dimension mismatch. `what()` is a complete sentence that
// quotes the input; callers prefix the file/line/key.
class UnitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses "64 GB/s", "2 PFLOP/s", "80 GiB", "3.36 us", "1.3 pJ/bit", "32 GT/s", "1e3", "0.5".
// A bare number is dimensionless. Whitespace between number and unit is optional.
Quantity parse_quantity(std::string_view text);
// Same, and the result must have dimension `expected`; a bare number is refused unless
// `expected` is dimensionless.
double parse_quantity_as(std::string_view text, const Dimension& expected);

// Formats in the canonical unit with an SI prefix chosen so the mantissa is in [1, 1000),
// using the shortest representation that round-trips ("64 GB/s", "85.899345920 GB" stays
// exact). parse(format(q)) == q for every finite q.
std::string format_quantity(double value, const Dimension& d);
inline std::string format_quantity(const Quantity& q) { return format_quantity(q.value, q.dim); }

// For reading, not parsing back: `digits` significant digits with the prefix format_quantity
// picks ("1.08 TB" for 1.082354827264e12 B at 3 digits, "167.8 GB" at 4). A value that
// rounds up into the next prefix takes it ("999.96 GB" at 3 digits is "1 TB").
std::string format_quantity_approx(double value, const Dimension& d, int digits = 3);

// Shortest round-trip decimal representation of a double ("0.1", "1e-05", "327680").
std::string format_number(double v);

}  // namespace kappasim
