// core/sim_seconds (issue 24): simulated seconds without a call into libsystemc are
// sc_time::to_seconds()'s bits, for tick counts across the range a run reaches (up to
// kSimTimeLimitS at the default 1 ps resolution, and beyond).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "core/sim_seconds.hpp"
#include "core/sim_time_limit.hpp"

namespace kappasim {
namespace sim_seconds_test {
namespace {

TEST(SimSeconds, AreToSecondsBitForBit) {
  std::mt19937_64 rng(24);
  // Ticks of 1 ps up to 4x the time limit, and at most 2^62 (a uint64 tick count).
  const double top = std::min(4 * kSimTimeLimitS * 1e12, std::ldexp(1.0, 62));
  for (int i = 0; i < 200000; ++i) {
    // Log-uniform over 1 .. top ticks, and every small count.
    const std::uint64_t v =
        i < 1000 ? static_cast<std::uint64_t>(i)
                 : static_cast<std::uint64_t>(
                       std::exp2(std::uniform_real_distribution<double>(0, std::log2(top))(rng)));
    const sc_core::sc_time t = sc_core::sc_time::from_value(v);
    ASSERT_EQ(sim_seconds(t), t.to_seconds()) << v << " ticks";
  }
  // 1 s and 1 ps by hand at the default resolution (1 ps).
  EXPECT_EQ(sim_seconds(sc_core::sc_time(1, sc_core::SC_SEC)), 1.0);
  EXPECT_EQ(sim_seconds(sc_core::sc_time(1, sc_core::SC_PS)), 1e-12);
  EXPECT_EQ(sim_now_seconds(), 0.0);
}

}  // namespace
}  // namespace sim_seconds_test
}  // namespace kappasim
