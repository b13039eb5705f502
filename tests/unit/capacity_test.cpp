// Capacity at a TTFT SLO (issue 26 item 19): the search (analysis/capacity) on a synthetic
// oracle whose answer is known in closed form, and the steady-state window
// (serving/steady_window) on a hand-made run. Every expectation is worked out in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/capacity.hpp"
#include "core/error.hpp"
#include "serving/steady_window.hpp"

namespace kappasim {
namespace capacity_test {
namespace {

using analysis::CapacityProbeAnswer;
using analysis::CapacityProbeAsk;
using analysis::CapacitySpec;
using analysis::ReplicateCapacity;

// Replicate r meets the SLO (TTFT bound 1 s) exactly up to rate c[r]: ttft_q_s = rate / c[r];
// it serves what it is offered (served_rps = rate). Counts the oracle's batches.
struct Oracle {
  std::vector<double> c;
  int batches = 0;
  std::vector<std::size_t> batch_sizes{};
  std::vector<CapacityProbeAnswer> operator()(const std::vector<CapacityProbeAsk>& asks) {
    ++batches;
    batch_sizes.push_back(asks.size());
    std::vector<CapacityProbeAnswer> out;
    for (const auto& a : asks) {
      CapacityProbeAnswer ans;
      ans.ok = true;
      ans.metrics = {{"ttft_q_s", a.rate / c.at(a.replicate)}, {"served_rps", a.rate}};
      out.push_back(ans);
    }
    return out;
  }
};

CapacitySpec spec_1_256(int replicates) {
  CapacitySpec s;
  s.slo_ttft_s = 1;
  s.replicates = replicates;
  s.rate_lo = 1;
  s.rate_hi = 256;
  s.rel_tol = 0.02;  // stop when log2(hi/lo) <= log2(1.02) = 0.02857
  return s;
}

// Range [1, 256] = [2^0, 2^8]: the log-space midpoints are powers of two, bisecting the
// exponent. c = 20 (log2 20 = 4.3219): 4 met, 6 no, 5 no, 4.5 no, 4.25 met, 4.375 no,
// 4.3125 met, 4.34375 no, 4.328125 no -> [4.3125, 4.328125], width 1/64 <= 0.02857 (9 rounds).
// c = 24 (log2 24 = 4.58496): 4 met, 6 no, 5 no, 4.5 met, 4.75 no, 4.625 no, 4.5625 met,
// 4.59375 no, 4.578125 met -> [4.578125, 4.59375] (9 rounds).
TEST(Capacity, BisectionInLogSpaceOnAClosedFormOracle) {
  Oracle o{{20, 24}};
  const auto r = analysis::search_capacity(std::ref(o), spec_1_256(2));
  ASSERT_EQ(r.status, "found");
  ASSERT_EQ(r.replicates.size(), 2u);
  const double a = std::pow(2.0, 4.3125), b = std::pow(2.0, 4.578125);
  EXPECT_EQ(r.replicates[0].status, ReplicateCapacity::Status::Found);
  EXPECT_NEAR(r.replicates[0].rate_met, a, 1e-9 * a);
  EXPECT_NEAR(r.replicates[0].rate_not_met, std::pow(2.0, 4.328125), 1e-9);
  EXPECT_NEAR(r.replicates[0].capacity_rps, a, 1e-9 * a);  // served = offered here
  EXPECT_NEAR(r.replicates[1].rate_met, b, 1e-9 * b);
  EXPECT_NEAR(r.replicates[1].rate_not_met, std::pow(2.0, 4.59375), 1e-9);
  // 2 end probes + 9 bisection probes per replicate, then one at 0.8 x capacity each.
  EXPECT_EQ(r.probes.size(), 22u);
  EXPECT_EQ(r.at_probes.size(), 2u);
  // Batches: the ends of both (4), 9 rounds of 2, the 0.8 x capacity batch (2).
  ASSERT_EQ(o.batches, 11);
  EXPECT_EQ(o.batch_sizes.front(), 4u);
  EXPECT_EQ(o.batch_sizes[1], 2u);
  // Mean and t interval over n = 2: sd = |a - b| / sqrt 2, half-width t(0.975, 1) sd / sqrt 2
  // with t(0.975, 1) = 12.7062 (tables).
  EXPECT_NEAR(r.capacity.mean, (a + b) / 2, 1e-9);
  EXPECT_NEAR(r.capacity.sd, std::fabs(a - b) / std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(r.capacity.hi - r.capacity.mean, 12.7062 * std::fabs(a - b) / 2, 1e-3);
  // At 0.8 x the mean capacity: TTFT = rate / c per replicate.
  EXPECT_NEAR(r.at_rate, 0.8 * (a + b) / 2, 1e-9);
  EXPECT_NEAR(r.at_probes[0].metric("ttft_q_s"), r.at_rate / 20, 1e-12);
  EXPECT_NEAR(r.at_probes[1].metric("ttft_q_s"), r.at_rate / 24, 1e-12);
}

// Never met at LO (c = 0.5 < 1) and met at HI (c = 1000 > 256): no bisection for either; the
// capacity is the met-at-top replicate's 256 alone, a lower bound.
TEST(Capacity, NeverMetAndMetAtTopEndTheSearchAtTheEnds) {
  Oracle o{{0.5, 1000}};
  const auto r = analysis::search_capacity(std::ref(o), spec_1_256(2));
  EXPECT_EQ(r.status, "met_at_top");
  EXPECT_EQ(r.replicates[0].status, ReplicateCapacity::Status::NeverMet);
  EXPECT_TRUE(std::isnan(r.replicates[0].capacity_rps));
  EXPECT_EQ(r.replicates[1].status, ReplicateCapacity::Status::MetAtTop);
  EXPECT_EQ(r.replicates[1].rate_met, 256);
  EXPECT_EQ(r.capacity.n, 1u);
  EXPECT_EQ(r.capacity.mean, 256);
  EXPECT_EQ(r.probes.size(), 4u);
  EXPECT_NEAR(r.at_rate, 0.8 * 256, 1e-12);
  const auto m = analysis::capacity_metrics(r);
  EXPECT_EQ(m.front().first, "capacity_rps");
  EXPECT_EQ(m.front().second, 256);

  Oracle never{{0.5, 0.9}};
  const auto n = analysis::search_capacity(std::ref(never), spec_1_256(2));
  EXPECT_EQ(n.status, "never_met");
  EXPECT_TRUE(n.at_probes.empty());
  EXPECT_EQ(never.batches, 1);  // the ends only
  EXPECT_NE(analysis::capacity_text(n, spec_1_256(2), 1).find("never_met"), std::string::npos);
}

// A probe whose run failed stops the search with an InputError naming the rate.
TEST(Capacity, AFailedProbeIsAnInputError) {
  auto bad = [](const std::vector<CapacityProbeAsk>& asks) {
    std::vector<CapacityProbeAnswer> out(asks.size());
    for (auto& a : out) a.error = "serving.tp: bad";
    return out;
  };
  try {
    analysis::search_capacity(bad, spec_1_256(1));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.rate = 1 (replicate 0) failed: serving.tp"),
              std::string::npos)
        << e.what();
  }
}

// Ten requests arriving at 0, 1, ..., 9 s (given in reverse order), TTFT 0.5 s for the first
// five and 2.5 s for the rest. Warm-up 0.2: i0 = floor(0.2 * 10) = 2, window [2 s, 9 s], L = 7.
// Arrivals in it: 2..9 = 8 -> 8/7 per s. Finishes 0.5, 1.5, 2.5, 3.5, 4.5, 7.5, 8.5, 9.5, 10.5,
// 11.5: in [2, 9] are 2.5, 3.5, 4.5, 7.5, 8.5 = 5 -> 5/7 per s. The window's TTFTs: 0.5 x 3
// (requests 2-4), 2.5 x 5; nearest rank: p = 0.375 -> ceil(3) = 3rd = 0.5; p = 0.5 -> 4th = 2.5.
TEST(SteadyWindow, HandWorkedWindow) {
  std::vector<double> arr, fin;
  for (int i = 9; i >= 0; --i) {
    arr.push_back(i);
    fin.push_back(i + (i < 5 ? 0.5 : 2.5));
  }
  const SteadyWindow w = steady_window(arr, fin, 0.2, "workload.requests");
  EXPECT_EQ(w.t0_s, 2);
  EXPECT_EQ(w.t1_s, 9);
  EXPECT_EQ(w.requests, 8u);
  EXPECT_EQ(w.finished, 5u);
  EXPECT_DOUBLE_EQ(w.arrival_rps, 8.0 / 7);
  EXPECT_DOUBLE_EQ(w.served_rps, 5.0 / 7);
  EXPECT_EQ(w.ttft_quantile(0.375), 0.5);
  EXPECT_EQ(w.ttft_quantile(0.5), 2.5);
  EXPECT_EQ(w.ttft_quantile(0.99), 2.5);
  EXPECT_EQ(w.ttft_quantile(0.01), 0.5);
  // Too few: two requests with warm-up 0.5 leave a window of one instant.
  EXPECT_THROW(steady_window({0, 1}, {0.5, 1.5}, 0.5, "workload.requests"), InputError);
  EXPECT_THROW(steady_window({0}, {1}, 0, "workload.requests"), InputError);
}

}  // namespace
}  // namespace capacity_test
}  // namespace kappasim
