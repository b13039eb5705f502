// vLLM's automatic prefix caching in HBM (serving.prefix_caching, issue 23) in the one serving
// engine, end to end on the SystemC models: Llama-3.1-8B on one H100 with the `ideal` stack (no
// software cost), so a step lasts the scheduler's step_overhead plus its compute. One simulation
// per TEST (SystemC runs one per process).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace prefix_cache_test {
namespace {

using testing::kStepOverhead;
using testing::request;
using testing::run_spec;
using testing::step_compute;
using testing::tol;

using Out = testing::Served;
using testing::serve;

const char* const kYaml =
    "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\nworkload: {type: narrativeqa}\n"
    "serving: {tp: 1, stack: ideal, store: none, prefix_caching: true}\n";

TEST(PrefixCacheServing, ASecondPromptOnTheSameDocumentComputesOnlyItsOwnTokens) {
  // Request 1 at t = 0: document 5's 1,024 tokens + 64 of its own, nothing in the tier (store:
  // none): one step computing 1,088 tokens. Request 2 at t = 1 s (request 1 long done): the same
  // document + 64 tokens: its first 1,024 tokens = 64 blocks are in the prefix cache, so its step
  // computes 64 tokens over a context of 1,024 and loads nothing.
  const RunSpec spec = run_spec(kYaml);
  Out o;
  serve(spec, {request(1, 0, 1024, 64, 5), request(2, 1.0, 1024, 64, 5)}, o);
  ASSERT_EQ(o.recs.size(), 2u);
  const RequestRecord& r1 = o.recs[0].id == 1 ? o.recs[0] : o.recs[1];
  const RequestRecord& r2 = o.recs[0].id == 2 ? o.recs[0] : o.recs[1];
  const double t1 = kStepOverhead + step_compute(spec, {{1088, 0, true}});
  const double t2 = kStepOverhead + step_compute(spec, {{64, 1024, true}});
  EXPECT_NEAR(r1.ttft_s, t1, tol(t1));
  EXPECT_NEAR(r2.ttft_s, t2, tol(t2));
  // 64 tokens still read every weight once (16 GB at 3.35 TB/s: 4.8 ms) plus the 2 ms step
  // overhead, against ~30 ms for 1,088 tokens: well under a third.
  EXPECT_LT(r2.ttft_s, r1.ttft_s / 3);
  EXPECT_EQ(r1.hbm_hit_tokens, 0);
  EXPECT_EQ(r2.hbm_hit_tokens, 1024);
  EXPECT_EQ(r2.computed_tokens, 64);
  EXPECT_EQ(r2.cached_tokens, 0);
  EXPECT_EQ(r2.bytes_loaded, 0);
  // 1,024 of the 2,176 prompt tokens were held: 0.4706.
  EXPECT_NEAR(o.figure("hbm_hit_fraction"), 1024.0 / 2176.0, 1e-12);
  EXPECT_EQ(o.figure("prefix_cache_evicted_blocks"), 0);
}

TEST(PrefixCacheServing, OffTheSecondPromptComputesEverythingAgain) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
      "workload: {type: narrativeqa}\nserving: {tp: 1, stack: ideal, store: none}\n");
  Out o;
  serve(spec, {request(1, 0, 1024, 64, 5), request(2, 1.0, 1024, 64, 5)}, o);
  ASSERT_EQ(o.recs.size(), 2u);
  const double t = kStepOverhead + step_compute(spec, {{1088, 0, true}});
  for (const RequestRecord& r : o.recs) EXPECT_NEAR(r.ttft_s, t, tol(t));
}

TEST(PrefixCacheServing, APromptSharesTheBlocksOfARunningOneOnlyOnceTheyAreComputed) {
  // Requests 1 and 2 on document 5 arrive together: neither finds the document cached (nothing
  // is computed yet), so both compute 1,088 tokens in the first step. Request 3 arrives after
  // that step: it finds the document's 64 blocks (registered by request 1's step).
  const RunSpec spec = run_spec(kYaml);
  Out o;
  serve(spec,
        {request(1, 0, 1024, 64, 5), request(2, 0, 1024, 64, 5), request(3, 1.0, 1024, 64, 5)}, o);
  ASSERT_EQ(o.recs.size(), 3u);
  for (const RequestRecord& r : o.recs) EXPECT_EQ(r.hbm_hit_tokens, r.id == 3 ? 1024 : 0);
}

}  // namespace
}  // namespace prefix_cache_test
}  // namespace kappasim
