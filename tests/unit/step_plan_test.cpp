// serving/step_plan: what a step computes and loads, and its scheduler-side CPU, without
// SystemC. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "serving/kv_tier.hpp"
#include "serving/scheduler.hpp"
#include "serving/serving_spec.hpp"
#include "serving/step_plan.hpp"
#include "workloads/request.hpp"

namespace kappasim {
namespace step_plan_test {
namespace {

Sequence seq(std::uint64_t id, std::int64_t cached, std::int64_t compute,
             std::int64_t computed = 0) {
  Sequence s;
  s.req.id = id;
  s.req.sequence_id = 7;
  s.req.prefix_tokens = cached;
  s.req.new_tokens = compute;
  s.cached_tokens = cached;
  s.compute_tokens = compute;
  s.computed = computed;
  return s;
}

TEST(StepPlan, RecomputeSliceAttendsOverItselfNewTokensOverTheWholePrefix) {
  // A: 1,000 cached tokens, R = 300 recomputed, so 700 loaded and 300 + 600 = 900 computed.
  // Its first step of 500 tokens: 300 recomputed over context 0 (causal over themselves), then
  // 200 new tokens over 700 loaded + 300 recomputed = 1,000 (not the end of the prompt).
  Sequence a = seq(1, 700, 900);
  // B: nothing cached, 100 tokens, finishes this step: one slice over no context, with logits.
  Sequence b = seq(2, 0, 100);
  StepPlan plan;
  plan.items = {{&a, 500, true, false}, {&b, 100, true, true}};
  a.recompute_tokens = 300;
  const StepWork w = plan_step_work(plan);
  ASSERT_EQ(w.load.size(), 1u);  // B has nothing cached: no load
  EXPECT_EQ(w.load[0], &a);
  ASSERT_EQ(w.done.size(), 1u);
  EXPECT_EQ(w.done[0], &b);
  ASSERT_EQ(w.slices.size(), 3u);
  EXPECT_EQ(w.slices[0].T, 300);
  EXPECT_EQ(w.slices[0].K, 0);
  EXPECT_FALSE(w.slices[0].finishes);
  EXPECT_EQ(w.slices[1].T, 200);
  EXPECT_EQ(w.slices[1].K, 1000);
  EXPECT_FALSE(w.slices[1].finishes);
  EXPECT_EQ(w.slices[2].T, 100);
  EXPECT_EQ(w.slices[2].K, 0);
  EXPECT_TRUE(w.slices[2].finishes);

  // A's second step: 500 done (all 300 recomputed among them), the last 400 new tokens over
  // 700 + 500 = 1,200; not its first step, so no load.
  a.computed = 500;
  plan.items = {{&a, 400, false, true}};
  const StepWork w2 = plan_step_work(plan);
  EXPECT_TRUE(w2.load.empty());
  ASSERT_EQ(w2.slices.size(), 1u);
  EXPECT_EQ(w2.slices[0].T, 400);
  EXPECT_EQ(w2.slices[0].K, 1200);
  EXPECT_TRUE(w2.slices[0].finishes);
}

// A P/D decode engine's stores (DecodeStores; docs/disaggregation.md, "A decode node's KV tier").
// P: a pulled prompt finishing its one recomputed token (generated 0); D: a pulled request
// decoding. Without a decode tier neither is stored or offered; with one, the pulled prompt is
// stored when the tier connector stores it (`prompt`) and D's filled chunks are offered.
TEST(StepPlan, ADecodeTierStoresThePulledPromptAndOffersDecodeChunks) {
  Sequence p = seq(1, 1999, 1);
  Sequence d = seq(2, 1999, 1, 1);
  for (Sequence* s : {&p, &d}) s->async_kv = s->pd_handoff = s->kv_resident = true;
  d.generated = 3;
  d.output_tokens = 10;
  StepPlan plan;
  plan.items = {{&p, 1, false, true, false}, {&d, 1, false, false, true}};
  const StepWork none = plan_step_work(plan, DecodeStores{true, false, false});
  EXPECT_TRUE(none.done.empty());
  EXPECT_TRUE(none.decoded.empty());
  const StepWork both = plan_step_work(plan, DecodeStores{true, true, true});
  ASSERT_EQ(both.done.size(), 1u);
  EXPECT_EQ(both.done[0], &p);
  ASSERT_EQ(both.decoded.size(), 1u);
  EXPECT_EQ(both.decoded[0], &d);
  // LMCache's own P/D receiver: the prompt counted as saved, decode chunks offered.
  const StepWork own = plan_step_work(plan, DecodeStores{true, true, false});
  EXPECT_TRUE(own.done.empty());
  EXPECT_EQ(own.decoded.size(), 1u);
  // The slices are the same either way: one token each, D's over its prompt and 3 tokens less 1.
  ASSERT_EQ(both.slices.size(), 2u);
  EXPECT_EQ(both.slices[1].K, 2000 + 3 - 1);
}

// A P/D decode engine without its tier stores nothing, also once a preemption has made its
// requests prefill again in the steps (Scheduler::preempt_last clears pd_handoff and async_kv):
// P prefilling its whole 2,000-token prompt again (preempted before its first token), D
// decoding after prefilling its prompt and 3 tokens again. Neither is stored or offered there;
// the same items on any other engine are (P's prompt stored, D's filled chunks offered).
TEST(StepPlan, ADecodeEngineWithoutItsTierStoresNothingAfterAPreemption) {
  Sequence p = seq(1, 0, 2000, 1500);
  Sequence d = seq(2, 0, 2003, 2003);
  d.generated = 4;
  d.output_tokens = 10;
  StepPlan plan;
  plan.items = {{&p, 500, false, true, false}, {&d, 1, false, false, true}};
  const StepWork none = plan_step_work(plan, DecodeStores{true, false, false});
  EXPECT_TRUE(none.done.empty());
  EXPECT_TRUE(none.decoded.empty());
  const StepWork mixed = plan_step_work(plan);
  ASSERT_EQ(mixed.done.size(), 1u);
  EXPECT_EQ(mixed.done[0], &p);
  ASSERT_EQ(mixed.decoded.size(), 1u);
  EXPECT_EQ(mixed.decoded[0], &d);
}

// A tier hit loaded outside the steps (stack.load: async; vLLM's OffloadingConnector): the
// prompt's chunks are stored when its prefill ends, as any prompt's (the connector stores the
// blocks past those it loaded, from _next_stored_block_idx; the loaded ones are in the tier and
// KvStore::store counts none of them again).
TEST(StepPlan, APromptLoadedAsynchronouslyIsStoredWhenItsPrefillEnds) {
  Sequence a = seq(1, 1024, 976, 500);
  a.async_kv = a.kv_resident = true;
  StepPlan plan;
  plan.items = {{&a, 476, false, true, false}};
  const StepWork w = plan_step_work(plan);
  ASSERT_EQ(w.done.size(), 1u);
  EXPECT_EQ(w.done[0], &a);
  EXPECT_TRUE(w.load.empty());  // not its first step: its load ran before it
}

TEST(StepPlan, LoadSplitWithoutBufferCountsTouchedChunksAndBlocks) {
  // 700 cached tokens loaded after R = 300 recomputed: prompt tokens [300, 1000).
  // 256-token chunks touched: 300/256 = chunk 1 up to ceil(1000/256) = 4 → chunks 1, 2, 3 = 3.
  // 16-token blocks: ceil(1000/16) = 63 minus floor(300/16) = 18 → 45.
  Sequence a = seq(1, 700, 900);
  a.recompute_tokens = 300;
  const LoadSplit ls = split_loads({&a}, 256, 16, nullptr);
  EXPECT_EQ(ls.link_tokens, 700);
  EXPECT_EQ(ls.buffer_tokens, 0);
  EXPECT_EQ(ls.chunks, 3);
  EXPECT_EQ(ls.link_chunks, 3);
  EXPECT_EQ(ls.link_blocks16, 45);
  ASSERT_EQ(ls.seq_link_tokens.size(), 1u);
  EXPECT_EQ(ls.seq_link_tokens[0], 700);
}

TEST(StepPlan, LoadSplitTakesBufferedChunksFromTheBufferAndInsertsTheRest) {
  // Prompt 1,024 prefix + 100 new = 1,124 tokens: 4 full 256-token chunks with keys. R = 300,
  // 724 cached: loads [300, 1024). Chunk 1 [300, 512) = 212 tokens is in the buffer; chunks 2
  // [512, 768) and 3 [768, 1024) = 512 tokens go over the link, 16 blocks each = 32 blocks.
  Sequence a = seq(1, 724, 400);
  a.req.prefix_tokens = 1024;
  a.req.new_tokens = 100;
  const std::vector<std::uint64_t> keys = chunk_keys(a.req, 256);
  ASSERT_EQ(keys.size(), 4u);
  KvTier buffer(256, 10 * 256 * 1.0, 1.0);  // 10 chunks
  buffer.insert({keys[1]});
  a.recompute_tokens = 300;
  const LoadSplit ls = split_loads({&a}, 256, 16, &buffer);
  EXPECT_EQ(ls.buffer_tokens, 212);
  EXPECT_EQ(ls.link_tokens, 512);
  EXPECT_EQ(ls.chunks, 3);
  EXPECT_EQ(ls.link_chunks, 2);
  EXPECT_EQ(ls.link_blocks16, 32);
  EXPECT_EQ(ls.seq_buffer_tokens[0], 212);
  // The step's chunks are in the buffer afterwards (chunk 0 was recomputed, never loaded).
  EXPECT_TRUE(buffer.contains(keys[2]));
  EXPECT_TRUE(buffer.contains(keys[3]));
  EXPECT_FALSE(buffer.contains(keys[0]));
}

TEST(StepPlan, SchedulerCpuLooksUpFirstStepsAndTheWaitingHeadWhileBudgetIsLeft) {
  ServingSpec sv;
  sv.load_path = LoadPath::Kernel;
  sv.chunk_tokens = 256;
  sv.max_num_batched_tokens = 4096;
  sv.max_num_seqs = 8;
  sv.step_overhead_s = 1e-3;
  sv.stack.lookup_fixed_s = 10e-6;
  sv.stack.lookup_per_chunk_s = 1e-6;
  sv.stack.meta_per_token_s = 1e-9;
  sv.stack.lookup_repeats_while_waiting = true;
  // A (first step): prompt 1,124 tokens = 4 whole chunks: 10 + 4 × 1 = 14 µs. The head waiting:
  // prompt 612 = 2 chunks: 12 µs (budget 4,096 > 500 tokens and 1 running < 8 slots).
  // Metadata: 1,124 prompt tokens × 1 ns = 1.124 µs.
  Sequence a = seq(1, 1024, 100);
  Sequence head = seq(2, 512, 100);
  StepPlan plan;
  plan.items = {{&a, 500, true, false}};
  plan.tokens = 500;
  const SchedulerCpu c = scheduler_cpu(sv, plan, &head, 1, 80);
  EXPECT_DOUBLE_EQ(c.overhead_s, 1e-3);
  EXPECT_NEAR(c.lookup_s, 26e-6, 1e-15);
  EXPECT_NEAR(c.meta_s, 1.124e-6, 1e-18);
  // A full budget: the head is not reached.
  plan.tokens = 4096;
  EXPECT_NEAR(scheduler_cpu(sv, plan, &head, 1, 80).lookup_s, 14e-6, 1e-15);
}

}  // namespace
}  // namespace step_plan_test
}  // namespace kappasim
