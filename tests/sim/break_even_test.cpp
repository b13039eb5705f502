// The break-even prefix's crossing (serving/measure: break_even_crossing) on grids whose answer
// is worked out by hand: the smallest K from which the hit is no slower at every larger K,
// interpolated linearly on miss - hit with the point before it.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "serving/measure.hpp"

namespace kappasim {
namespace break_even_test {
namespace {

TEST(BreakEven, TheCrossingIsInterpolatedOnTheTtftDifference) {
  // miss - hit = -2, +1, +4: it turns between 100 and 200, where the line from -2 to +1 crosses
  // zero, 2/3 of the way: 100 + 100 × 2/3.
  const BreakEvenCrossing c = break_even_crossing({100, 200, 400}, {5, 5, 5}, {3, 6, 9});
  EXPECT_FALSE(c.from_start);
  EXPECT_FALSE(c.never);
  EXPECT_NEAR(c.k, 100 + 100 * 2.0 / 3, 1e-12);
}

TEST(BreakEven, AHitNoSlowerEverywhereIsABoundAtTheFirstPoint) {
  const BreakEvenCrossing c = break_even_crossing({16, 32, 64}, {1, 2, 3}, {1, 2.5, 4});
  EXPECT_TRUE(c.from_start);  // equal TTFTs at 16 count as no slower
  EXPECT_FALSE(c.never);
  EXPECT_EQ(c.k, 16);
}

TEST(BreakEven, AHitStillSlowerAtTheLastPointLiesAboveTheGrid) {
  const BreakEvenCrossing c = break_even_crossing({16, 32, 64}, {4, 4, 4}, {1, 2, 3.9});
  EXPECT_TRUE(c.never);
  EXPECT_FALSE(c.from_start);
  EXPECT_TRUE(std::isnan(c.k));
}

TEST(BreakEven, OnlyTheLastTurnCounts) {
  // miss - hit = +1, -1, +2, +3: the hit is faster at 100 but slower again at 200, so loading
  // pays from the turn between 200 and 400 on: 200 + 200 × 1/3.
  const BreakEvenCrossing c = break_even_crossing({100, 200, 400, 800}, {1, 3, 1, 1}, {2, 2, 3, 4});
  EXPECT_FALSE(c.from_start);
  EXPECT_NEAR(c.k, 200 + 200.0 / 3, 1e-12);
}

TEST(BreakEven, UnequalGridsAreRefused) {
  EXPECT_THROW(break_even_crossing({1, 2}, {1}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(break_even_crossing({}, {}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace break_even_test
}  // namespace kappasim
