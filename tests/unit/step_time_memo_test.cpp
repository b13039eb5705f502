// models/gpu/step_time_memo: the TP step model's bounded memo of batch step times (issue 24).
// Checked against a model kept by hand: a map from every batch stored to the value stored last
// for it. The memo may forget a batch (its slot taken by another), but whatever it answers must
// be that batch's last stored value, bit for bit; and the batch stored last is always found.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "models/gpu/step_time_memo.hpp"

namespace kappasim {
namespace step_time_memo_test {
namespace {

using Key = std::vector<std::tuple<double, double, bool>>;

Key key_of(const std::vector<SeqSlice>& b) {
  Key k;
  for (const SeqSlice& s : b) k.emplace_back(s.T, s.K, s.finishes);
  return k;
}

StepTime value(double v) {
  StepTime t;
  t.total.compute_time_s = v;
  t.total.flops = 2 * v;
  t.total.kernels = static_cast<int>(v);
  t.first_layer_s = v / 80;
  t.last_layer_s = v / 40;
  return t;
}

TEST(StepTimeMemo, FindsWhatWasStoredAndNothingElse) {
  StepTimeMemo memo(64);
  const std::vector<SeqSlice> a{{2048, 0, true}};
  const std::vector<SeqSlice> b{{2048, 0, false}};                // finishes differs
  const std::vector<SeqSlice> c{{2048, 0, true}, {16, 0, true}};  // one more slice
  EXPECT_EQ(memo.find(a), nullptr);
  memo.store(a, value(0.125));
  ASSERT_NE(memo.find(a), nullptr);
  EXPECT_EQ(memo.find(a)->total.compute_time_s, 0.125);
  EXPECT_EQ(memo.find(a)->total.flops, 0.25);
  EXPECT_EQ(memo.find(a)->total.kernels, 0);
  EXPECT_EQ(memo.find(a)->last_layer_s, 0.125 / 40);
  EXPECT_EQ(memo.find(b), nullptr);
  EXPECT_EQ(memo.find(c), nullptr);
  memo.store(a, value(3));  // replaced
  EXPECT_EQ(memo.find(a)->total.compute_time_s, 3);
  EXPECT_EQ(memo.entries(), 1u);
}

TEST(StepTimeMemo, ComparesBitForBit) {
  StepTimeMemo memo(1);  // one slot: every batch maps to it
  memo.store({{100, 0.0, true}}, value(1));
  EXPECT_EQ(memo.find({{100, -0.0, true}}), nullptr);  // -0.0 == 0.0, yet other bits
  EXPECT_NE(memo.find({{100, 0.0, true}}), nullptr);
  const double nan = std::nan("");
  memo.store({{nan, 0, true}}, value(2));  // replaces the one slot's batch
  EXPECT_EQ(memo.find({{100, 0.0, true}}), nullptr);
  ASSERT_NE(memo.find({{nan, 0, true}}), nullptr);  // the same NaN bits
  EXPECT_EQ(memo.find({{nan, 0, true}})->total.compute_time_s, 2);
  EXPECT_EQ(memo.entries(), 1u);
}

TEST(StepTimeMemo, AgreesWithAMapUnderCollisions) {
  // 13 slots for batches of 1 to 3 slices drawn from a few lengths: many collisions.
  StepTimeMemo memo(13);
  std::map<Key, double> model;
  std::uint64_t x = 88172645463325252ULL;  // xorshift64
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int hits = 0;
  std::vector<SeqSlice> last;
  for (int i = 0; i < 20000; ++i) {
    std::vector<SeqSlice> b;
    const int n = 1 + static_cast<int>(next() % 3);
    for (int s = 0; s < n; ++s)
      b.push_back({static_cast<double>(128 * (1 + next() % 6)),
                   static_cast<double>(16 * (next() % 3)), next() % 4 != 0});
    if (const StepTime* t = memo.find(b)) {
      const auto it = model.find(key_of(b));
      ASSERT_NE(it, model.end()) << "found a batch never stored, step " << i;
      EXPECT_EQ(t->total.compute_time_s, it->second) << "step " << i;
      EXPECT_EQ(t->first_layer_s, it->second / 80) << "step " << i;
      ++hits;
    } else {
      const double v = static_cast<double>(i);
      memo.store(b, value(v));
      model[key_of(b)] = v;
      last = b;
    }
    ASSERT_NE(memo.find(last), nullptr);
    EXPECT_EQ(memo.find(last)->total.compute_time_s, model[key_of(last)]);
  }
  EXPECT_GT(hits, 0);
  EXPECT_LE(memo.entries(), memo.slots());
  EXPECT_EQ(memo.slots(), 13u);
}

// The table starts at 512 slots and grows x4 when a new entry would fill more than an eighth of
// it, up to the slots asked for: 3,000 distinct batches take it 512 -> 2,048 -> 4,096 (no sooner
// than the 65th and 257th entries). What it finds is what was stored for that very batch, and the
// batch just stored is always found, across the growths too.
TEST(StepTimeMemo, GrowsToItsSlotsAndStillFindsOnlyWhatWasStored) {
  StepTimeMemo memo(4096);
  EXPECT_EQ(memo.slots(), 512u);
  std::map<Key, double> model;
  std::size_t slots = memo.slots();
  for (int i = 0; i < 3000; ++i) {
    const std::vector<SeqSlice> b{{static_cast<double>(1 + i), static_cast<double>(i % 7), true}};
    memo.store(b, value(i));
    model[key_of(b)] = i;
    ASSERT_NE(memo.find(b), nullptr) << i;
    EXPECT_EQ(memo.find(b)->total.compute_time_s, i);
    if (memo.slots() != slots) {
      EXPECT_EQ(memo.slots(), slots == 512 ? 2048u : 4096u) << i;
      EXPECT_GE(i + 1, slots == 512 ? 65 : 257);
      slots = memo.slots();
    }
  }
  EXPECT_EQ(memo.slots(), 4096u);
  EXPECT_LE(memo.entries(), memo.slots());
  int found = 0;
  for (const auto& [k, v] : model) {
    std::vector<SeqSlice> b{{std::get<0>(k.front()), std::get<1>(k.front()), true}};
    if (const StepTime* t = memo.find(b)) {
      EXPECT_EQ(t->total.compute_time_s, v);
      ++found;
    }
  }
  EXPECT_GT(found, 1000);  // most survive: 4,096 slots for 3,000 batches
}

}  // namespace
}  // namespace step_time_memo_test
}  // namespace kappasim
