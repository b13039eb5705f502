// Decode co-located with prefill (issue 23 part 1): the paged KV pool growing a decoding
// sequence, vLLM v1's scheduler giving running sequences their token (decode) or chunk (prefill)
// in admission order and preempting the most recently admitted one when the blocks run out,
// the step plan's decode slices, and the decode statistics (present only on decode runs). Every
// expected value is worked out by hand from the scenario in the comment above it.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "serving/metrics.hpp"
#include "serving/scheduler.hpp"
#include "serving/serving_spec.hpp"
#include "serving/step_plan.hpp"

namespace kappasim {
namespace decode_test {
namespace {

Sequence seq(std::uint64_t id, std::int64_t prompt, std::int64_t output) {
  Request r;
  r.id = id;
  r.new_tokens = prompt;
  Sequence s = make_sequence(r, 0);
  s.output_tokens = output;
  return s;
}

TEST(DecodeKv, GrowAddsBlocksOnlyPastABlockBoundaryAndFailsWithoutChange) {
  PagedKv kv(3, 16);
  kv.allocate(1, 16);  // one block
  EXPECT_TRUE(kv.grow(1, 16));
  EXPECT_EQ(kv.used_blocks(), 1);
  EXPECT_TRUE(kv.grow(1, 17));  // the 17th token needs a second block
  EXPECT_EQ(kv.used_blocks(), 2);
  kv.allocate(2, 16);            // the last block
  EXPECT_FALSE(kv.grow(1, 33));  // a third block for 1: none free
  EXPECT_EQ(kv.used_blocks(), 3);
  EXPECT_THROW(kv.grow(9, 1), std::logic_error);  // holds nothing
}

TEST(DecodeScheduler, PrefillGivesTheFirstTokenThenOneTokenAStepUntilTheOutputIsDone) {
  // Prompt 100, 3 output tokens: step 1 prefills all 100 (the first token at its end), steps 2
  // and 3 decode one token each; the sequence leaves after step 3 with its blocks released.
  Sequence a = seq(1, 100, 3);
  PagedKv kv(100, 16);
  Scheduler s(SchedulerConfig{});
  s.enqueue(&a, 0);
  StepPlan p = s.plan(0, kv);
  ASSERT_EQ(p.items.size(), 1u);
  EXPECT_EQ(p.tokens, 100);
  EXPECT_TRUE(p.items[0].last);
  EXPECT_FALSE(p.items[0].decode);
  s.complete(p, 1, kv);
  EXPECT_EQ(a.generated, 1);
  EXPECT_EQ(a.first_token_s, 1);
  EXPECT_TRUE(a.decoding());
  EXPECT_TRUE(s.take_finished().empty());
  for (int step = 2; step <= 3; ++step) {
    p = s.plan(step - 1, kv);
    ASSERT_EQ(p.items.size(), 1u);
    EXPECT_TRUE(p.items[0].decode);
    EXPECT_EQ(p.items[0].tokens, 1);
    EXPECT_EQ(p.tokens, 1);
    s.complete(p, step, kv);
  }
  EXPECT_EQ(a.generated, 3);
  EXPECT_EQ(a.first_token_s, 1);
  EXPECT_EQ(a.finish_s, 3);
  EXPECT_EQ(s.take_finished().size(), 1u);
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_TRUE(s.idle());
}

TEST(DecodeScheduler, ADecodeTokenCountsAgainstTheBudgetBeforeALaterPrefill) {
  // Budget 10. A (admitted first) decodes; B, admitted after, gets the 9 tokens left.
  Sequence a = seq(1, 5, 4), b = seq(2, 100, 1);
  PagedKv kv(100, 16);
  SchedulerConfig cfg;
  cfg.max_num_batched_tokens = 10;
  Scheduler s(cfg);
  s.enqueue(&a, 0);
  StepPlan p = s.plan(0, kv);
  s.complete(p, 1, kv);  // A prefilled: decoding
  s.enqueue(&b, 1);
  p = s.plan(1, kv);
  ASSERT_EQ(p.items.size(), 2u);
  EXPECT_EQ(p.items[0].seq, &a);
  EXPECT_TRUE(p.items[0].decode);
  EXPECT_EQ(p.items[1].seq, &b);
  EXPECT_EQ(p.items[1].tokens, 9);
  EXPECT_EQ(p.tokens, 10);
}

TEST(DecodeScheduler, BlocksRunningOutPreemptTheLatestAdmittedWhichRecomputesItsContext) {
  // Pool 10 blocks of 16. A and B: prompt 64 (4 blocks), 40 output tokens (at most 64 + 39 =
  // 103 tokens = 7 blocks each, so each fits the pool alone). Both prefill in step 1 (8 blocks)
  // and decode together; a decode step for a sequence with g tokens generated needs 64 + g
  // slots. At g = 1..16 that is 5 blocks each (10 in all); at g = 17 A needs a 6th: none is
  // free, so B (admitted last) is preempted with g = 17: its 5 blocks freed, its 80 tokens of
  // KV (prompt and 16 generated tokens fed back) discarded, and it must prefill 64 + 17 = 81
  // tokens (6 blocks) again. It cannot be readmitted while A holds up to 7 blocks; after A
  // finishes it prefills (producing its 18th token) and decodes the rest.
  Sequence a = seq(1, 64, 40), b = seq(2, 64, 40);
  PagedKv kv(10, 16);
  Scheduler s(SchedulerConfig{});
  s.enqueue(&a, 0);
  s.enqueue(&b, 0);
  double t = 0;
  double b_first = -1, a_finish = -1, b_resumed = -1;
  std::int64_t b_at_preemption = -1;
  while (!s.idle()) {
    StepPlan p = s.plan(t, kv);
    ASSERT_FALSE(p.empty());
    ASSERT_LE(kv.used_blocks(), kv.total_blocks());
    if (b.preemptions == 1 && b_at_preemption < 0) b_at_preemption = b.generated;
    for (const StepItem& it : p.items)
      if (it.seq == &b && it.first && b.preemptions == 1) b_resumed = t;
    t += 1;
    s.complete(p, t, kv);
    if (b.first_token_s >= 0 && b_first < 0) b_first = b.first_token_s;
    for (Sequence* f : s.take_finished())
      if (f == &a) a_finish = t;
  }
  EXPECT_EQ(a.preemptions, 0);
  EXPECT_EQ(b.preemptions, 1);
  EXPECT_EQ(b_at_preemption, 17);
  EXPECT_EQ(b.preempted_kv_tokens, 80);
  EXPECT_EQ(b.compute_tokens, 81);
  EXPECT_EQ(b.cached_tokens, 0);
  EXPECT_EQ(a.generated, 40);
  EXPECT_EQ(b.generated, 40);
  EXPECT_EQ(b.first_token_s, b_first);  // its TTFT is its first prefill's
  EXPECT_GE(b_resumed, a_finish);       // readmitted only once A's blocks are free
  EXPECT_EQ(kv.used_blocks(), 0);
}

TEST(DecodeScheduler, APromptWhoseWholeOutputCannotFitThePoolIsRejected) {
  // 64 + 200 − 1 = 263 tokens = 17 blocks > 10: it could never finish, so it is refused.
  Sequence a = seq(1, 64, 200);
  PagedKv kv(10, 16);
  Scheduler s(SchedulerConfig{});
  s.enqueue(&a, 0);
  EXPECT_TRUE(s.plan(0, kv).empty());
  EXPECT_TRUE(a.rejected);
}

TEST(DecodeStepPlan, ADecodeItemIsOneTokenOverThePromptAndTheTokensBeforeIt) {
  // Prompt 100 with 5 tokens generated: the step's input is the 5th, over 104 tokens of KV.
  Sequence a = seq(1, 100, 10);
  a.computed = 100;
  a.generated = 5;
  StepPlan p;
  p.items.push_back({&a, 1, false, false, true});
  const StepWork w = plan_step_work(p);
  ASSERT_EQ(w.slices.size(), 1u);
  EXPECT_EQ(w.slices[0].T, 1);
  EXPECT_EQ(w.slices[0].K, 104);
  EXPECT_TRUE(w.slices[0].finishes);
  EXPECT_TRUE(w.load.empty());
  EXPECT_TRUE(w.done.empty());  // nothing stored for a decode token
}

TEST(DecodeStats, TheDecodeColumnsAndFiguresAppearOnlyOnDecodeRuns) {
  const std::string off = RequestsCsvWriter::header(false), on = RequestsCsvWriter::header(true);
  EXPECT_EQ(off.find("tpot_s"), std::string::npos);
  EXPECT_NE(on.find(",e2e_s,output_tokens,tpot_s,preemptions,"), std::string::npos);
  // Two requests: 11 output tokens over 1 s after a 0.5 s TTFT (TPOT 0.1 s), and 1 token.
  SummaryBuilder sb;
  RequestRecord r;
  r.ttft_s = 0.5;
  r.e2e_s = 1.5;
  r.output_tokens = 11;
  r.tpot_s = 0.1;
  r.meets_slo = true;
  sb.add_request(r);
  r.output_tokens = 1;
  r.e2e_s = r.ttft_s;
  r.tpot_s = std::nan("");
  r.meets_slo = false;
  sb.add_request(r);
  SummaryBuilder::Totals t;
  t.simulated_time_s = 2;
  auto get = [&](const std::string& k) {
    for (const auto& [name, v] : sb.figures(t))
      if (name == k) return v;
    return -1.0;
  };
  EXPECT_EQ(get("tpot_p50_s"), -1.0);  // absent: not a decode run
  t.decode = true;
  EXPECT_EQ(get("output_tokens_total"), 12);
  EXPECT_EQ(get("output_throughput_tps"), 6);
  EXPECT_NEAR(get("tpot_p50_s"), 0.1, 0.1 * 0.01);  // the one multi-token request's
  EXPECT_TRUE(std::isnan(get("goodput_rps")));      // no SLO set
  t.slo_set = true;
  EXPECT_EQ(get("goodput_rps"), 0.5);  // one of two met it, over 2 s
  EXPECT_EQ(get("slo_attainment"), 0.5);
  // Both arrived at 0 with their first token at 0.5 s: prefills were served at 2 / 0.5 s = 4 req/s
  // although the run (its last output at 1.5 s, simulated to 2 s) completed 1 req/s.
  EXPECT_EQ(get("first_token_rps"), 4);
  EXPECT_TRUE(std::isnan(get("arrival_rps")));  // both arrived at 0: no arrival span
}

// The rates over the run's middle 80% leave out its drain. 100 requests arrive 1 s apart (at
// 1..100 s) and each completes 5 s later, except the last 10, whose long answers take 100 s: the
// last completion is at 200 s, so over the whole run 100 / 200 s = 0.5 req/s completed, half the
// arrival rate, although the server finished every request as it came. Between the 10th- and
// 90th-percentile samples (ranks floor(0.1 x 99) = 9 and floor(0.9 x 99) = 89: 80 requests apart)
// the arrivals span 90 - 10 = 80 s and the completions 95 - 15 = 80 s: 1 req/s each. A server
// completing one request every 2 s instead (the completions 15, 17, ... s) spans 160 s: 0.5.
TEST(DecodeStats, MidRunRatesLeaveOutTheDrainAfterTheLastArrival) {
  const auto figures = [](bool slow) {
    SummaryBuilder sb;
    for (int i = 1; i <= 100; ++i) {
      RequestRecord r;
      r.arrival_s = i;
      r.ttft_s = 0.5;
      r.e2e_s = slow ? 15 + 2.0 * (i - 1) - i : i > 90 ? 100 : 5;
      r.output_tokens = 10;
      r.tpot_s = 0.01;
      sb.add_request(r);
    }
    SummaryBuilder::Totals t;
    t.decode = true;
    t.simulated_time_s = slow ? 213 : 200;
    std::map<std::string, double> out;
    for (const auto& [name, v] : sb.figures(t)) out[name] = v;
    return out;
  };
  const auto keeps_up = figures(false);
  EXPECT_DOUBLE_EQ(keeps_up.at("throughput_rps"), 0.5);
  // Sketch quantiles: each time within 0.5%, so the 80 s spans within ~1%.
  EXPECT_NEAR(keeps_up.at("mid_arrival_rps"), 1.0, 0.015);
  EXPECT_NEAR(keeps_up.at("mid_completion_rps"), 1.0, 0.015);
  const auto behind = figures(true);
  EXPECT_NEAR(behind.at("mid_arrival_rps"), 1.0, 0.015);
  EXPECT_NEAR(behind.at("mid_completion_rps"), 0.5, 0.0075);
}

TEST(DecodeStats, AnSloIsMetWhenBothBoundsHoldAndASingleTokenHasNoTpotToMiss) {
  SloSpec slo;
  slo.ttft_s = 2;
  slo.tpot_s = 0.1;
  EXPECT_TRUE(slo.met(1.9, 0.09));
  EXPECT_FALSE(slo.met(2.1, 0.09));
  EXPECT_FALSE(slo.met(1.0, 0.11));
  EXPECT_TRUE(slo.met(1.0, std::nan("")));
  SloSpec bad;
  bad.tpot_s = -1;
  EXPECT_THROW(bad.validate("serving.slo"), InputError);
}

}  // namespace
}  // namespace decode_test
}  // namespace kappasim
