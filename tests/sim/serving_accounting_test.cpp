// Issue 12 (items 1, 4, 10): the simulated time base's reach, and where the time went — the
// per-request and per-run time breakdown (serving/time_breakdown.hpp) and the active bound of
// every load. Expected values are built from preset literals and the documented cost formulas
// (tests/sim/serving_test_util.hpp); batch_step_time() is the one model call. One simulation per
// TEST (ctest runs each TEST in its own process).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace {

using namespace kappasim::testing;

Request request(std::uint64_t id, double at, std::int64_t K, std::int64_t T) {
  Request r;
  r.id = id;
  r.arrival_s = at;
  r.sequence_id = id;  // a document of its own
  r.prefix_tokens = K;
  r.new_tokens = T;
  r.workload = "test";
  return r;
}

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
};

Outcome serve(const RunSpec& spec, std::vector<Request> rs, SummaryBuilder* summary = nullptr) {
  VectorSource src(std::move(rs));
  Outcome out;
  EngineSinks sinks;
  sinks.summary = summary;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
  return out;
}

// ---- item 1: the time base -----------------------------------------------------------------------

// A request at 9.3e6 s (107.6 days) is past 2^63 ps: before, it was served with a negative TTFT
// and exit 0; now it is an InputError naming the limit in days.
TEST(TimeBase, ArrivalPastTheLimitIsAnInputError) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {tp: 1, store: none}\n");
  try {
    serve(spec, {request(1, 0, 0, 100), request(2, 9.3e6, 0, 100)});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("100 days"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("workload.rate"), std::string::npos) << e.what();
  }
}

// Just inside the limit (8.6e6 s = 99.5 days) a request's TTFT is the same as at time 0: one step
// overhead plus its compute (within the double's resolution at 8.6e6 s, ~2 ns).
TEST(TimeBase, RequestNearTheLimitHasItsIsolatedTtft) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + "serving: {tp: 1, store: none}\n");
  const Outcome o = serve(spec, {request(1, 0, 0, 100), request(2, 8.6e6, 0, 100)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double ttft = kStepOverhead + step_compute(spec, {{100.0, 0.0, true}});
  EXPECT_NEAR(o.recs[0].ttft_s, ttft, tol(ttft));
  EXPECT_NEAR(o.recs[1].ttft_s, ttft, 1e-8);
  EXPECT_GE(o.totals.simulated_time_s, 8.6e6);
}

}  // namespace
}  // namespace kappasim
