// serving/: the CPU KV tier (LMCache-like chunks, LRU), the paged GPU KV pool and its capacity
// (vLLM memory profiling), the iteration-level scheduler and its policies, the serving spec.
// Expected values are worked out by hand in the comments next to them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/llm/architecture.hpp"
#include "serving/flat_u64_map.hpp"
#include "serving/kv_tier.hpp"
#include "serving/paged_kv.hpp"
#include "serving/request_state.hpp"
#include "serving/scheduler.hpp"
#include "serving/serving_spec.hpp"
#include "workloads/request.hpp"

namespace kappasim {
namespace serving_test {
namespace {

// ---- KvTier -------------------------------------------------------------------------------

TEST(KvTier, ChunkBytesAreChunkTokensTimesWholeModelBkv) {
  // Llama-3.1-70B BF16: B_kv = 327,680 B/token; 256-token chunk = 83,886,080 B.
  KvTier t(256, 1e12, 327680);
  EXPECT_DOUBLE_EQ(t.chunk_bytes(), 83886080.0);
  // floor(1e12 / 83,886,080) = floor(11920.93) = 11920 chunks.
  EXPECT_EQ(t.capacity_chunks(), 11920u);
}

TEST(KvTier, LookupStopsAtFirstMiss) {
  KvTier t(256, 10 * 256 * 1000.0, 1000);  // 10 chunks
  EXPECT_EQ(t.insert({1, 2, 3, 5}), 4u);
  // 1, 2, 3 present; 4 missing; 5 present but after the first miss: not counted.
  EXPECT_EQ(t.lookup({1, 2, 3, 4, 5}), 3u);
  EXPECT_EQ(t.lookups(), 1u);
  EXPECT_EQ(t.hit_chunks(), 3u);
  EXPECT_EQ(t.miss_chunks(), 2u);   // 4 and 5 (first-miss accounting)
  EXPECT_EQ(t.lookup({9, 1}), 0u);  // first key missing: nothing, even though 1 is present
  EXPECT_EQ(t.lookups(), 2u);
  EXPECT_EQ(t.hit_chunks(), 3u);
  EXPECT_EQ(t.miss_chunks(), 4u);
  EXPECT_EQ(t.lookup({}), 0u);
  EXPECT_TRUE(t.contains(5));
  EXPECT_FALSE(t.contains(4));
}

TEST(KvTier, EvictsLeastRecentlyUsed) {
  KvTier t(16, 3 * 16 * 100.0, 100);  // room for exactly 3 chunks
  ASSERT_EQ(t.capacity_chunks(), 3u);
  t.insert({1, 2, 3});           // LRU order: 1 2 3
  EXPECT_EQ(t.lookup({1}), 1u);  // 2 3 1
  EXPECT_EQ(t.insert({4}), 1u);  // evicts 2 -> 3 1 4
  EXPECT_FALSE(t.contains(2));
  EXPECT_TRUE(t.contains(1));
  EXPECT_TRUE(t.contains(3));
  EXPECT_TRUE(t.contains(4));
  EXPECT_EQ(t.evicted_chunks(), 1u);
  t.insert({1});                 // present: touched, not stored -> 3 4 1
  EXPECT_EQ(t.insert({5}), 1u);  // evicts 3 -> 4 1 5
  EXPECT_FALSE(t.contains(3));
  EXPECT_TRUE(t.contains(4));
  EXPECT_EQ(t.evicted_chunks(), 2u);
  EXPECT_EQ(t.size(), 3u);
}

TEST(KvTier, ARunFollowsTheListNotThePool) {
  // issue 24: a run of hits is followed by trying the pool's next node first. Chunks 1, 2, 3
  // take nodes 0, 1, 2; touching 2 leaves the list 1 3 2, so node 1 (chunk 2) is the pool's next
  // after chunk 1's node but not the list's: a lookup of {1, 2} is two runs, and leaves 3 1 2.
  KvTier t(16, 3 * 16 * 100.0, 100);  // room for exactly 3 chunks
  t.insert({1, 2, 3});                // 1 2 3
  EXPECT_EQ(t.lookup({2}), 1u);       // 1 3 2
  EXPECT_EQ(t.lookup({1, 2}), 2u);    // 3 1 2
  EXPECT_EQ(t.insert({4}), 1u);       // evicts 3 -> 1 2 4
  EXPECT_FALSE(t.contains(3));
  EXPECT_EQ(t.insert({1, 2, 5}), 1u);  // touches 1 2 (4 1 2), evicts 4 -> 1 2 5
  EXPECT_FALSE(t.contains(4));
  EXPECT_EQ(t.insert({6, 7}), 2u);  // evicts 1, then 2
  EXPECT_TRUE(t.contains(5));
  EXPECT_FALSE(t.contains(1));
  EXPECT_FALSE(t.contains(2));
  EXPECT_EQ(t.evicted_chunks(), 4u);
}

TEST(KvTier, CapacityInBytes) {
  // chunk = 256 × 1000 B = 256,000 B; capacity 2.5 chunks holds 2.
  KvTier t(256, 2.5 * 256000, 1000);
  EXPECT_EQ(t.capacity_chunks(), 2u);
  EXPECT_EQ(t.insert({1, 2, 3, 4, 5}), 5u);  // each stored, the older ones evicted
  EXPECT_EQ(t.size(), 2u);
  EXPECT_DOUBLE_EQ(t.used_bytes(), 2 * 256000.0);
  EXPECT_LE(t.used_bytes(), t.capacity_bytes());
  EXPECT_EQ(t.evicted_chunks(), 3u);
  EXPECT_TRUE(t.contains(4));
  EXPECT_TRUE(t.contains(5));
}

TEST(KvTier, ChunkLargerThanCapacityIsNeverStored) {
  KvTier t(256, 255000, 1000);  // one chunk is 256,000 B > capacity
  EXPECT_EQ(t.capacity_chunks(), 0u);
  EXPECT_EQ(t.insert({1, 2}), 0u);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.stored_chunks(), 0u);
  EXPECT_EQ(t.evicted_chunks(), 0u);
  EXPECT_EQ(t.lookup({1}), 0u);
}

TEST(KvTier, ReinsertIsNotDoubleCounted) {
  KvTier t(256, 10 * 256000.0, 1000);
  EXPECT_EQ(t.insert({1, 2}), 2u);
  EXPECT_EQ(t.insert({1, 2, 3}), 1u);  // only 3 is new
  EXPECT_EQ(t.stored_chunks(), 3u);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_DOUBLE_EQ(t.used_bytes(), 3 * 256000.0);
}

TEST(KvTier, RejectsBadArguments) {
  EXPECT_THROW(KvTier(0, 1e9, 1000), std::invalid_argument);
  EXPECT_THROW(KvTier(256, -1, 1000), std::invalid_argument);
  EXPECT_THROW(KvTier(256, 1e9, 0), std::invalid_argument);
}

TEST(KvTier, ForgetKeepsTheDistinctCountAndDropsMembershipOfTheEverPlacedSet) {
  // 2 chunks of 100 B fit a 200 B tier. Place 1, 2, 3: 1 is evicted; 3 distinct chunks.
  KvTier t(1, 200, 100);
  EXPECT_EQ(t.insert({1, 2, 3}), 3u);
  EXPECT_FALSE(t.contains(1));
  EXPECT_TRUE(t.ever_placed(1));
  EXPECT_EQ(t.distinct_chunks(), 3u);
  // Forgetting 1 (evicted) and 3 (present) keeps the count of distinct chunks at 3 ...
  t.forget({1, 3});
  EXPECT_EQ(t.distinct_chunks(), 3u);
  EXPECT_FALSE(t.ever_placed(1));
  EXPECT_FALSE(t.ever_placed(3));
  EXPECT_TRUE(t.contains(3));  // ... and does not touch what the tier holds
  EXPECT_TRUE(t.ever_placed(2));
  // A forgotten key placed again counts as new (the caller promises this never happens for
  // keys it forgets; here it shows what "forget" means): distinct 4, no restore.
  EXPECT_EQ(t.insert({1}), 1u);
  EXPECT_EQ(t.distinct_chunks(), 4u);
  EXPECT_EQ(t.restored_chunks(), 0u);
}

TEST(KvTier, ForgottenPresentKeyLeavesNoTraceOnceEvicted) {
  // One map holds the index and the "ever placed" set (issue 24). 2 chunks of 100 B in a 200 B
  // tier. Place 1, 2; forget 2 while it is present; place 3, 4: 1 then 2 are evicted.
  KvTier t(1, 200, 100);
  EXPECT_EQ(t.insert({1, 2}), 2u);
  t.forget({2});
  EXPECT_TRUE(t.contains(2));
  EXPECT_EQ(t.insert({3, 4}), 2u);
  EXPECT_FALSE(t.contains(1));
  EXPECT_FALSE(t.contains(2));
  EXPECT_TRUE(t.ever_placed(1));   // evicted, never forgotten
  EXPECT_FALSE(t.ever_placed(2));  // forgotten, then evicted
  EXPECT_EQ(t.distinct_chunks(), 4u);
  // 1 stored again is a restore (the tier held it before); 2 is a new chunk: distinct 5.
  // Storing 1 evicts 3, storing 2 evicts 4.
  EXPECT_EQ(t.insert({1}), 1u);
  EXPECT_EQ(t.restored_chunks(), 1u);
  EXPECT_EQ(t.distinct_chunks(), 4u);
  EXPECT_EQ(t.insert({2}), 1u);
  EXPECT_EQ(t.restored_chunks(), 1u);
  EXPECT_EQ(t.distinct_chunks(), 5u);
  EXPECT_TRUE(t.ever_placed(2));
  EXPECT_TRUE(t.ever_placed(3));  // evicted, still ever placed
  EXPECT_EQ(t.evicted_chunks(), 4u);
  // Forgetting 3 (evicted) and 9 (never placed) changes nothing the tier holds.
  t.forget({3, 9});
  EXPECT_FALSE(t.ever_placed(3));
  EXPECT_FALSE(t.ever_placed(9));
  EXPECT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.contains(1));
  EXPECT_TRUE(t.contains(2));
}

TEST(KvTier, MembershipAndEverPlacedFollowASetModelUnderForget) {
  // The merged map against plain references (issue 24): a recency list, the "ever placed" set
  // and the distinct count, over inserts, lookups and forgets of 40 keys in a 12-chunk tier.
  KvTier t(1, 12 * 10.0, 10.0);
  std::vector<std::uint64_t> ref;  // front: least recently used
  std::vector<bool> seen(40, false);
  std::uint64_t distinct = 0, restored = 0;
  std::uint64_t x = 4242;
  for (int step = 0; step < 8000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t k = (x >> 33) % 40, op = (x >> 20) % 5;
    auto it = std::find(ref.begin(), ref.end(), k);
    if (op == 0) {  // forget
      t.forget({k});
      seen[k] = false;
    } else if (op == 1) {  // lookup
      EXPECT_EQ(t.lookup({k}), it != ref.end() ? 1u : 0u);
      if (it != ref.end()) {
        ref.erase(it);
        ref.push_back(k);
      }
    } else {  // insert
      t.insert({k});
      if (it != ref.end()) {
        ref.erase(it);
      } else {
        if (ref.size() == 12) ref.erase(ref.begin());
        if (seen[k])
          ++restored;
        else
          ++distinct;
        seen[k] = true;
      }
      ref.push_back(k);
    }
    if (step % 97 != 0) continue;
    for (std::uint64_t q = 0; q < 40; ++q) {
      EXPECT_EQ(t.contains(q), std::find(ref.begin(), ref.end(), q) != ref.end()) << step;
      EXPECT_EQ(t.ever_placed(q), static_cast<bool>(seen[q])) << step;
    }
  }
  EXPECT_EQ(t.size(), ref.size());
  EXPECT_EQ(t.distinct_chunks(), distinct);
  EXPECT_EQ(t.restored_chunks(), restored);
  EXPECT_GT(restored, 0u);
  // The recency order, as the test below reads it: 12 new keys evict everything in order.
  std::vector<std::uint64_t> fresh, order;
  for (std::uint64_t q = 100; q < 112; ++q) fresh.push_back(q);
  t.insert(fresh, &order);
  EXPECT_EQ(order, ref);
}

TEST(KvTier, LruOrderOverManyChunksMatchesAListModel) {
  // The intrusive LRU against a plain reference: a std::vector in recency order (front = LRU),
  // for a stream of lookups and inserts over 64 keys in a 16-chunk tier. Every membership,
  // every eviction and every counter must agree.
  KvTier t(1, 16 * 10.0, 10.0);
  std::vector<std::uint64_t> ref;  // front: least recently used
  std::uint64_t evicted = 0, restored = 0;
  std::vector<bool> seen(64, false);
  std::uint64_t x = 12345;
  for (int step = 0; step < 5000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG: a fixed key stream
    const std::uint64_t k = (x >> 33) % 64;
    auto it = std::find(ref.begin(), ref.end(), k);
    if ((x >> 20) & 1) {  // lookup of one key
      const std::size_t hit = t.lookup({k});
      EXPECT_EQ(hit, it != ref.end() ? 1u : 0u);
      if (it != ref.end()) {
        ref.erase(it);
        ref.push_back(k);
      }
    } else {  // insert of one key
      t.insert({k});
      if (it != ref.end()) {
        ref.erase(it);
      } else {
        if (ref.size() == 16) {
          ref.erase(ref.begin());
          ++evicted;
        }
        if (seen[k]) ++restored;
        seen[k] = true;
      }
      ref.push_back(k);
    }
  }
  EXPECT_EQ(t.size(), ref.size());
  for (std::uint64_t k = 0; k < 64; ++k)
    EXPECT_EQ(t.contains(k), std::find(ref.begin(), ref.end(), k) != ref.end()) << k;
  EXPECT_EQ(t.evicted_chunks(), evicted);
  EXPECT_EQ(t.restored_chunks(), restored);
  EXPECT_GT(evicted, 0u);  // the stream does thrash the tier
  EXPECT_GT(restored, 0u);
}

TEST(KvTier, MultiKeyCallsTouchKeyByKeyAsAListModelSays) {
  // lookup() and insert() move a run of keys already adjacent in the LRU list with one splice
  // and follow it without hash probes (issue 24). The result must be that of touching the keys
  // one by one: checked against the plain reference of the test above, for calls of 1-12 keys
  // that are mostly runs of consecutive keys (a prefix looked up or stored again), sometimes
  // reversed, shuffled by a swap or holding a repeated key, over 48 keys in a 20-chunk tier.
  // The order of every eviction (insert's `evicted`) must agree, and so must the hits.
  KvTier t(1, 20 * 10.0, 10.0);
  std::vector<std::uint64_t> ref;  // front: least recently used
  std::uint64_t x = 777;
  const auto next = [&x]() {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x >> 33;
  };
  std::size_t multi_hits = 0;
  for (int step = 0; step < 6000; ++step) {
    const std::uint64_t start = next() % 48, n = 1 + next() % 12, shape = next() % 8;
    std::vector<std::uint64_t> keys;
    for (std::uint64_t i = 0; i < n; ++i) keys.push_back((start + i) % 48);
    if (shape == 0) std::reverse(keys.begin(), keys.end());
    if (shape == 1 && n > 2) std::swap(keys[1], keys[n - 1]);
    if (shape == 2 && n > 1) keys[n - 1] = keys[0];  // a repeated key
    const auto touch = [&ref](std::uint64_t k) {
      ref.erase(std::find(ref.begin(), ref.end(), k));
      ref.push_back(k);
    };
    if (next() % 2) {  // lookup: the leading present keys
      std::size_t hits = 0;
      for (std::uint64_t k : keys) {
        if (std::find(ref.begin(), ref.end(), k) == ref.end()) break;
        touch(k);
        ++hits;
      }
      EXPECT_EQ(t.lookup(keys), hits) << step;
      if (hits > 1) ++multi_hits;
    } else {  // insert: touch the present, store the absent, evicting the LRU first
      std::vector<std::uint64_t> evicted, ref_evicted;
      std::size_t stored = 0;
      for (std::uint64_t k : keys) {
        if (std::find(ref.begin(), ref.end(), k) != ref.end()) {
          touch(k);
          continue;
        }
        if (ref.size() == 20) {
          ref_evicted.push_back(ref.front());
          ref.erase(ref.begin());
        }
        ref.push_back(k);
        ++stored;
      }
      EXPECT_EQ(t.insert(keys, &evicted), stored) << step;
      EXPECT_EQ(evicted, ref_evicted) << step;
    }
  }
  EXPECT_EQ(t.size(), ref.size());
  // The whole recency order: evicting every chunk (20 new keys) gives it front to back.
  std::vector<std::uint64_t> fresh, order;
  for (std::uint64_t k = 1000; k < 1020; ++k) fresh.push_back(k);
  t.insert(fresh, &order);
  EXPECT_EQ(order, ref);
  EXPECT_GT(multi_hits, 500u);  // the stream does exercise runs of hits
}

// The map holds exactly what the reference does, for every key below `keys`.
void expect_map_holds(const FlatU64Map& m, const std::map<std::uint64_t, std::uint32_t>& ref,
                      std::uint64_t keys) {
  EXPECT_EQ(m.size(), ref.size());
  for (std::uint64_t k = 0; k < keys; ++k) {
    auto f = ref.find(k);
    EXPECT_EQ(m.find(k), f == ref.end() ? FlatU64Map::kNone : f->second) << k;
  }
}

TEST(FlatU64Map, InsertFindEraseAgreeWithAStdMapThroughGrowthAndBackwardShifts) {
  FlatU64Map m;
  std::map<std::uint64_t, std::uint32_t> ref;
  std::uint64_t x = 99;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    // Keys in a small range (many collisions of home slots), 0 and the top value included.
    const std::uint64_t k =
        (x >> 40) % 3000 == 0 ? 0 : ((x >> 40) % 2999 == 0 ? ~0ULL : (x >> 40) % 3000);
    if ((x >> 13) % 3 == 0) {
      EXPECT_EQ(m.erase(k), ref.erase(k) == 1);
    } else {
      EXPECT_EQ(m.insert(k, i), ref.emplace(k, i).second);
    }
  }
  expect_map_holds(m, ref, 3000);
}

TEST(FlatU64Map, EmplaceAndFindValueAgreeWithAStdMap) {
  // emplace: find, else insert (the stored value is returned either way, changeable in place);
  // find_value: the value in place, nullptr when absent.
  FlatU64Map m;
  std::map<std::uint64_t, std::uint32_t> ref;
  std::uint64_t x = 7;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t k = (x >> 40) % 2000;
    const std::uint64_t op = (x >> 13) % 4;
    if (op == 0) {
      EXPECT_EQ(m.erase(k), ref.erase(k) == 1);
    } else if (op == 1) {
      const auto [v, inserted] = m.emplace(k, i);
      const auto [r, ref_inserted] = ref.emplace(k, i);
      EXPECT_EQ(inserted, ref_inserted);
      EXPECT_EQ(*v, r->second);
      *v += 1;  // changed in place
      r->second += 1;
    } else {
      std::uint32_t* v = m.find_value(k);
      auto f = ref.find(k);
      ASSERT_EQ(v == nullptr, f == ref.end()) << k;
      if (v) {
        EXPECT_EQ(*v, f->second);
      }
    }
  }
  expect_map_holds(m, ref, 2000);
}

TEST(FlatU64Map, EraseValueIsEraseOfItsKey) {
  // erase_value(find_value(k)) removes k as erase(k) does, backward shifts included (keys in a
  // small range: long probe runs).
  FlatU64Map m;
  std::map<std::uint64_t, std::uint32_t> ref;
  std::uint64_t x = 11;
  for (std::uint32_t i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::uint64_t k = (x >> 40) % 1500;
    if ((x >> 13) % 2 == 0) {
      if (std::uint32_t* v = m.find_value(k)) m.erase_value(v);
      ref.erase(k);
    } else {
      EXPECT_EQ(m.insert(k, i), ref.emplace(k, i).second);
    }
  }
  expect_map_holds(m, ref, 1500);
}

TEST(OwnChunkKeys, OwnChunkStartFindsThemInThePromptKeys) {
  // KvStore::finished takes a request's own keys from its prompt keys (issue 24): the tail
  // from own_chunk_start must be own_chunk_keys(r, C, tokens) whenever [prompt, tokens) holds
  // no full chunk. The worked case above: 600-token prefix, 1100-token prompt, 256-token
  // chunks: own from chunk 2.
  Request q;
  q.id = 6;
  q.sequence_id = 7;
  q.prefix_tokens = 600;
  q.new_tokens = 500;
  EXPECT_EQ(own_chunk_start(q, 256, static_cast<std::int64_t>(chunk_keys(q, 256).size())), 2);
  // Every shape: no sequence, a prefix (whole chunks or not, the whole prompt), a chat turn,
  // a prompt shorter than a chunk, a trace chain whole or ending early, one generated token.
  std::vector<Request> rs;
  for (std::int64_t prefix : {0, 100, 512, 600, 1100})
    for (bool extends : {false, true})
      for (std::uint64_t seq : {0, 7}) {
        Request r;
        r.id = 40 + rs.size();
        r.sequence_id = seq;
        r.prefix_tokens = seq == 0 ? 0 : prefix;
        r.new_tokens = 1100 - r.prefix_tokens + (prefix == 100 ? -999 : 0);
        r.extends_sequence = seq != 0 && extends;
        rs.push_back(r);
      }
  for (std::size_t hashes : {1, 2, 3}) {  // 512-token blocks; a 1100-token prompt needs 3
    Request r;
    r.id = 90 + hashes;
    r.new_tokens = 1100;
    r.block_tokens = 512;
    for (std::size_t b = 0; b < hashes; ++b) r.block_hashes.push_back(b + 1);
    rs.push_back(r);
  }
  for (const Request& r : rs)
    for (int chunk : {16, 256})
      for (std::int64_t extra : {0, 1}) {
        const std::int64_t tokens = r.prompt_tokens() + extra;
        if (tokens / chunk != r.prompt_tokens() / chunk) continue;  // a generated chunk
        const std::vector<std::uint64_t> keys = chunk_keys(r, chunk);
        EXPECT_EQ(std::vector<std::uint64_t>(
                      keys.begin() + static_cast<std::ptrdiff_t>(own_chunk_start(
                                         r, chunk, static_cast<std::int64_t>(keys.size()))),
                      keys.end()),
                  own_chunk_keys(r, chunk, tokens))
            << "request " << r.id << " chunk " << chunk << " +" << extra;
      }
}

TEST(OwnChunkKeys, AreTheChunksNoOtherRequestNames) {
  // 256-token chunks. A request without a sequence owns all its full chunks (1000 / 256 = 3).
  Request a;
  a.id = 5;
  a.new_tokens = 1000;
  EXPECT_EQ(own_chunk_keys(a, 256), chunk_keys(a, 256));
  // A question on document 7 with a 600-token prefix: chunks 0 and 1 (600 / 256 = 2) are the
  // document's, shared; chunk 2 and 3 ((600 + 500) / 256 = 4 full chunks) are its own.
  Request q;
  q.id = 6;
  q.sequence_id = 7;
  q.prefix_tokens = 600;
  q.new_tokens = 500;
  const auto all = chunk_keys(q, 256);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(own_chunk_keys(q, 256), std::vector<std::uint64_t>(all.begin() + 2, all.end()));
  // A chat turn extends its conversation: every chunk is the conversation's.
  q.extends_sequence = true;
  EXPECT_TRUE(own_chunk_keys(q, 256).empty());
}

TEST(ChunkKeys, GeneratedTokensExtendAChatTurnIntoItsNextTurnsPrefixAndAreOwnOtherwise) {
  // 16-token chunks. A chat turn on conversation 9: 150 prompt tokens (9 full chunks) and 50
  // generated ones: its first 200 tokens hold 12 full chunks, the first 9 its prompt's.
  Request turn;
  turn.id = 1;
  turn.sequence_id = 9;
  turn.extends_sequence = true;
  turn.prefix_tokens = 100;
  turn.new_tokens = 50;
  const auto prompt = chunk_keys(turn, 16);
  const auto through = chunk_keys(turn, 16, 200);
  ASSERT_EQ(prompt.size(), 9u);
  ASSERT_EQ(through.size(), 12u);
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), through.begin()));
  // The next turn's prompt repeats this prompt and its reply (200 tokens), then 30 new ones:
  // its first 12 chunks are the 12 above.
  Request next = turn;
  next.id = 2;
  next.prefix_tokens = 200;
  next.new_tokens = 30;
  const auto next_keys = chunk_keys(next, 16);
  EXPECT_TRUE(std::equal(through.begin(), through.end(), next_keys.begin()));
  // Chunk 9 ([144, 160)) holds generated tokens, chunk 8 ([128, 144)) does not.
  EXPECT_EQ(generated_chunk_key(turn, 16, 9), through[9]);
  EXPECT_EQ(generated_chunk_key(turn, 16, 11), through[11]);
  EXPECT_THROW(generated_chunk_key(turn, 16, 8), std::logic_error);
  EXPECT_TRUE(own_chunk_keys(turn, 16, 200).empty());
  // A question on document 7 (prefix 100 = 6 full chunks): what it generates is its own, as its
  // question is: chunks 6 to 11 of its first 200 tokens.
  Request q = turn;
  q.sequence_id = 7;
  q.extends_sequence = false;
  const auto qk = chunk_keys(q, 16, 200);
  EXPECT_EQ(own_chunk_keys(q, 16, 200), std::vector<std::uint64_t>(qk.begin() + 6, qk.end()));
  EXPECT_EQ(generated_chunk_key(q, 16, 10), qk[10]);
  // A trace request (explicit 64-token block hashes; chunks of 16): its prompt's chunks follow
  // the hash chain, its generated ones are its own (the trace names no generated tokens).
  Request tr;
  tr.id = 3;
  tr.new_tokens = 128;
  tr.block_tokens = 64;
  tr.block_hashes = {11, 12};
  const auto tk = chunk_keys(tr, 16, 160);
  ASSERT_EQ(tk.size(), 10u);
  const auto tprompt = chunk_keys(tr, 16);
  EXPECT_TRUE(std::equal(tprompt.begin(), tprompt.end(), tk.begin()));
  EXPECT_EQ(own_chunk_keys(tr, 16, 160), std::vector<std::uint64_t>(tk.begin() + 8, tk.end()));
  EXPECT_TRUE(own_chunk_keys(tr, 16).empty());
}

TEST(ChunkKeys, SequenceKeysAreTheSameWhateverWasAskedBefore) {
  // issue 24: a sequence's leading keys come from a small cache of recent sequences. Checked
  // against generated_chunk_key, which computes a chat turn's generated chunk (the sequence's
  // key) directly: a turn of 1 token on sequence S generates chunks 1, 2, ... of S. 300
  // sequences (more than the cache's slots), prefixes growing and shrinking, some longer than
  // the longest the cache keeps (2,048 keys), asked in an interleaved order.
  const auto key_of = [](std::uint64_t seq, std::int64_t i) {
    Request turn;
    turn.id = 1;
    turn.sequence_id = seq;
    turn.extends_sequence = true;
    turn.new_tokens = 1;
    return generated_chunk_key(turn, 1, i);
  };
  const std::int64_t lengths[] = {5, 40, 3, 2500, 41, 2048, 2049, 7};
  std::uint64_t id = 10;
  for (const std::int64_t len : lengths)
    for (std::uint64_t seq = 1; seq <= 300; seq += (len > 1000 ? 37 : 1)) {
      Request q;
      q.id = ++id;
      q.sequence_id = seq;
      q.prefix_tokens = len;
      q.new_tokens = 2;
      std::vector<std::uint64_t> keys;
      chunk_keys(q, 1, -1, keys);
      ASSERT_EQ(keys.size(), static_cast<std::size_t>(len + 2));
      for (std::int64_t i = 1; i < len; i += (len > 100 ? 97 : 1))
        ASSERT_EQ(keys[static_cast<std::size_t>(i)], key_of(seq, i))
            << seq << " " << len << " " << i;
      ASSERT_EQ(keys[static_cast<std::size_t>(len - 1)], key_of(seq, len - 1));
      // The question's own chunks: not the sequence's.
      EXPECT_EQ(keys[static_cast<std::size_t>(len)], own_key(q, len));
      EXPECT_EQ(chunk_keys(q, 1), keys);
    }
}

// ---- PagedKv ------------------------------------------------------------------------------

ModelSpec model_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}
GpuSpec gpu_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<GpuSpec>(ref, "gpu", "gpu");
}

TEST(PagedKv, EffectiveKvBytesLlama70bTp8H100) {
  // Llama-3.1-70B parameters (config.json): per layer q 8192² + k,v 2·8192·1024 + o 8192² +
  // MLP 3·8192·28672 + 2 norms 2·8192 = 855,654,400; × 80 = 68,452,352,000; embedding and LM
  // head 2·128256·8192 = 2,101,346,304; final norm 8192. Total 70,553,706,496 params.
  // BF16 weights 141,107,412,992 B; per GPU at TP 8: 17,638,426,624 B.
  // V_eff = 80e9 × 0.9 − 17,638,426,624 − 5e9 = 49,361,573,376 B.
  const ModelSpec m = model_preset("llama-3.1-70b");
  const GpuSpec g = gpu_preset("h100-sxm5");
  const double v = effective_kv_bytes_per_gpu(m, g, 8, DType::Bf16, 5e9, 0.9);
  EXPECT_NEAR(v, 49361573376.0, 1.0);
  // Per GPU KV per token at TP 8: 327,680 / 8 = 40,960 B; a 16-token block 655,360 B;
  // floor(49,361,573,376 / 655,360) = floor(75,319.78) = 75,319 blocks (1,205,104 tokens).
  const double kv_gpu = kv_bytes_per_token_per_gpu(m, DType::Bf16, 8);
  EXPECT_DOUBLE_EQ(kv_gpu, 40960.0);
  EXPECT_EQ(kv_blocks_for(v, 16, kv_gpu), 75319);
  PagedKv kv(kv_blocks_for(v, 16, kv_gpu), 16);
  EXPECT_EQ(kv.total_tokens(), 1205104);
}

TEST(PagedKv, ModelThatDoesNotFitNamesModelGpuTp) {
  // Llama-3.1-405B BF16 ≈ 812 GB of weights cannot fit one 80 GB H100.
  const ModelSpec m = model_preset("llama-3.1-405b");
  const GpuSpec g = gpu_preset("h100-sxm5");
  try {
    effective_kv_bytes_per_gpu(m, g, 1, DType::Bf16, 5e9, 0.9);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("llama-3.1-405b"), std::string::npos) << w;
    EXPECT_NE(w.find("h100-sxm5"), std::string::npos) << w;
    EXPECT_NE(w.find("tp 1"), std::string::npos) << w;
  }
}

TEST(PagedKv, BlocksForRoundsUp) {
  PagedKv kv(10, 16);
  EXPECT_EQ(kv.blocks_for(0), 0);
  EXPECT_EQ(kv.blocks_for(1), 1);
  EXPECT_EQ(kv.blocks_for(16), 1);
  EXPECT_EQ(kv.blocks_for(17), 2);
  EXPECT_EQ(kv.blocks_for(160), 10);
  EXPECT_TRUE(kv.can_allocate(160));
  EXPECT_FALSE(kv.can_allocate(161));
}

TEST(PagedKv, AllocateReleaseAndOverflow) {
  PagedKv kv(10, 16);
  kv.allocate(1, 100);  // 7 blocks
  EXPECT_EQ(kv.used_blocks(), 7);
  EXPECT_EQ(kv.free_blocks(), 3);
  EXPECT_DOUBLE_EQ(kv.utilization(), 0.7);
  EXPECT_THROW(kv.allocate(2, 49), std::logic_error);  // 4 blocks > 3 free
  EXPECT_EQ(kv.used_blocks(), 7);                      // unchanged by the failed attempt
  EXPECT_THROW(kv.allocate(1, 16), std::logic_error);  // already holds blocks
  kv.allocate(2, 48);                                  // exactly 3
  EXPECT_EQ(kv.free_blocks(), 0);
  kv.release(1);
  EXPECT_EQ(kv.used_blocks(), 3);
  EXPECT_FALSE(kv.holds(1));
  EXPECT_THROW(kv.release(1), std::logic_error);
  kv.release(2);
  EXPECT_EQ(kv.used_blocks(), 0);
}

// ---- Scheduler ----------------------------------------------------------------------------

Sequence seq(std::uint64_t id, std::int64_t cached, std::int64_t compute) {
  Request r;
  r.id = id;
  r.prefix_tokens = cached;
  r.new_tokens = compute;
  return make_sequence(r, cached);
}

TEST(Scheduler, MakeSequenceRecomputesAtLeastTheLastToken) {
  Request r;
  r.id = 1;
  r.prefix_tokens = 10000;
  r.new_tokens = 10;
  Sequence s = make_sequence(r, 10010);  // everything cached: vLLM still computes 1 token
  EXPECT_EQ(s.cached_tokens, 10009);
  EXPECT_EQ(s.compute_tokens, 1);
  Sequence t = make_sequence(r, 9984);
  EXPECT_EQ(t.cached_tokens, 9984);
  EXPECT_EQ(t.compute_tokens, 26);
}

// A (running, holds 750 of 1000 blocks) leaves 250 free; Big needs 500 blocks, Small 100.
struct HolScenario {
  Sequence a = seq(1, 10000, 2000);    // prompt 12,000 tokens = 750 blocks
  Sequence big = seq(2, 7000, 1000);   // prompt 8,000 = 500 blocks: does not fit
  Sequence small = seq(3, 1500, 100);  // prompt 1,600 = 100 blocks: fits
};

TEST(Scheduler, FifoHeadOfLineBlocksSmallBehindBig) {
  HolScenario h;
  PagedKv kv(1000, 16);
  SchedulerConfig cfg;
  cfg.policy = Policy::Fifo;
  Scheduler s(cfg);
  s.enqueue(&h.a, 0);
  s.enqueue(&h.big, 0);
  s.enqueue(&h.small, 0);
  StepPlan p = s.plan(0, kv);
  // A gets its 2,000 tokens; Big does not fit the 250 free blocks; FIFO stops there.
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].seq, &h.a);
  EXPECT_EQ(p.tokens, 2000);  // 2,096 of the 4,096 budget wasted
  EXPECT_EQ(p.load_tokens, 10000);
  EXPECT_EQ(kv.used_blocks(), 750);
  EXPECT_EQ(s.waiting(), 2u);
  EXPECT_EQ(h.small.first_scheduled_s, -1);
}

TEST(Scheduler, UtilizationAwareAdmitsSmallPastBig) {
  HolScenario h;
  PagedKv kv(1000, 16);
  SchedulerConfig cfg;
  cfg.policy = Policy::UtilizationAware;
  Scheduler s(cfg);
  s.enqueue(&h.a, 0);
  s.enqueue(&h.big, 0);
  s.enqueue(&h.small, 0);
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].seq, &h.a);
  EXPECT_EQ(p.items[1].seq, &h.small);
  EXPECT_EQ(p.items[1].tokens, 100);
  EXPECT_TRUE(p.items[1].first);
  EXPECT_TRUE(p.items[1].last);
  EXPECT_EQ(p.tokens, 2100);
  EXPECT_EQ(p.load_tokens, 10000 + 1500);
  EXPECT_EQ(kv.used_blocks(), 750 + 100);
  EXPECT_EQ(s.waiting(), 1u);
  EXPECT_EQ(h.big.credit, 1);  // passed over once
  s.complete(p, 1, kv);
  auto done = s.take_finished();
  ASSERT_EQ(done.size(), 2u);  // both finished their prefill this step
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_EQ(h.small.finish_s, 1);
}

TEST(Scheduler, TokenBudgetRespected) {
  std::vector<Sequence> seqs;
  for (std::uint64_t i = 0; i < 5; ++i) seqs.push_back(seq(i + 1, 0, 1000));
  PagedKv kv(100000, 16);
  Scheduler s(SchedulerConfig{});
  for (auto& q : seqs) s.enqueue(&q, 0);
  StepPlan p = s.plan(0, kv);
  // 1000 + 1000 + 1000 + 1000 + 96 = 4096: the fifth is chunked.
  ASSERT_EQ(p.items.size(), 5u);
  EXPECT_EQ(p.tokens, 4096);
  EXPECT_EQ(p.items[4].tokens, 96);
  EXPECT_TRUE(p.items[4].first);
  EXPECT_FALSE(p.items[4].last);
  s.complete(p, 1, kv);
  EXPECT_EQ(s.take_finished().size(), 4u);
  StepPlan q = s.plan(1, kv);
  ASSERT_EQ(q.items.size(), 1u);
  EXPECT_EQ(q.items[0].tokens, 904);
  EXPECT_FALSE(q.items[0].first);
  EXPECT_TRUE(q.items[0].last);

  // Without chunked prefill the fifth cannot be split: 4 × 1000 = 4000 tokens.
  std::vector<Sequence> again;
  for (std::uint64_t i = 0; i < 5; ++i) again.push_back(seq(i + 11, 0, 1000));
  SchedulerConfig nc;
  nc.chunked_prefill = false;
  Scheduler s2(nc);
  PagedKv kv2(100000, 16);
  for (auto& x : again) s2.enqueue(&x, 0);
  StepPlan r = s2.plan(0, kv2);
  EXPECT_EQ(r.items.size(), 4u);
  EXPECT_EQ(r.tokens, 4000);
  // A prompt longer than the budget can never run unchunked.
  Sequence huge = seq(99, 0, 5000);
  EXPECT_THROW(s2.enqueue(&huge, 0), InputError);
}

TEST(Scheduler, ChunkedPrefillSplitsLongPrompt) {
  Sequence a = seq(7, 2000, 10000);  // prompt 12,000 tokens = 750 blocks
  PagedKv kv(1000, 16);
  Scheduler s(SchedulerConfig{});
  s.enqueue(&a, 0);
  StepPlan p1 = s.plan(0.5, kv);
  ASSERT_EQ(p1.items.size(), 1u);
  EXPECT_EQ(p1.items[0].tokens, 4096);
  EXPECT_TRUE(p1.items[0].first);
  EXPECT_FALSE(p1.items[0].last);
  EXPECT_EQ(p1.load_tokens, 2000);
  EXPECT_EQ(kv.used_blocks(), 750);                 // the whole prompt (K + T) at admission
  EXPECT_THROW(s.plan(0.6, kv), std::logic_error);  // previous step not completed
  s.complete(p1, 1, kv);
  EXPECT_TRUE(s.take_finished().empty());
  StepPlan p2 = s.plan(1, kv);
  ASSERT_EQ(p2.items.size(), 1u);
  EXPECT_EQ(p2.items[0].tokens, 4096);
  EXPECT_FALSE(p2.items[0].first);
  EXPECT_FALSE(p2.items[0].last);
  EXPECT_EQ(p2.load_tokens, 0);
  s.complete(p2, 2, kv);
  StepPlan p3 = s.plan(2, kv);
  ASSERT_EQ(p3.items.size(), 1u);
  EXPECT_EQ(p3.items[0].tokens, 10000 - 4096 - 4096);  // 1,808
  EXPECT_FALSE(p3.items[0].first);
  EXPECT_TRUE(p3.items[0].last);
  s.complete(p3, 3, kv);
  auto done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], &a);
  EXPECT_EQ(a.computed, 10000);
  EXPECT_EQ(a.first_scheduled_s, 0.5);
  EXPECT_EQ(a.finish_s, 3);
  EXPECT_FALSE(a.kv_allocated);
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_TRUE(s.idle());
}

TEST(Scheduler, MaxNumSeqsRespected) {
  std::vector<Sequence> seqs;
  for (std::uint64_t i = 0; i < 3; ++i) seqs.push_back(seq(i + 1, 0, 10));
  PagedKv kv(1000, 16);
  SchedulerConfig cfg;
  cfg.max_num_seqs = 2;
  cfg.policy = Policy::UtilizationAware;
  Scheduler s(cfg);
  for (auto& q : seqs) s.enqueue(&q, 0);
  StepPlan p = s.plan(0, kv);
  EXPECT_EQ(p.items.size(), 2u);
  EXPECT_EQ(s.running(), 2u);
  EXPECT_EQ(s.waiting(), 1u);
}

TEST(Scheduler, PromptLargerThanPoolIsRejected) {
  Sequence big = seq(1, 20000, 100);  // 20,100 tokens > 1000 blocks × 16 = 16,000
  Sequence ok = seq(2, 0, 100);
  PagedKv kv(1000, 16);
  Scheduler s(SchedulerConfig{});  // FIFO: the rejected one must not block the queue
  s.enqueue(&big, 0);
  s.enqueue(&ok, 0);
  StepPlan p = s.plan(0.25, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].seq, &ok);
  auto done = s.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], &big);
  EXPECT_TRUE(big.rejected);
  EXPECT_EQ(big.finish_s, 0.25);
}

// Starvation scenario. Pool 1000 blocks; Big's prompt is 16,000 tokens = the whole pool. Small
// requests of 4,096 compute tokens (256 blocks) arrive one per step at t = k; each runs over two
// steps (2,048 + 2,048), so at every step start the previous small one still holds blocks and
// Big never fits. S0 (6,144 tokens) primes the pattern: 4,096 at step 0, 2,048 at step 1.
struct StarvationRun {
  std::vector<Sequence> smalls;
  Sequence big = seq(1000, 15000, 1000);
  explicit StarvationRun(int steps) {
    smalls.push_back(seq(1, 0, 6144));
    for (int k = 1; k <= steps; ++k)
      smalls.push_back(seq(static_cast<std::uint64_t>(k + 1), 0, 4096));
  }
  void run(Policy policy, int steps) {
    PagedKv kv(1000, 16);
    SchedulerConfig cfg;
    cfg.policy = policy;
    cfg.fairness_max_wait_s = 3;
    Scheduler s(cfg);
    s.enqueue(&smalls[0], 0);
    StepPlan p = s.plan(0, kv);
    s.enqueue(&big, 0.5);
    s.complete(p, 1, kv);
    for (int k = 1; k <= steps; ++k) {
      const double t = k;
      s.enqueue(&smalls[static_cast<std::size_t>(k)], t);
      p = s.plan(t, kv);
      s.complete(p, t + 1, kv);
      s.take_finished();
    }
  }
};

TEST(Scheduler, UtilizationAwareStarvesBigRequest) {
  StarvationRun r(20);
  r.run(Policy::UtilizationAware, 20);
  EXPECT_EQ(r.big.first_scheduled_s, -1);  // never admitted in 20 steps
  EXPECT_EQ(r.big.credit, 20);             // passed over at every step k = 1..20
  EXPECT_GE(r.smalls[19].finish_s, 0);     // while newer small ones were served
}

TEST(Scheduler, FairAdmitsLongWaitingRequestAfterBound) {
  StarvationRun r(20);
  r.run(Policy::Fair, 20);
  // Big arrived at 0.5 and is urgent from t = 4 (waited 3.5 >= 3): at step 4 only the running
  // S3 is served (hold), S3 finishes, and at step 5 the empty pool takes Big.
  EXPECT_EQ(r.big.first_scheduled_s, 5);
  EXPECT_EQ(r.big.finish_s, 6);
  EXPECT_LE(r.big.first_scheduled_s - r.big.enqueue_s, 3 + 1 + 0.5);  // bound + drain (1 step)
  EXPECT_EQ(r.smalls[4].first_scheduled_s, 6);                        // S4 was held back behind Big
  // The stream resumes: from step 6 on, step k serves S(k-2) whole (4,096 tokens, nothing
  // running ahead of it), so S18 runs at step 20 and finishes at 21. The two-step backlog is
  // the fairness cost.
  EXPECT_EQ(r.smalls[18].first_scheduled_s, 20);
  EXPECT_EQ(r.smalls[18].finish_s, 21);
  EXPECT_EQ(r.smalls[19].first_scheduled_s, -1);
}

TEST(Scheduler, JainIndex) {
  EXPECT_DOUBLE_EQ(jain_index({2, 2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index({1, 0, 0, 0}), 0.25);
  // (1 + 3)² / (2 · (1 + 9)) = 16 / 20 = 0.8
  EXPECT_DOUBLE_EQ(jain_index({1, 3}), 0.8);
  EXPECT_DOUBLE_EQ(jain_index({}), 1.0);
  EXPECT_THROW(jain_index({1, -1}), std::invalid_argument);
}

// ---- ServingSpec --------------------------------------------------------------------------

TEST(SchedulerServingSpec, ReadsUnitsAndChoices) {
  ConfigNode n = parse_yaml(
      "tp: 8\n"
      "policy: fair\n"
      "fairness_max_wait: 2 s\n"
      "tier_capacity: 1 TB\n"
      "step_overhead: 1 ms\n"
      "stack: vllm-native-0.12\n"
      "load_path: block_dma\n"
      "store: async\n"
      "granularity: step\n",
      "inline-serving");
  const ServingSpec s = read_config<ServingSpec>(n, "serving");
  EXPECT_EQ(s.tp, 8);
  EXPECT_EQ(s.policy, Policy::Fair);
  EXPECT_DOUBLE_EQ(s.fairness_max_wait_s, 2);
  EXPECT_DOUBLE_EQ(*s.tier_capacity_bytes, 1e12);
  EXPECT_DOUBLE_EQ(s.step_overhead_s, 1e-3);
  EXPECT_EQ(s.load_path, LoadPath::BlockDma);
  EXPECT_EQ(s.store, StoreMode::Async);
  EXPECT_EQ(s.granularity, Granularity::Step);
  EXPECT_EQ(s.tier_chunk_tokens(), 16);  // native connector: 16-token blocks
  // presets/stacks/vllm-native-0.12.yaml retrieve_fixed 0.1 ms.
  EXPECT_DOUBLE_EQ(s.retrieve_fixed_s(), 0.1e-3);
  // Defaults.
  EXPECT_EQ(s.max_num_batched_tokens, 4096);
  EXPECT_EQ(s.max_num_seqs, 256);
  EXPECT_EQ(s.chunk_tokens, 256);
  EXPECT_DOUBLE_EQ(s.gpu_memory_utilization, 0.9);
  const SchedulerConfig c = s.scheduler_config();
  EXPECT_EQ(c.policy, Policy::Fair);
  EXPECT_DOUBLE_EQ(c.fairness_max_wait_s, 2);
}

TEST(SchedulerServingSpec, RejectsBadInput) {
  ConfigNode unknown = parse_yaml("polcy: fifo\n", "inline-serving");
  EXPECT_THROW(read_config<ServingSpec>(unknown, "serving"), InputError);
  ConfigNode bad_choice = parse_yaml("policy: lifo\n", "inline-serving");
  EXPECT_THROW(read_config<ServingSpec>(bad_choice, "serving"), InputError);
  ConfigNode zero_util = parse_yaml("gpu_memory_utilization: 0\n", "inline-serving");
  EXPECT_THROW(read_config<ServingSpec>(zero_util, "serving"), InputError);
  ConfigNode tp0 = parse_yaml("tp: 0\n", "inline-serving");
  EXPECT_THROW(read_config<ServingSpec>(tp0, "serving"), InputError);
  ConfigNode dtype = parse_yaml("compute_dtype: bf17\n", "inline-serving");
  EXPECT_THROW(read_config<ServingSpec>(dtype, "serving"), InputError);
  ConfigNode budget = parse_yaml("max_num_batched_tokens: 0\n", "inline-serving");
  EXPECT_THROW(read_config<ServingSpec>(budget, "serving"), InputError);
}

TEST(SchedulerServingSpec, DumpRoundTrips) {
  ServingSpec s;
  s.policy = Policy::UtilizationAware;
  ConfigNode out = write_config(s, "serving");
  const ServingSpec back = read_config<ServingSpec>(out, "serving");
  EXPECT_EQ(back.policy, Policy::UtilizationAware);
  EXPECT_DOUBLE_EQ(back.activation_reserve_bytes, s.activation_reserve_bytes);
  EXPECT_DOUBLE_EQ(back.stack.retrieve_hash_per_chunk_s, s.stack.retrieve_hash_per_chunk_s);
}

}  // namespace
}  // namespace serving_test
}  // namespace kappasim
