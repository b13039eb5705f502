// libFuzzer target: the one quantity parser and formatter (core/units).
//
// Contract checked on arbitrary text:
//  - parse_quantity and parse_quantity_as either return a finite value or throw UnitError;
//    anything else escaping (another exception type, a sanitizer report) is a finding;
//  - whatever parses formats back exactly: parse(format(q)) has q's value and dimension, bit for
//    bit (the formatter's documented promise, which --dump-config relies on);
//  - the same holds for any finite double in any named dimension (the input's first 9 bytes read
//    as a dimension index and a double).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/units.hpp"

namespace {

using kappasim::Dimension;
namespace dim = kappasim::dim;

const Dimension kDims[] = {
    dim::none,      dim::bytes,  dim::time,  dim::bandwidth,       dim::flops,
    dim::flop_rate, dim::energy, dim::power, dim::energy_per_byte, dim::transfer_rate,
    dim::frequency, dim::area,   dim::length};

[[noreturn]] void finding(const std::string& what, std::string_view input, double value,
                          const std::string& formatted) {
  std::fprintf(stderr, "fuzz_units: %s\n  input: \"%.*s\"\n  value: %.17g\n  formatted: \"%s\"\n",
               what.c_str(), static_cast<int>(input.size()), input.data(), value,
               formatted.c_str());
  std::abort();
}

// parse(format(v, d)) must give v and d exactly.
void check_round_trip(double v, const Dimension& d, std::string_view input) {
  if (!std::isfinite(v)) finding("a parsed or given value is not finite", input, v, "");
  const std::string s = kappasim::format_quantity(v, d);
  kappasim::Quantity back;
  try {
    back = kappasim::parse_quantity(s);
  } catch (const kappasim::UnitError& e) {
    finding(std::string("format_quantity wrote text that does not parse: ") + e.what(), input, v,
            s);
  }
  if (back.dim != d) finding("the dimension changed in the round trip", input, v, s);
  // Bit-exact, except that -0 and 0 are the same quantity.
  if (!(back.value == v)) finding("the value changed in the round trip", input, v, s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  try {
    const kappasim::Quantity q = kappasim::parse_quantity(text);
    check_round_trip(q.value, q.dim, text);
  } catch (const kappasim::UnitError&) {
  }

  for (const Dimension& d : kDims) {
    try {
      const double v = kappasim::parse_quantity_as(text, d);
      check_round_trip(v, d, text);
    } catch (const kappasim::UnitError&) {
    }
  }

  if (size >= 9) {
    double v = 0;
    std::memcpy(&v, data + 1, sizeof v);
    if (std::isfinite(v))
      check_round_trip(v, kDims[data[0] % (sizeof kDims / sizeof kDims[0])], "<raw double>");
  }
  return 0;
}
