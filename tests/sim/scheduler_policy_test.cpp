// shortest_load (serving/policies/shortest_load.cpp) against fifo on a small serving run: four
// requests with mixed cached prefixes arrive together and run one at a time; the order each
// policy serves them in, and so every TTFT, is worked out by hand from the step-time formula of
// ServingEngine.FifoHeadOfLineBlocksTheSmallRequest (tests/sim/serving_engine_test.cpp), and
// shortest-load-first gives the lower mean TTFT (the shortest-processing-time rule). One
// simulation per TEST.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace scheduler_policy_test {
namespace {

using namespace kappasim::testing;

constexpr double kChunk = 256;  // ServingSpec chunk_tokens
// The vectorised copy kernel of kLlama8bH100 is link-bound: payload rate = wire / read cost with
// 64 B requests (1 + 20/64 framing + 2/64 ACKs per byte).
const double kRate = kWire / (1 + 20.0 / 64 + 2.0 / 64);

// Four requests at t = 0, T = 128 new tokens each, cached prefixes (K, whole chunks):
//   R1 65,536   R2 16,384   R3 1,024   R4 4,096
// max_num_seqs 1: one request per step, so a request's TTFT is the sum of the steps up to and
// including its own.
//   fifo (arrival order):                  R1, R2, R3, R4
//   shortest_load (K ascending):           R3, R4, R2, R1
struct MixedK {
  RunSpec spec;
  std::vector<std::int64_t> K = {65536, 16384, 1024, 4096};
  std::int64_t T = 128;
  explicit MixedK(const std::string& policy)
      : spec(run_spec(std::string(kLlama8bH100) +
                      "serving: {" KAPPASIM_TEST_STACK
                      "tp: 1, warm_tier: true, store: none, max_num_seqs: 1, policy: " +
                      policy + "}\n")) {}
  std::vector<Request> requests() const {
    std::vector<Request> rs;
    for (std::size_t i = 0; i < K.size(); ++i) rs.push_back(request(i + 1, 0, K[i], T));
    return rs;
  }
  // One step serving request i alone (index into K): the step overhead, the retrieve's fixed and
  // per-chunk costs, one copy-kernel block overhead per chunk, one round trip, the bytes over the
  // link, and the compute of T new tokens over K cached.
  double step(std::size_t i) const {
    const double k = static_cast<double>(K[i]), chunks = k / kChunk;
    return kStepOverhead + kRetrieveFixed + chunks * kRetrievePerChunk + chunks * kBlockOverhead +
           kRtt + k * kBkv8b / kRate + step_compute(spec, {{double(T), k, true}});
  }
  // TTFT of each request (by id - 1) when served in `order` (indices into K).
  std::vector<double> ttfts(const std::vector<std::size_t>& order) const {
    std::vector<double> out(K.size());
    double t = 0;
    for (std::size_t i : order) {
      t += step(i);
      out[i] = t;
    }
    return out;
  }
};

std::vector<RequestRecord> serve(const RunSpec& spec, std::vector<Request> rs) {
  VectorSource src(std::move(rs));
  std::vector<RequestRecord> recs;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { recs.push_back(r); };
  run_serving(spec, src, sinks);
  return recs;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

void check(const std::string& policy, const std::vector<std::size_t>& order) {
  const MixedK m(policy);
  const std::vector<RequestRecord> recs = serve(m.spec, m.requests());
  ASSERT_EQ(recs.size(), 4u);
  const std::vector<double> want = m.ttfts(order);
  for (std::size_t j = 0; j < order.size(); ++j) {  // finishing order = serving order
    EXPECT_EQ(recs[j].id, order[j] + 1) << policy << " position " << j;
    EXPECT_NEAR(recs[j].ttft_s, want[order[j]], tol(want[order[j]]))
        << policy << " R" << recs[j].id;
  }
}

TEST(SchedulerPolicy, FifoServesMixedLoadsInArrivalOrder) { check("fifo", {0, 1, 2, 3}); }

TEST(SchedulerPolicy, ShortestLoadServesFewestCachedTokensFirstAndCutsMeanTtft) {
  check("shortest_load", {2, 3, 1, 0});
  // Mean TTFT: (4·s3 + 3·s4 + 2·s2 + s1) / 4 against fifo's (4·s1 + 3·s2 + 2·s3 + s4) / 4;
  // s1 > s2 > s4 > s3, since every term of a step grows with K.
  const MixedK m("shortest_load");
  const double slf = mean(m.ttfts({2, 3, 1, 0})), fifo = mean(m.ttfts({0, 1, 2, 3}));
  EXPECT_LT(slf, 0.6 * fifo) << slf << " vs " << fifo;  // R1's long load no longer delays all
  // The price: the longest load waits for every other one (its TTFT is the whole makespan).
  EXPECT_NEAR(m.ttfts({2, 3, 1, 0})[0], m.ttfts({0, 1, 2, 3})[3], 1e-12);
}

}  // namespace
}  // namespace scheduler_policy_test
}  // namespace kappasim
