// serving.kv_allocation (issue 23): when the scheduler allocates a prefill's KV blocks. `prompt`
// takes the whole prompt's at admission (vLLM v0's block manager, the κ paper's Eq. 10); `chunk`
// takes the cached tokens' and the first chunk's at admission and each later chunk's in its step
// (vLLM v1's allocate_slots). Every expected value is worked out by hand above it.
#include <gtest/gtest.h>

#include <cstdint>

#include "serving/paged_kv.hpp"
#include "serving/scheduler.hpp"

namespace kappasim {
namespace kv_allocation_test {
namespace {

Sequence seq(std::uint64_t id, std::int64_t cached, std::int64_t fresh) {
  Request r;
  r.id = id;
  r.prefix_tokens = cached;
  r.new_tokens = fresh;
  return make_sequence(r, cached);
}

SchedulerConfig config(KvAllocation a, std::int64_t budget) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.kv_allocation = a;
  return c;
}

TEST(KvAllocation, ByChunkASecondPrefillStartsWhereTheWholePromptWouldNotFit) {
  // Pool 20 blocks of 16. A and B: 200 new tokens each (13 blocks). Budget 256: A takes 200,
  // B gets the 56 left. Whole prompt: B needs 13 blocks, 7 are free: it waits. By chunk: B needs
  // ceil(56 / 16) = 4 blocks: admitted, 17 used.
  for (KvAllocation mode : {KvAllocation::Prompt, KvAllocation::Chunk}) {
    PagedKv kv(20, 16);
    Scheduler s(config(mode, 256));
    Sequence a = seq(1, 0, 200), b = seq(2, 0, 200);
    s.enqueue(&a, 0);
    s.enqueue(&b, 0);
    const StepPlan p = s.plan(0, kv);
    if (mode == KvAllocation::Prompt) {
      ASSERT_EQ(p.items.size(), 1u);
      EXPECT_EQ(kv.used_blocks(), 13);
    } else {
      ASSERT_EQ(p.items.size(), 2u);
      EXPECT_EQ(p.items[1].tokens, 56);
      EXPECT_EQ(kv.used_blocks(), 17);
    }
  }
}

TEST(KvAllocation, ByChunkTheCachedTokensComeFirstAndEachChunkGrowsTheBlocks) {
  // A: 320 cached (loaded in its first step) + 200 new, budget 128. Admission by chunk allocates
  // the cached 320 and the first 128 computed: 448 tokens = 28 blocks. The next step computes
  // 72 more: 520 tokens = 33 blocks (ceil(520 / 16) = 32.5 → 33).
  PagedKv kv(40, 16);
  Scheduler s(config(KvAllocation::Chunk, 128));
  Sequence a = seq(1, 320, 200);
  s.enqueue(&a, 0);
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.load_tokens, 320);
  EXPECT_EQ(kv.used_blocks(), 28);
  s.complete(p, 1, kv);
  p = s.plan(1, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.items[0].tokens, 72);
  EXPECT_EQ(kv.used_blocks(), 33);
}

TEST(KvAllocation, ByChunkARunningPrefillThatCannotGrowPreemptsTheLatestAdmitted) {
  // Pool 8 blocks of 16, budget 100. A: 60 new tokens and 2 output tokens; B: 120 new tokens.
  // Step 1: A prefills its 60 (4 blocks) and makes its first token; B gets the 40 left
  // (3 blocks): 7 used. Step 2: A decodes one token (61 tokens: still 4 blocks); B's next chunk
  // of 80 needs 120 tokens = 8 blocks, 5 more with 1 free: B preempts the most recently
  // admitted sequence, itself (vLLM v1: recompute), and goes back to the waiting queue with its
  // progress dropped. The step is A's decode alone; 4 blocks used.
  PagedKv kv(8, 16);
  Scheduler s(config(KvAllocation::Chunk, 100));
  Sequence a = seq(1, 0, 60), b = seq(2, 0, 120);
  a.output_tokens = 2;
  s.enqueue(&a, 0);
  s.enqueue(&b, 0);
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[1].tokens, 40);
  EXPECT_EQ(kv.used_blocks(), 7);
  s.complete(p, 1, kv);
  p = s.plan(1, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_TRUE(p.items[0].decode);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b.computed, 0);
  EXPECT_EQ(s.waiting(), 1u);
  EXPECT_EQ(kv.used_blocks(), 4);
}

TEST(KvAllocation, ABatchInFlightIsNotPlannedAgainUntilItCompletes) {
  // Two batches in flight at most (pipeline parallelism, vLLM's max_concurrent_batches). Budget
  // 100: A (300 new tokens) takes 100 in batch 1; batch 2 skips A (in flight) and admits B (50
  // new); a third plan is refused; once batch 1 completes, A's next 100 tokens are planned while
  // B's batch is still in flight.
  PagedKv kv(100, 16);
  SchedulerConfig c = config(KvAllocation::Chunk, 100);
  c.max_batches = 2;
  Scheduler s(c);
  Sequence a = seq(1, 0, 300), b = seq(2, 0, 50);
  s.enqueue(&a, 0);
  s.enqueue(&b, 0);
  const StepPlan p1 = s.plan(0, kv);
  ASSERT_EQ(p1.items.size(), 1u);
  EXPECT_EQ(p1.items[0].seq, &a);
  EXPECT_EQ(p1.tokens, 100);
  const StepPlan p2 = s.plan(0, kv);
  ASSERT_EQ(p2.items.size(), 1u);
  EXPECT_EQ(p2.items[0].seq, &b);
  EXPECT_EQ(p2.tokens, 50);
  EXPECT_THROW(s.plan(0, kv), std::logic_error);
  s.complete(p1, 1, kv);
  EXPECT_EQ(a.computed, 100);
  const StepPlan p3 = s.plan(1, kv);
  ASSERT_EQ(p3.items.size(), 1u);
  EXPECT_EQ(p3.items[0].seq, &a);
  EXPECT_EQ(p3.tokens, 100);
}

}  // namespace
}  // namespace kv_allocation_test
}  // namespace kappasim
