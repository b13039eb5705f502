// Decode co-located with prefill in the one serving engine (issue 23 part 1), end to end on the
// SystemC models. Llama-3.1-8B on one H100 with the `ideal` stack (no software cost, no host
// launch cost), so a step lasts the scheduler's step_overhead plus its compute. One simulation
// per TEST (SystemC runs one per process).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace decode_test {
namespace {

using testing::kStepOverhead;
using testing::request;
using testing::run_spec;
using testing::step_compute;

// Llama-3.1-8B's weights in BF16: 8.03e9 parameters × 2 B (the model card's count), read once per
// decode step; the H100 SXM's HBM3 peak is 3.35 TB/s (datasheet).
constexpr double kWeightBytes8b = 8.03e9 * 2;
constexpr double kHbmPeak = 3.35e12;

const char* const kDecodeYaml =
    "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\nworkload: {type: narrativeqa}\n"
    "serving: {tp: 1, stack: ideal, store: none, decode: true";

using Out = testing::Served;
using testing::serve;

Request with_output(Request r, std::int64_t out) {
  r.output_tokens = out;
  return r;
}

TEST(Decode, AnIsolatedRequestDecodesOneTokenAStepAtTheWeightReadBound) {
  // Prompt 1,000, 65 output tokens: one prefill step (the first token), then 64 decode steps,
  // the g-th over 1,000 + g − 1 tokens of KV. Each step is step_overhead + its compute; the
  // compute of a one-token step reads every weight once, so it is at least weights / HBM peak
  // and, memory-bound, not far above weights / (HBM peak × efficiency 0.92) plus the kernels'
  // launch overheads (~7 kernels × 32 layers × 2 us).
  const RunSpec spec = run_spec(std::string(kDecodeYaml) + "}\n");
  const std::int64_t P = 1000, N = 65;
  Out o;
  serve(spec, {with_output(request(1, 0, 0, P), N)}, o);
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.rec(1);
  EXPECT_EQ(r.output_tokens, N);
  const double prefill = kStepOverhead + step_compute(spec, {{double(P), 0, true}});
  EXPECT_NEAR(r.ttft_s, prefill, 1e-9);
  double decode = 0;
  for (std::int64_t g = 1; g < N; ++g)
    decode += kStepOverhead + step_compute(spec, {{1, double(P + g - 1), true}});
  EXPECT_NEAR(r.e2e_s - r.ttft_s, decode, 1e-9 * N);
  EXPECT_NEAR(r.tpot_s, decode / (N - 1), 1e-9);
  const double one = step_compute(spec, {{1, double(P), true}});
  EXPECT_GE(one, kWeightBytes8b / kHbmPeak);  // 4.79 ms
  // Plus attention: its 8 packed CTAs split 8 ways over the 8 KV tiles, one wave, each CTA one
  // tile (1.5 us of MMA at H100's 0.745 long-sequence rate) and its 1.69-tile prologue and
  // epilogue (docs/compute-model.md, "Attention by context length"): under 5 us a layer.
  EXPECT_LE(one, kWeightBytes8b / (kHbmPeak * 0.92) + 7 * 32 * 2e-6 * 1.5 +
                     32 * 5e-6);  // 5.21 + 0.67 + 0.16 ms
  // Every inter-token gap is one decode step here.
  EXPECT_NEAR(o.figure("itl_p50_s"), decode / (N - 1), decode / (N - 1) * 0.01);
  EXPECT_EQ(o.figure("output_tokens_total"), N);
  EXPECT_EQ(o.figure("preemptions"), 0);
}

TEST(Decode, APrefillArrivingDuringDecodeWaitsForTheStepAndSharesTheNextOne) {
  // A (prompt 1,000, 400 output tokens) decodes alone from its first step on; B (prompt 2,000,
  // one token) arrives at 0.5 s. B waits for A's decode step in progress (at most one), then
  // prefills in a step that also carries A's decode token: its TTFT is that shared step plus
  // a wait of at most one decode step. A's TTFT is its own prefill step, as without decode.
  const RunSpec spec = run_spec(std::string(kDecodeYaml) + "}\n");
  Out o;
  serve(spec, {with_output(request(1, 0, 0, 1000), 400), request(2, 0.5, 0, 2000)}, o);
  ASSERT_EQ(o.recs.size(), 2u);
  EXPECT_NEAR(o.rec(1).ttft_s, kStepOverhead + step_compute(spec, {{1000, 0, true}}), 1e-9);
  const RequestRecord& b = o.rec(2);
  const double alone = kStepOverhead + step_compute(spec, {{2000, 0, true}});
  // A has produced g tokens when B's step starts; its slice is one token over 1,000 + g − 1.
  // g is at least 1 and at most 400 − 1; the shared step's compute grows with g by a few KV
  // reads only, so bracket it by g's extremes.
  const double shared_lo = kStepOverhead + step_compute(spec, {{1, 1000, true}, {2000, 0, true}});
  const double shared_hi =
      kStepOverhead + step_compute(spec, {{1, 1000 + 398, true}, {2000, 0, true}});
  const double one_decode = kStepOverhead + step_compute(spec, {{1, 1000 + 398, true}});
  EXPECT_GT(shared_lo, alone);
  EXPECT_GE(b.ttft_s, shared_lo - 1e-9);
  EXPECT_LE(b.ttft_s, shared_hi + one_decode + 1e-9);
  EXPECT_EQ(b.output_tokens, 1);
  EXPECT_TRUE(std::isnan(b.tpot_s));  // one token: no TPOT
}

TEST(Decode, AFullKvPoolPreemptsAndEveryRequestStillGetsAllItsTokens) {
  // gpu_memory_utilization 0.28: V_eff = 0.28 × 80 GB − 16.06 GB weights − 4.84 GiB reserve
  // ≈ 1.1 GB ≈ 8,600 tokens of KV (131,072 B each). Eight requests of prompt 1,000 and 500
  // output tokens need up to 8 × 1,499 ≈ 12,000 tokens at once, so decoding runs out of blocks
  // and preempts; each still fits the pool alone, so every one finishes with its 500 tokens.
  const RunSpec spec = run_spec(std::string(kDecodeYaml) + ", gpu_memory_utilization: 0.28}\n");
  std::vector<Request> rs;
  for (std::uint64_t i = 1; i <= 8; ++i) rs.push_back(with_output(request(i, 0, 0, 1000), 500));
  Out o;
  serve(spec, rs, o);
  ASSERT_EQ(o.recs.size(), 8u);
  int preempted = 0;
  for (const RequestRecord& r : o.recs) {
    EXPECT_EQ(r.output_tokens, 500);
    EXPECT_GT(r.e2e_s, r.ttft_s);
    preempted += r.preemptions;
  }
  EXPECT_GT(preempted, 0);
  EXPECT_EQ(o.figure("preemptions"), preempted);
  EXPECT_EQ(o.figure("output_tokens_total"), 8 * 500);
  EXPECT_GT(o.figure("preempted_kv_tokens"), 0);
}

}  // namespace
}  // namespace decode_test
}  // namespace kappasim
