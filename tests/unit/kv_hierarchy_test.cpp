// The KV tier hierarchy (serving/kv_hierarchy, issue 14): lookups across levels, LRU per level,
// write-through / write-back, demotion, promotion, and the tiers block's bad inputs. Every
// expectation below is worked by hand in the comments (chunk = 1 token x 1000 B = 1000 B).
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "serving/kv_hierarchy.hpp"
#include "serving/run_spec.hpp"

namespace kappasim {
namespace kv_hierarchy_test {
namespace {

constexpr double kChunk = 1000;  // bytes of one chunk (1 token x 1000 B/token)

struct Three {
  KvTier dram{1, 2 * kChunk, kChunk};  // 2 chunks
  KvHierarchy h;
  Three(TierWritePolicy w, bool promote)
      : h(dram, {{TierLevel::Cxl, 3 * kChunk}, {TierLevel::Nvme, 4 * kChunk}}, kChunk, w, promote) {
  }
};

TEST(KvHierarchy, CapacityOfTheWholeHierarchyForTheWorkingSetWarning) {
  // Issue 26 item 16: 192 GB of DRAM over 2 TB of CXL and 30.72 TB of NVMe. Write-through holds
  // every chunk in every level: the largest, 30.72 TB, bounds the distinct chunks. Write-back
  // holds each in one level: 0.192 + 2 + 30.72 = 32.912 TB. Without lower tiers: DRAM alone.
  TiersSpec t;
  EXPECT_DOUBLE_EQ(hierarchy_capacity_bytes(t, 192e9), 192e9);
  t.cxl_capacity_bytes = 2e12;
  t.nvme_capacity_bytes = 30.72e12;
  EXPECT_DOUBLE_EQ(hierarchy_capacity_bytes(t, 192e9), 30.72e12);
  t.write = TierWritePolicy::WriteBack;
  EXPECT_DOUBLE_EQ(hierarchy_capacity_bytes(t, 192e9), 192e9 + 2e12 + 30.72e12);
}

TEST(KvHierarchy, DramAloneIsTheHostTiersLookup) {
  KvTier a(1, 3 * kChunk, kChunk), b(1, 3 * kChunk, kChunk);
  KvHierarchy h(a, {}, kChunk, TierWritePolicy::WriteThrough, true);
  h.store({1, 2, 3});
  b.insert({1, 2, 3});
  // Same sequence through the hierarchy and the bare tier: same hits, same LRU, same stats.
  EXPECT_EQ(h.lookup({1, 2, 9, 3}), (std::vector<int>{0, 0}));
  EXPECT_EQ(b.lookup({1, 2, 9, 3}), 2u);
  h.store({4});  // evicts 3 (LRU: 3 was not touched by the lookup)
  b.insert({4});
  EXPECT_EQ(a.contains(3), b.contains(3));
  EXPECT_FALSE(a.contains(3));
  EXPECT_EQ(a.hit_chunks(), b.hit_chunks());
  EXPECT_EQ(a.miss_chunks(), b.miss_chunks());
  EXPECT_EQ(a.lookups(), b.lookups());
}

TEST(KvHierarchy, WriteThroughPutsEveryChunkInEveryLevelAndEvictionsAreDropped) {
  Three t(TierWritePolicy::WriteThrough, false);
  const TierMoves m = t.h.store({1, 2, 3, 4});
  // DRAM holds 2 (keeps 3, 4), CXL 3 (keeps 2, 3, 4), NVMe 4 (all): placed 4 in each level.
  EXPECT_EQ(m.placed, (std::vector<std::size_t>{4, 4, 4}));
  EXPECT_EQ(m.demoted, (std::vector<std::size_t>{0, 0, 0}));
  EXPECT_EQ(t.h.tier(0).size(), 2u);
  EXPECT_EQ(t.h.tier(1).size(), 3u);
  EXPECT_EQ(t.h.tier(2).size(), 4u);
  // Lookup 1..4: 1 only in NVMe (level 2), 2 in CXL, 3 and 4 in DRAM.
  EXPECT_EQ(t.h.lookup({1, 2, 3, 4}), (std::vector<int>{2, 1, 0, 0}));
  EXPECT_EQ(t.h.stats(0).hit_chunks, 2u);
  EXPECT_EQ(t.h.stats(1).hit_chunks, 1u);
  EXPECT_EQ(t.h.stats(2).hit_chunks, 1u);
  EXPECT_EQ(t.h.stats(0).demoted_out, 0u);
}

TEST(KvHierarchy, WriteBackStoresToDramAndDemotesEvictionsDownTheChain) {
  Three t(TierWritePolicy::WriteBack, false);
  const TierMoves m = t.h.store({1, 2, 3, 4, 5, 6});
  // DRAM (2): 1,2 stored; 3 evicts 1 -> CXL; 4 evicts 2 -> CXL; 5 evicts 3 -> CXL (CXL: 1,2,3);
  // 6 evicts 4 -> CXL, which evicts 1 -> NVMe. End: DRAM {5,6}, CXL {2,3,4}, NVMe {1}.
  EXPECT_EQ(m.placed, (std::vector<std::size_t>{6, 0, 0}));
  EXPECT_EQ(m.demoted, (std::vector<std::size_t>{0, 4, 1}));
  EXPECT_EQ(t.h.stats(0).demoted_out, 4u);
  EXPECT_EQ(t.h.stats(1).demoted_in, 4u);
  EXPECT_EQ(t.h.stats(1).demoted_out, 1u);
  EXPECT_EQ(t.h.stats(2).demoted_in, 1u);
  EXPECT_EQ(t.h.peek({1, 2, 3, 4, 5, 6}), (std::vector<int>{2, 1, 1, 1, 0, 0}));
  EXPECT_EQ(t.h.tier(0).evicted_chunks(), 4u);
  EXPECT_EQ(t.h.tier(1).evicted_chunks(), 1u);
}

TEST(KvHierarchy, PrefixStopsAtTheFirstChunkFoundNowhere) {
  Three t(TierWritePolicy::WriteThrough, false);
  t.h.store({1, 2});
  t.h.store({4});
  // 1 and 2 in CXL and NVMe (DRAM: 2, 4), 3 nowhere: the prefix is 1, 2 even though 4 is held.
  EXPECT_EQ(t.h.lookup({1, 2, 3, 4}), (std::vector<int>{1, 0}));
}

TEST(KvHierarchy, PromotionCopiesLowerHitsIntoDramInclusively) {
  Three t(TierWritePolicy::WriteThrough, true);
  t.h.store({1, 2, 3});  // DRAM {2,3}, CXL {1,2,3}, NVMe {1,2,3}
  const std::vector<std::uint64_t> keys = {1, 2, 3};
  const std::vector<int> at = t.h.lookup(keys);
  ASSERT_EQ(at, (std::vector<int>{1, 0, 0}));
  // Promote the CXL hit: DRAM takes 1, evicting its LRU (2: the lookup touched 2 then 3).
  const TierMoves m = t.h.promote({1}, {1});
  EXPECT_EQ(m.placed, (std::vector<std::size_t>{1, 0, 0}));
  EXPECT_EQ(t.h.stats(1).promoted_out, 1u);
  EXPECT_EQ(t.h.stats(0).promoted_in, 1u);
  EXPECT_TRUE(t.h.tier(0).contains(1));
  EXPECT_TRUE(t.h.tier(1).contains(1));  // inclusive: the CXL copy stays
  EXPECT_FALSE(t.h.tier(0).contains(2));
  // Without promote_on_hit nothing moves.
  Three n(TierWritePolicy::WriteThrough, false);
  n.h.store({1, 2, 3});
  EXPECT_EQ(n.h.promote({1}, {1}).placed, (std::vector<std::size_t>{0, 0, 0}));
  EXPECT_FALSE(n.h.tier(0).contains(1));
}

TEST(KvHierarchy, WriteBackPromotionDemotesDramsVictimUnlessItIsAlreadyBelow) {
  Three t(TierWritePolicy::WriteBack, true);
  t.h.store({1, 2, 3});  // DRAM {2,3}, CXL {1}
  // Promote 1 from CXL: DRAM evicts 2 (LRU) -> CXL (not there: a demotion moving bytes).
  TierMoves m = t.h.promote({1}, {1});
  EXPECT_EQ(m.placed, (std::vector<std::size_t>{1, 0, 0}));
  EXPECT_EQ(m.demoted, (std::vector<std::size_t>{0, 1, 0}));
  // DRAM {3,1}, CXL {1,2}. Store 4: DRAM evicts 3 -> CXL (new). Store 5: DRAM evicts 1 -> CXL
  // already holds 1: touched only, nothing moves.
  m = t.h.store({4});
  EXPECT_EQ(m.demoted, (std::vector<std::size_t>{0, 1, 0}));
  m = t.h.store({5});
  EXPECT_EQ(m.demoted, (std::vector<std::size_t>{0, 0, 0}));
  EXPECT_EQ(t.h.peek({1, 2, 3, 4, 5}), (std::vector<int>{1, 1, 1, 0, 0}));
}

TEST(KvHierarchy, LruPerLevelFollowsTheLevelThatServedTheHit) {
  Three t(TierWritePolicy::WriteThrough, false);
  t.h.store({1, 2, 3});  // CXL {1,2,3} in that LRU order
  t.h.lookup({1});       // 1 served by CXL: touched there (CXL order 2,3,1)
  t.h.store({4});        // CXL evicts 2 (its LRU), not 1
  EXPECT_TRUE(t.h.tier(1).contains(1));
  EXPECT_FALSE(t.h.tier(1).contains(2));
}

// ---- the serving.tiers block's bad inputs (docs/bad-inputs.md) ----
SystemSpec system_with(int cxl_devices, double cxl_cap, int nvme_drives, double nvme_cap) {
  SystemSpec s;
  s.name = "test";
  s.cxl_devices = cxl_devices;
  s.cxl.capacity_bytes = cxl_cap;
  s.nvme_drives = nvme_drives;
  s.nvme.capacity_bytes = nvme_cap;
  return s;
}

std::string error_of(const TiersSpec& t, const SystemSpec& s) {
  try {
    t.validate_against(s, "serving.tiers");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KvHierarchy, TiersLargerThanTheirDevicesOrWithoutThemAreInputErrors) {
  TiersSpec t;
  t.cxl_capacity_bytes = 600e9;
  // 2 x 256 GB = 512 GB of CXL < 600 GB.
  EXPECT_NE(error_of(t, system_with(2, 256e9, 0, 0)).find("serving.tiers.cxl_capacity"),
            std::string::npos);
  EXPECT_EQ(error_of(t, system_with(3, 256e9, 0, 0)), "");  // 768 GB: fits
  EXPECT_NE(error_of(t, system_with(0, 0, 0, 0)).find("no CXL expander"), std::string::npos);
  TiersSpec n;
  n.nvme_capacity_bytes = 8e12;
  EXPECT_NE(error_of(n, system_with(0, 0, 2, 3.84e12)).find("serving.tiers.nvme_capacity"),
            std::string::npos);  // 7.68 TB < 8 TB
  EXPECT_NE(error_of(n, system_with(0, 0, 0, 0)).find("no NVMe drive"), std::string::npos);
  TiersSpec r;
  r.remote_capacity_bytes = 1e12;
  EXPECT_NE(error_of(r, system_with(0, 0, 0, 0)).find("serving.tiers.remote_capacity"),
            std::string::npos);
  SystemSpec nic = system_with(0, 0, 0, 0);
  nic.nic_Bps = 50e9;
  EXPECT_EQ(error_of(r, nic), "");
}

}  // namespace
}  // namespace kv_hierarchy_test
}  // namespace kappasim
