// SharedMemo (core/shared_memo): answers one process inserts are found by another forked from
// the same parent after share(), bit for bit; concurrent inserts of the same keys by two
// processes leave every key findable with its value; and the MoE row-block model gives the bits
// it computes whether a sibling process computed them first or not.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "core/shared_memo.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "tests/unit/in_child.hpp"

namespace kappasim {
namespace shared_memo_test {
namespace {

SharedMemo::Key key(std::uint64_t i) { return SharedMemo::Key{{0x74657374ULL, i, i * 7, ~i}}; }
double value(std::uint64_t i) { return 1.0 / static_cast<double>(i + 3); }

using test_util::in_child;

TEST(SharedMemo, WhatAForkedChildInsertsTheParentFinds) {
  ASSERT_TRUE(SharedMemo::share(1 << 14));
  SharedMemo::clear();
  double v = 0;
  EXPECT_FALSE(SharedMemo::find(key(1), v));
  EXPECT_EQ(in_child([] {
              for (std::uint64_t i = 0; i < 1000; ++i) SharedMemo::insert(key(i), value(i));
              return 0;
            }),
            0);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(SharedMemo::find(key(i), v)) << i;
    EXPECT_EQ(v, value(i)) << i;  // the same bits
  }
  EXPECT_FALSE(SharedMemo::find(key(5000), v));
  EXPECT_EQ(SharedMemo::size(), 1000u);
  SharedMemo::insert(key(7), value(7));  // kept already: not a second slot
  EXPECT_EQ(SharedMemo::size(), 1000u);
}

TEST(SharedMemo, TwoProcessesInsertingTheSameKeysLeaveEachFindable) {
  ASSERT_TRUE(SharedMemo::share(1 << 14));
  SharedMemo::clear();
  const pid_t a = ::fork();
  if (a == 0) {
    for (std::uint64_t i = 0; i < 1500; ++i) SharedMemo::insert(key(i), value(i));
    ::_exit(0);
  }
  for (std::uint64_t i = 1500; i-- > 0;) SharedMemo::insert(key(i), value(i));
  int status = 0;
  ::waitpid(a, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  double v = 0;
  for (std::uint64_t i = 0; i < 1500; ++i) {
    ASSERT_TRUE(SharedMemo::find(key(i), v)) << i;
    EXPECT_EQ(v, value(i)) << i;
  }
  // A key both inserted at once may sit in two slots (the same value); no more than that.
  EXPECT_GE(SharedMemo::size(), 1500u);
  EXPECT_LE(SharedMemo::size(), 3000u);
}

TEST(SharedMemo, MoeRowBlocksAreTheSameBitsWhoeverComputedThemFirst) {
  ASSERT_TRUE(SharedMemo::share(1 << 14));
  SharedMemo::clear();
  // Token counts no other test asks for (each process keeps its own answers too).
  const double tokens = 3137, top_k = 8, experts = 128, block = 16;
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  EXPECT_EQ(in_child([&] {
              const double x = moe_row_blocks(tokens, top_k, experts, block);
              return ::write(pipefd[1], &x, sizeof x) == static_cast<ssize_t>(sizeof x) ? 0 : 1;
            }),
            0);
  double child = 0;
  ASSERT_EQ(::read(pipefd[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  const std::size_t kept = SharedMemo::size();
  EXPECT_GE(kept, 1u);  // the child's sum is in the table
  const double here = moe_row_blocks(tokens, top_k, experts, block);  // read from it
  EXPECT_EQ(here, child);
  EXPECT_EQ(SharedMemo::size(), kept);  // nothing computed again
  // And the value is the model's: E[ceil(n / 16)] per expert for n ~ Binomial(3137, 1/16),
  // mean 196.06: between ceil(mean / 16) - 1 and ceil(mean / 16) + 1 blocks per expert.
  EXPECT_GT(here / experts, 12.0);
  EXPECT_LT(here / experts, 14.0);
}

}  // namespace
}  // namespace shared_memo_test
}  // namespace kappasim
