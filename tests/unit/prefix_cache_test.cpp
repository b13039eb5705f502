// vLLM's automatic prefix caching in HBM (serving.prefix_caching, issue 23): the paged pool's
// registered blocks, their reference counts and LRU reuse (serving/paged_kv), the split of a
// prefill around the prefix cache's hit (split_prefix_hit) and the scheduler's admission with it.
// Every expected value is worked out by hand in the comment above it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "serving/paged_kv.hpp"
#include "serving/scheduler.hpp"
#include "workloads/request.hpp"

namespace kappasim {
namespace prefix_cache_test {
namespace {

std::vector<std::uint64_t> keys(std::uint64_t base, int n) {
  std::vector<std::uint64_t> k;
  for (int i = 0; i < n; ++i) k.push_back(base * 100 + static_cast<std::uint64_t>(i));
  return k;
}

TEST(PrefixCache, SharedBlocksAreCountedOnceAndALastReleaseKeepsThemCachedAndFree) {
  PagedKv kv(10, 16);
  kv.enable_prefix_cache();
  const std::vector<std::uint64_t> a = keys(1, 4);
  // Sequence 1: 64 tokens = 4 blocks, nothing cached; once computed its 4 blocks are registered.
  EXPECT_EQ(kv.match(a, 4), 0);
  kv.allocate_shared(1, 64, a, 0);
  kv.register_blocks(1, a, 4);
  EXPECT_EQ(kv.used_blocks(), 4);
  EXPECT_EQ(kv.cached_blocks(), 4);
  // Sequence 2, the same 4 blocks' prefix, capped at 3 blocks (its prompt less one token): it
  // shares blocks 0-2 (held: no free block taken for them) and takes 4 − 3 = 1 new block.
  EXPECT_EQ(kv.match(a, 3), 3);
  EXPECT_EQ(kv.blocks_needed(64, a, 3), 1);
  kv.allocate_shared(2, 64, a, 3);
  EXPECT_EQ(kv.used_blocks(), 5);
  // Sequence 1 leaves: block 3 had no other holder and joins the free queue still registered;
  // blocks 0-2 stay held by sequence 2. Used: 3 shared + 1 of sequence 2's = 4; free 6.
  kv.release(1);
  EXPECT_EQ(kv.used_blocks(), 4);
  EXPECT_EQ(kv.free_blocks(), 6);
  EXPECT_EQ(kv.cached_blocks(), 4);
  EXPECT_EQ(kv.match(a, 4), 4);
  // The free queue: 5 never-registered blocks first, then block 3. Five new blocks take the
  // five; the sixth reuses block 3 and evicts its key.
  kv.allocate_shared(3, 5 * 16, {}, 0);
  EXPECT_EQ(kv.evicted_blocks(), 0);
  EXPECT_EQ(kv.match(a, 4), 4);
  kv.allocate_shared(4, 16, {}, 0);
  EXPECT_EQ(kv.evicted_blocks(), 1);
  EXPECT_EQ(kv.match(a, 4), 3);
  EXPECT_EQ(kv.free_blocks(), 0);
}

TEST(PrefixCache, AReleaseFreesTheTailFirstSoAPrefixsLeadingBlocksAreEvictedLast) {
  // 4 blocks; one sequence registers k0..k3 and leaves: the free queue holds k3, k2, k1, k0 in
  // that order (vLLM frees a request's blocks tail first). Two new blocks evict k3 and k2; the
  // prefix k0, k1 still matches.
  PagedKv kv(4, 16);
  kv.enable_prefix_cache();
  const std::vector<std::uint64_t> k = keys(2, 4);
  kv.allocate_shared(1, 64, k, 0);
  kv.register_blocks(1, k, 4);
  kv.release(1);
  EXPECT_EQ(kv.free_blocks(), 4);
  // A hit of all 4 takes 4 blocks from the free queue (they are free, not held).
  EXPECT_EQ(kv.blocks_needed(64, k, 4), 4);
  kv.allocate_shared(2, 32, {}, 0);
  EXPECT_EQ(kv.evicted_blocks(), 2);
  EXPECT_EQ(kv.match(k, 4), 2);
  kv.release(2);
  // Sequence 3 shares k0, k1 (now in the free queue: 2 blocks) and needs 1 more for its third.
  EXPECT_EQ(kv.blocks_needed(48, k, 2), 3);
}

TEST(PrefixCache, TheSameBlockComputedTwiceAtOnceIsRegisteredOnce) {
  // Two sequences with the same 2-block prefix admitted together (neither found it cached) both
  // compute it; the second's blocks stay unregistered (one block per key serves hits).
  PagedKv kv(8, 16);
  kv.enable_prefix_cache();
  const std::vector<std::uint64_t> k = keys(3, 2);
  kv.allocate_shared(1, 32, k, 0);
  kv.allocate_shared(2, 32, k, 0);
  kv.register_blocks(1, k, 2);
  kv.register_blocks(2, k, 2);
  EXPECT_EQ(kv.cached_blocks(), 2);
  EXPECT_EQ(kv.used_blocks(), 4);
  kv.release(1);
  kv.release(2);
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_EQ(kv.cached_blocks(), 2);
  EXPECT_EQ(kv.match(k, 2), 2);
}

// Issue 25, serving.kv_cache: hybrid with prefix caching (vLLM's mamba_cache_mode "align",
// MambaManager): a block of 16 tokens of 1 B per token (full layers) is 16 B; the linear
// layers' state of 48 B takes ceil(48 / 16) = 3 blocks. A request of n tokens holds
// ceil(n / 16) + 3 blocks.
HybridKv state_of_48_bytes() {
  HybridKv h;
  h.full_Bpt = 1;
  h.state_B = 48;
  return h;
}

TEST(PrefixCache, AHybridHitEndsWhereALinearStateIsCachedAndStatesAreEvictedLikeBlocks) {
  PagedKv kv(40, 16);
  kv.set_hybrid(state_of_48_bytes());
  kv.enable_prefix_cache();
  EXPECT_EQ(kv.state_blocks(), 3);
  const std::vector<std::uint64_t> a = keys(1, 6);  // a 100-token prompt: 6 whole blocks
  // Sequence 1: 100 tokens = 7 + 3 = 10 blocks. Its first step computes 40 tokens: blocks 0-1
  // registered and the state after floor(40 / 16) = 2 blocks (32 tokens) cached, in 3 blocks
  // taken from the free queue (they count as free: used stays 10).
  kv.allocate_shared(1, 100, a, 0);
  EXPECT_EQ(kv.used_blocks(), 10);
  kv.register_blocks(1, a, 40 / 16);
  EXPECT_TRUE(kv.state_cached(a[1]));
  EXPECT_EQ(kv.used_blocks(), 10);
  // Its second step ends the prompt: blocks 2-5 and the state after 6 blocks (96 tokens).
  kv.register_blocks(1, a, 100 / 16);
  EXPECT_EQ(kv.cached_states(), 2);
  EXPECT_EQ(kv.cached_blocks(), 6);
  kv.release(1);
  EXPECT_EQ(kv.used_blocks(), 0);
  // The same prompt hits floor(100 / 16) · 16 = 96 tokens (6 blocks, a state after block 5);
  // capped at 3 blocks it hits 2: the state after block 2 (block 3's is not cached).
  EXPECT_EQ(kv.match(a, 6), 6);
  EXPECT_EQ(kv.match(a, 5), 2);
  EXPECT_EQ(kv.match(a, 1), 0);
  // A prompt sharing a's first 5 blocks only: the full layers match 5 blocks, but the last
  // cached state within them is after block 2: a hit of 32 tokens.
  std::vector<std::uint64_t> b(a.begin(), a.begin() + 5);
  b.push_back(999);
  EXPECT_EQ(kv.match(b, 6), 2);
  // Taking the 6-block hit: 10 − 6 = 4 new blocks, the 6 cached ones and the state's 3 from the
  // free queue: 13.
  EXPECT_EQ(kv.free_among(a, 6), 9);
  EXPECT_EQ(kv.blocks_needed(100, a, 6), 13);
  // The free queue now: 24 never-used blocks, the state after 2 blocks, the state after 6, the
  // 4 unregistered blocks of sequence 1, then its blocks 5..0. 25 new blocks (a 352-token
  // request: 22 + 3) take the 24 and evict the older state (3 blocks, 2 left free).
  kv.allocate_shared(2, 352, {}, 0);
  EXPECT_EQ(kv.used_blocks(), 25);
  EXPECT_EQ(kv.evicted_blocks(), 3);
  EXPECT_FALSE(kv.state_cached(a[1]));
  EXPECT_EQ(kv.match(b, 6), 0);
  EXPECT_EQ(kv.match(a, 6), 6);
  // Sequence 3 takes the 6-block hit: 13 blocks, 38 used; the state it holds is not evictable.
  kv.allocate_shared(3, 100, a, 6);
  EXPECT_EQ(kv.used_blocks(), 38);
  EXPECT_EQ(kv.free_blocks(), 2);
  // A state needs 3 free blocks: with 2 free, a new one is not cached.
  const std::vector<std::uint64_t> c = keys(3, 2);
  kv.register_blocks(2, c, 2);
  EXPECT_FALSE(kv.state_cached(c[1]));
  // Its release gives back the 4 new blocks, the 6 shared ones and the state's 3: 25 used.
  kv.release(3);
  EXPECT_EQ(kv.used_blocks(), 25);
  EXPECT_EQ(kv.match(a, 6), 6);
}

TEST(PrefixCache, AHybridPoolWithoutLinearLayersHitsEveryRegisteredBlock) {
  // Sliding-window layers only (gpt-oss): no state; a hit is the full layers' match.
  PagedKv kv(40, 16);
  HybridKv h;
  h.full_Bpt = 1;
  h.sliding_Bpt = 1;
  h.window = 128;
  kv.set_hybrid(h);
  kv.enable_prefix_cache();
  EXPECT_EQ(kv.state_blocks(), 0);
  const std::vector<std::uint64_t> a = keys(1, 4);
  kv.allocate_shared(1, 64, a, 0);
  kv.register_blocks(1, a, 4);
  kv.release(1);
  EXPECT_EQ(kv.match(a, 3), 3);
  EXPECT_THROW(kv.set_hybrid(h), std::logic_error);  // set_hybrid comes first
}

TEST(PrefixCache, TheHitCoversRecomputedThenLoadedTokensAndTheRestIsComputed) {
  // A prefill of 1,100 tokens whose tier hit is [0, 1000): 300 recomputed, 700 loaded
  // ([300, 1000)), 100 new.
  // Hit 0: nothing changes: 300 recomputed + 100 new = 400 computed.
  PrefixSplit p = split_prefix_hit(1100, 700, 300, 0);
  EXPECT_EQ(p.recompute, 300);
  EXPECT_EQ(p.cached, 700);
  EXPECT_EQ(p.compute, 400);
  // Hit 160: 140 left to recompute, 700 loaded, 140 + 100 = 240 computed.
  p = split_prefix_hit(1100, 700, 300, 160);
  EXPECT_EQ(p.recompute, 140);
  EXPECT_EQ(p.cached, 700);
  EXPECT_EQ(p.compute, 240);
  // Hit 480: nothing recomputed, [480, 1000) = 520 loaded, 100 computed.
  p = split_prefix_hit(1100, 700, 300, 480);
  EXPECT_EQ(p.recompute, 0);
  EXPECT_EQ(p.cached, 520);
  EXPECT_EQ(p.compute, 100);
  // Hit 1,040: past the tier's hit: nothing loaded, 60 computed.
  p = split_prefix_hit(1100, 700, 300, 1040);
  EXPECT_EQ(p.cached, 0);
  EXPECT_EQ(p.compute, 60);
  EXPECT_EQ(p.hit + p.cached + p.compute, 1100);
  EXPECT_THROW(split_prefix_hit(1100, 700, 300, 1100), std::logic_error);
}

Request doc_request(std::uint64_t id, std::int64_t prefix, std::int64_t fresh) {
  Request r;
  r.id = id;
  r.sequence_id = 7;
  r.prefix_tokens = prefix;
  r.new_tokens = fresh;
  return r;
}

TEST(PrefixCacheScheduler, ALaterPromptOnTheSameDocumentSharesItsComputedBlocks) {
  // A: document 7's 320 tokens + 32 of its own = 352 tokens = 22 blocks, computed in one step;
  // the step registers its 22 full blocks, and A finishes (one output token) and leaves.
  PagedKv kv(100, 16);
  kv.enable_prefix_cache();
  Scheduler s(SchedulerConfig{});
  Sequence a = make_sequence(doc_request(1, 320, 32), 0);
  s.enqueue(&a, 0);
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.tokens, 352);
  s.complete(p, 1, kv);
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_EQ(kv.cached_blocks(), 22);
  // B: the same document, 32 tokens of its own. Its first 20 blocks are the document's (A's
  // blocks 20 and 21 were A's own): a hit of 320 tokens, 32 computed, nothing loaded although the
  // tier held 256 of them (the hit covers the tier's). It takes 2 new blocks and the 20 cached
  // ones from the free queue: 22 used.
  Sequence b = make_sequence(doc_request(2, 320, 32), 256);
  s.enqueue(&b, 1);
  p = s.plan(1, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(b.hbm_hit_tokens, 320);
  EXPECT_EQ(b.first_hbm_hit, 320);
  EXPECT_EQ(b.cached_tokens, 0);
  EXPECT_EQ(b.compute_tokens, 32);
  EXPECT_EQ(p.tokens, 32);
  EXPECT_EQ(p.load_tokens, 0);
  EXPECT_EQ(kv.used_blocks(), 22);
  s.complete(p, 2, kv);
  // C: the document alone plus one token (321): at most 320 = 20 blocks can hit (one token is
  // always computed, vLLM's max_cache_hit_length = prompt − 1): 1 computed.
  Sequence c = make_sequence(doc_request(3, 320, 1), 0);
  s.enqueue(&c, 2);
  p = s.plan(2, kv);
  EXPECT_EQ(c.hbm_hit_tokens, 320);
  EXPECT_EQ(p.tokens, 1);
}

TEST(PrefixCacheScheduler, WithoutPrefixCachingNothingIsShared) {
  PagedKv kv(100, 16);
  Scheduler s(SchedulerConfig{});
  Sequence a = make_sequence(doc_request(1, 320, 32), 0);
  s.enqueue(&a, 0);
  StepPlan p = s.plan(0, kv);
  s.complete(p, 1, kv);
  Sequence b = make_sequence(doc_request(2, 320, 32), 0);
  s.enqueue(&b, 1);
  p = s.plan(1, kv);
  EXPECT_EQ(b.hbm_hit_tokens, 0);
  EXPECT_EQ(p.tokens, 352);
}

// A chat turn's decode fills blocks that vLLM caches too (its block hashes grow as it
// generates), so the next turn, whose prompt repeats this prompt and its reply, hits them.
// Turn A: conversation 9, a 40-token prompt, 30 output tokens, 16-token blocks. Its prefill
// registers floor(40 / 16) = 2 blocks. Decode step g (g = 1..29 tokens generated before it)
// feeds token g, after which the KV covers 40 + g tokens: blocks fill at 48 (g = 8) and 64
// (g = 24); the 30th token is never fed, so the KV ends at 69 tokens and 4 blocks are cached.
// Turn B: the same conversation, prefix 40 + 30 = 70 tokens, 10 new: 80 tokens, at most
// floor(79 / 16) = 4 blocks can hit, and all 4 are cached: 64 tokens hit, 16 computed. Without
// the decode blocks the hit would stop at A's prompt: 2 blocks, 32 tokens.
TEST(PrefixCacheScheduler, TheNextChatTurnHitsTheBlocksTheLastTurnFilledWhileDecoding) {
  PagedKv kv(100, 16);
  kv.enable_prefix_cache();
  Scheduler s(SchedulerConfig{});
  Request ra;
  ra.id = 1;
  ra.sequence_id = 9;
  ra.extends_sequence = true;
  ra.new_tokens = 40;
  ra.output_tokens = 30;
  Sequence a = make_sequence(ra, 0);
  a.output_tokens = 30;
  s.enqueue(&a, 0);
  double t = 0;
  while (a.finish_s < 0) {
    s.complete(s.plan(t, kv), t + 1, kv);
    t += 1;
  }
  EXPECT_EQ(a.generated, 30);
  EXPECT_EQ(kv.cached_blocks(), 4);
  Request rb = ra;
  rb.id = 2;
  rb.prefix_tokens = 70;
  rb.new_tokens = 10;
  rb.output_tokens = 1;
  Sequence b = make_sequence(rb, 0);
  s.enqueue(&b, t);
  const StepPlan p = s.plan(t, kv);
  EXPECT_EQ(b.hbm_hit_tokens, 64);
  EXPECT_EQ(p.tokens, 16);
}

// A (document 7's 320 tokens + 32 of its own) prefilled at a token budget, then B (the same
// document, 32 of its own) planned, on the hybrid pool of the tests above (3 blocks a state).
struct SecondOnDocument {
  std::int64_t states_after_a = 0, used_after_a = 0, b_hit = 0, b_tokens = 0;
};
SecondOnDocument second_on_document(std::int64_t budget) {
  PagedKv kv(100, 16);
  kv.set_hybrid(state_of_48_bytes());
  kv.enable_prefix_cache();
  SchedulerConfig cfg;
  cfg.max_num_batched_tokens = budget;
  Scheduler s(cfg);
  Sequence a = make_sequence(doc_request(1, 320, 32), 0);
  s.enqueue(&a, 0);
  double t = 0;
  while (a.finish_s < 0) {
    s.complete(s.plan(t, kv), t + 1, kv);
    t += 1;
  }
  SecondOnDocument r;
  r.states_after_a = kv.cached_states();
  r.used_after_a = kv.used_blocks();
  Sequence b = make_sequence(doc_request(2, 320, 32), 0);
  s.enqueue(&b, t);
  r.b_tokens = s.plan(t, kv).tokens;
  r.b_hit = b.hbm_hit_tokens;
  return r;
}

TEST(PrefixCacheScheduler, AHybridPromptHitsADocumentOnlyWhereAStepEndedOnIt) {
  // In one step (budget 4,096) the only state cached is after 352 tokens (22 blocks), A's own:
  // B matches the document's 20 full blocks but no state within them: no hit, 352 computed.
  const SecondOnDocument one = second_on_document(4096);
  EXPECT_EQ(one.states_after_a, 1);
  EXPECT_EQ(one.b_hit, 0);
  EXPECT_EQ(one.b_tokens, 352);
  // With a budget of 320 A's first step ends on the document's last block: the state after 20
  // blocks is cached too, and B hits the document's 320 tokens, computing its own 32.
  const SecondOnDocument two = second_on_document(320);
  EXPECT_EQ(two.states_after_a, 2);
  EXPECT_EQ(two.used_after_a, 0);
  EXPECT_EQ(two.b_hit, 320);
  EXPECT_EQ(two.b_tokens, 32);
}

}  // namespace
}  // namespace prefix_cache_test
}  // namespace kappasim
