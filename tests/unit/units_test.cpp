// The units parser and formatter: every unit family, decimal vs binary prefixes, round trips,
// and each error. Expected values are the SI definitions (GB = 1e9 B, GiB = 2^30 B, ...).
#include <gtest/gtest.h>

#include <cmath>

#include "core/units.hpp"

namespace kappasim {
namespace units_test {
namespace {

double q(const char* s, const Dimension& d) { return parse_quantity_as(s, d); }

TEST(Units, DataSizesDecimalAndBinaryAreNeverConfused) {
  EXPECT_DOUBLE_EQ(q("80 GB", dim::bytes), 80e9);
  EXPECT_DOUBLE_EQ(q("80 GiB", dim::bytes), 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(q("1 KiB", dim::bytes), 1024);
  EXPECT_DOUBLE_EQ(q("1 kB", dim::bytes), 1000);
  EXPECT_DOUBLE_EQ(q("2 TB", dim::bytes), 2e12);
  EXPECT_DOUBLE_EQ(q("1 TiB", dim::bytes), 1099511627776.0);
  EXPECT_DOUBLE_EQ(q("50 MB", dim::bytes), 50e6);
  EXPECT_DOUBLE_EQ(q("8 bit", dim::bytes), 1);
  EXPECT_DOUBLE_EQ(q("16 b", dim::bytes), 2);
  EXPECT_DOUBLE_EQ(q("1 Gibit", dim::bytes), 1073741824.0 / 8);
  EXPECT_NE(q("80 GB", dim::bytes), q("80 GiB", dim::bytes));
}

TEST(Units, Bandwidths) {
  EXPECT_DOUBLE_EQ(q("64 GB/s", dim::bandwidth), 64e9);
  EXPECT_DOUBLE_EQ(q("3.35 TB/s", dim::bandwidth), 3.35e12);
  EXPECT_DOUBLE_EQ(q("1 GiB/s", dim::bandwidth), 1073741824.0);
  EXPECT_DOUBLE_EQ(q("100 Gb/s", dim::bandwidth), 12.5e9);  // gigabit
  EXPECT_DOUBLE_EQ(q("64GB/s", dim::bandwidth), 64e9);      // no space
}

TEST(Units, ComputeRates) {
  EXPECT_DOUBLE_EQ(q("989 TFLOP/s", dim::flop_rate), 989e12);
  EXPECT_DOUBLE_EQ(q("2 PFLOP/s", dim::flop_rate), 2e15);
  EXPECT_DOUBLE_EQ(q("2000 TFLOPS", dim::flop_rate), 2e15);
  EXPECT_DOUBLE_EQ(q("141 GFLOP", dim::flops), 141e9);
  // Equal decimal values are the same double whatever the prefix.
  EXPECT_EQ(q("1100 TFLOP/s", dim::flop_rate), q("1.1 PFLOP/s", dim::flop_rate));
}

TEST(Units, TimesPowerEnergyTransfers) {
  EXPECT_DOUBLE_EQ(q("3.36 us", dim::time), 3.36e-6);
  EXPECT_DOUBLE_EQ(q("3.36 \xC2\xB5s", dim::time), 3.36e-6);  // micro sign
  EXPECT_DOUBLE_EQ(q("5 ms", dim::time), 5e-3);
  EXPECT_DOUBLE_EQ(q("2 min", dim::time), 120);
  EXPECT_DOUBLE_EQ(q("1 h", dim::time), 3600);
  EXPECT_DOUBLE_EQ(q("700 W", dim::power), 700);
  EXPECT_DOUBLE_EQ(q("1.2 kW", dim::power), 1200);
  EXPECT_DOUBLE_EQ(q("5 J", dim::energy), 5);
  EXPECT_DOUBLE_EQ(q("32 GT/s", dim::transfer_rate), 32e9);
  EXPECT_DOUBLE_EQ(q("3200 MT/s", dim::transfer_rate), 3.2e9);
  // 1.3 pJ per bit = 10.4 pJ per byte
  EXPECT_NEAR(q("1.3 pJ/bit", dim::energy_per_byte), 1.3e-12 * 8, 1e-25);
  EXPECT_DOUBLE_EQ(q("1.98 GHz", dim::frequency), 1.98e9);
  EXPECT_NEAR(q("814 mm^2", dim::area), 814e-6, 1e-18);
}

TEST(Units, DimensionlessAndPercent) {
  EXPECT_DOUBLE_EQ(q("0.78", dim::none), 0.78);
  EXPECT_DOUBLE_EQ(q("78 %", dim::none), 0.78);
  EXPECT_DOUBLE_EQ(q("1e3", dim::none), 1000);
  EXPECT_DOUBLE_EQ(q("-2.5", dim::none), -2.5);
  EXPECT_DOUBLE_EQ(q("2.5e3 GB", dim::bytes), 2.5e12);
}

TEST(Units, WrongDimensionIsAnErrorNamingBoth) {
  try {
    q("80 GB", dim::bandwidth);
    FAIL() << "expected UnitError";
  } catch (const UnitError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bandwidth"), std::string::npos) << m;
    EXPECT_NE(m.find("data size"), std::string::npos) << m;
    EXPECT_NE(m.find("80 GB"), std::string::npos) << m;
  }
  EXPECT_THROW(q("64", dim::bandwidth), UnitError);  // bare number where a unit is needed
  EXPECT_THROW(q("64 GB/s", dim::none), UnitError);
  EXPECT_THROW(q("989 TFLOP", dim::flop_rate), UnitError);  // count, not rate
}

TEST(Units, MalformedLiteralsAreErrors) {
  for (const char* bad : {"", "   ", "GB/s", "64 GBs", "64 KB", "64 GiW", "64 GB//s", "64 GB/",
                          "nan GB", "inf W", "1e999 B", "64 G B", "x64", "64 FLOPs", "2 m^x"}) {
    EXPECT_THROW(parse_quantity(bad), UnitError) << "'" << bad << "'";
  }
  try {
    parse_quantity("64 KB");
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("KiB"), std::string::npos) << e.what();
  }
}

TEST(Units, AHugeWrittenExponentBesideAPrefixIsHandledNotOverflowed) {
  // Found by fuzz_units: strtol saturates on the written exponent, and adding the prefix's
  // power of ten to LONG_MAX was signed overflow. Zero stays zero at any exponent; anything
  // else is out of range (above or below).
  EXPECT_EQ(parse_quantity("0E9007199254740993000020000000 EB").value, 0.0);
  EXPECT_THROW(parse_quantity("1E9007199254740993000020000000 EB"), UnitError);
  EXPECT_THROW(parse_quantity("1E-9007199254740993000020000000 EB"), UnitError);  // underflow
}

TEST(Units, FormatUsesCanonicalUnitAndPrefix) {
  EXPECT_EQ(format_quantity(64e9, dim::bandwidth), "64 GB/s");
  EXPECT_EQ(format_quantity(80e9, dim::bytes), "80 GB");
  EXPECT_EQ(format_quantity(989e12, dim::flop_rate), "989 TFLOP/s");
  EXPECT_EQ(format_quantity(1.1e15, dim::flop_rate), "1.1 PFLOP/s");
  EXPECT_EQ(format_quantity(3.36e-6, dim::time), "3.36 us");
  EXPECT_EQ(format_quantity(700, dim::power), "700 W");
  EXPECT_EQ(format_quantity(32e9, dim::transfer_rate), "32 GT/s");
  EXPECT_EQ(format_quantity(1.3e-12 * 8, dim::energy_per_byte), "1.3 pJ/bit");
  EXPECT_EQ(format_quantity(0, dim::bandwidth), "0 B/s");
  EXPECT_EQ(format_quantity(80.0 * 1073741824.0, dim::bytes), "85.89934592 GB");
}

TEST(Units, FormatApproxRoundsToSignificantDigits) {
  // For prose: the working set 1,082,354,827,264 B is 1.08 TB at 3 digits; 4 digits of
  // 167,756,601,088 B are 167.8 GB; 80 GiB = 85,899,345,920 B is 85.9 GB.
  EXPECT_EQ(format_quantity_approx(1082354827264.0, dim::bytes), "1.08 TB");
  EXPECT_EQ(format_quantity_approx(167756601088.0, dim::bytes, 4), "167.8 GB");
  EXPECT_EQ(format_quantity_approx(80.0 * 1073741824.0, dim::bytes), "85.9 GB");
  // Rounding that carries into the next prefix takes it: 999.96 GB → 1.00e12 B.
  EXPECT_EQ(format_quantity_approx(999.96e9, dim::bytes), "1 TB");
  EXPECT_EQ(format_quantity_approx(3.3649e-6, dim::time), "3.36 us");
  EXPECT_EQ(format_quantity_approx(-2.5e9, dim::bandwidth, 2), "-2.5 GB/s");
  EXPECT_EQ(format_quantity_approx(1234.5, dim::none), "1230");
  EXPECT_EQ(format_quantity_approx(0, dim::bytes), "0 B");
}

TEST(Units, FormatRoundTripsExactly) {
  const Dimension dims[] = {dim::bytes, dim::bandwidth,       dim::flop_rate,     dim::time,
                            dim::power, dim::energy_per_byte, dim::transfer_rate, dim::none};
  const double values[] = {1,
                           3.35e12,
                           989.4e12,
                           1.0 / 3,
                           2.0 / 3 * 1e-7,
                           85899345920.0,
                           63015384615.384613,
                           123456789.123456789,
                           7e-13,
                           1e20,
                           0.1};
  for (const Dimension& d : dims) {
    for (double v : values) {
      std::string s = format_quantity(v, d);
      EXPECT_EQ(parse_quantity(s).value, v) << s;
      EXPECT_TRUE(parse_quantity(s).dim == d) << s;
    }
  }
}

TEST(Units, DimensionNames) {
  EXPECT_EQ(dimension_name(dim::bandwidth), "bandwidth");
  EXPECT_EQ(dimension_name(dim::bytes), "data size");
  EXPECT_EQ(dimension_name(dim::flop_rate), "compute rate");
  EXPECT_EQ(canonical_unit(dim::energy_per_byte), "J/bit");
  EXPECT_TRUE(dim::bandwidth == dim::bytes / dim::time);
  EXPECT_TRUE(dim::power == dim::energy / dim::time);
}

}  // namespace
}  // namespace units_test
}  // namespace kappasim
