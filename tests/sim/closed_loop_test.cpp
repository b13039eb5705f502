// Closed-loop clients (workload.concurrency, serving/closed_loop.hpp) through the one serving
// engine and the cluster: a request arrives when a client is ready (its previous request finished,
// then the think time), the first N at t = 0. Every expected time is built here from the step
// overhead (serving/serving_spec.hpp default, quoted in serving_test_util.hpp) and the step's
// compute (kernel_timing's batch_step_time, the engine's own timing function): identical
// requests of known service time S at concurrency 1 arrive S (+ think time) apart and are served
// at 1/S. The requests' own arrival times (1000 s apart here) are not used. One simulation per
// TEST.
#include <gtest/gtest.h>

#include <systemc>

#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "serving/cluster.hpp"
#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace closed_loop_test {
namespace {

using namespace kappasim::testing;

// Llama-3.1-8B on one H100, the test stack, nothing cached or stored: a request's service is one
// step of its own prefill (overhead + compute), whatever came before it.
std::string config(const std::string& workload, const std::string& serving_extra = "") {
  return "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
         "serving: {" KAPPASIM_TEST_STACK "tp: 1, store: none" +
         serving_extra + "}\nworkload: {type: narrativeqa, " + workload + "}\n";
}

// n prompts of T fresh tokens (no prefix), each its own document, arriving (in the stream) 1000 s
// apart: far from any closed-loop time, so a test that read them would fail.
std::vector<Request> fresh_prompts(int n, std::int64_t T, std::int64_t output_tokens = 1) {
  std::vector<Request> rs;
  for (int i = 1; i <= n; ++i) {
    Request r = request(static_cast<std::uint64_t>(i), 1000.0 * i, 0, T);
    r.output_tokens = output_tokens;
    rs.push_back(r);
  }
  return rs;
}

struct Served {
  std::vector<RequestRecord> recs;  // in finish order
  SummaryBuilder::Totals totals;
  SummaryBuilder summary;
};

Served serve(const RunSpec& spec, std::vector<Request> rs) {
  VectorSource src(std::move(rs));
  Served out;
  EngineSinks sinks;
  sinks.summary = &out.summary;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
  return out;
}

double figure(const std::vector<std::pair<std::string, double>>& f, const std::string& k) {
  for (const auto& [key, v] : f)
    if (key == k) return v;
  ADD_FAILURE() << "no figure " << k;
  return NAN;
}

TEST(ClosedLoop, OneClientSendsEachRequestWhenThePreviousFinishes) {
  const RunSpec spec = run_spec(config("concurrency: 1"));
  const std::int64_t T = 1024;
  const Served o = serve(spec, fresh_prompts(5, T));
  // S = step overhead (2 ms) + the prefill of 1024 fresh tokens alone.
  const double S = kStepOverhead + step_compute(spec, {{double(T), 0.0, true}});
  ASSERT_EQ(o.recs.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    const RequestRecord& r = o.recs[i];
    EXPECT_EQ(r.id, i + 1);
    EXPECT_NEAR(r.arrival_s, static_cast<double>(i) * S, 1e-9) << "request " << r.id;
    EXPECT_NEAR(r.ttft_s, S, 1e-9) << "request " << r.id;  // never queues behind another
    EXPECT_NEAR(r.queue_s, 0, 1e-9);
  }
  // Throughput 1/S: 5 requests in 5 S.
  const auto f = o.summary.figures(o.totals);
  EXPECT_NEAR(figure(f, "simulated_time_s"), 5 * S, 1e-9);
  EXPECT_NEAR(figure(f, "throughput_rps"), 1 / S, 1e-6 / S);
  EXPECT_EQ(figure(f, "concurrency"), 1);
  EXPECT_EQ(figure(f, "think_time_s"), 0);
}

TEST(ClosedLoop, ThinkTimeSeparatesAFinishFromTheClientsNextRequest) {
  const RunSpec spec = run_spec(config("concurrency: 1, think_time: 250 ms"));
  const std::int64_t T = 1024;
  const Served o = serve(spec, fresh_prompts(4, T));
  const double S = kStepOverhead + step_compute(spec, {{double(T), 0.0, true}});
  const double Z = 0.25;
  ASSERT_EQ(o.recs.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(o.recs[i].arrival_s, static_cast<double>(i) * (S + Z), 1e-9);
    EXPECT_NEAR(o.recs[i].ttft_s, S, 1e-9);
  }
  // The run ends at the last finish: 3 (S + Z) + S; throughput 4 / that.
  const auto f = o.summary.figures(o.totals);
  EXPECT_NEAR(figure(f, "simulated_time_s"), 4 * S + 3 * Z, 1e-9);
  EXPECT_EQ(figure(f, "think_time_s"), 0.25);
}

TEST(ClosedLoop, AsManyClientsAsRequestsSendThemAllAtZero) {
  const RunSpec spec = run_spec(config("concurrency: 8"));
  const std::int64_t T = 512;
  const Served o = serve(spec, fresh_prompts(4, T));
  ASSERT_EQ(o.recs.size(), 4u);
  // All four at t = 0 and in one step (4 × 512 tokens = the 4096-token budget).
  const double S4 =
      kStepOverhead + step_compute(spec, std::vector<SeqSlice>(4, SeqSlice{512.0, 0.0, true}));
  for (const RequestRecord& r : o.recs) {
    EXPECT_EQ(r.arrival_s, 0) << "request " << r.id;
    EXPECT_NEAR(r.ttft_s, S4, 1e-9) << "request " << r.id;
  }
}

TEST(ClosedLoop, TwoClientsBatchTogetherAndReturnTogether) {
  const RunSpec spec = run_spec(config("concurrency: 2"));
  const std::int64_t T = 512;
  const Served o = serve(spec, fresh_prompts(6, T));
  // Requests 1, 2 at 0 share one step of S2 = overhead + compute of two 512-token prefills; both
  // finish then, so 3, 4 arrive at S2, and 5, 6 at 2 S2.
  const double S2 =
      kStepOverhead + step_compute(spec, std::vector<SeqSlice>(2, SeqSlice{512.0, 0.0, true}));
  ASSERT_EQ(o.recs.size(), 6u);
  for (const RequestRecord& r : o.recs) {
    const double k = static_cast<double>((r.id - 1) / 2);
    EXPECT_NEAR(r.arrival_s, k * S2, 1e-9) << "request " << r.id;
    EXPECT_NEAR(r.ttft_s, S2, 1e-9) << "request " << r.id;
  }
}

TEST(ClosedLoop, WithDecodeAClientWaitsForTheLastToken) {
  const RunSpec spec = run_spec(config("concurrency: 1", ", decode: true"));
  const Served o = serve(spec, fresh_prompts(3, 256, 8));
  ASSERT_EQ(o.recs.size(), 3u);
  EXPECT_EQ(o.recs[0].arrival_s, 0);
  for (std::size_t i = 1; i < 3; ++i) {
    const RequestRecord& prev = o.recs[i - 1];
    ASSERT_EQ(prev.output_tokens, 8);
    ASSERT_GT(prev.e2e_s, prev.ttft_s);  // its 7 decode steps came after its first token
    EXPECT_NEAR(o.recs[i].arrival_s, prev.arrival_s + prev.e2e_s, 1e-9);
  }
}

// The cluster's router holds the clients: two round-robin nodes, two clients, four requests. 1 and
// 2 arrive at 0, one on each node, each served alone in S; 3 and 4 arrive at S.
TEST(ClosedLoop, TheClusterRouterHoldsTheClients) {
  const ClusterRunSpec spec = read_config<ClusterRunSpec>(
      parse_yaml("cluster:\n  router: round_robin\n  nodes:\n"
                 "    - {name: a, count: 2, system: h100, serving: {" KAPPASIM_TEST_STACK
                 "tp: 1, store: none}}\n"
                 "model: llama-3.1-8b\nworkload: {type: narrativeqa, concurrency: 2}\n",
                 "<test>"),
      "");
  const std::int64_t T = 1024;
  VectorSource src(fresh_prompts(4, T));
  std::vector<RequestRecord> recs;
  ClusterSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r, std::size_t) { recs.push_back(r); };
  const auto f = run_cluster(spec, src, sinks);
  const double S = kStepOverhead + step_compute(spec.node_run_spec(0), {{double(T), 0.0, true}});
  ASSERT_EQ(recs.size(), 4u);
  for (const RequestRecord& r : recs) {
    EXPECT_NEAR(r.arrival_s, r.id <= 2 ? 0 : S, 1e-9) << "request " << r.id;
    EXPECT_NEAR(r.ttft_s, S, 1e-9) << "request " << r.id;
  }
  EXPECT_EQ(figure(f, "concurrency"), 2);
  EXPECT_NEAR(figure(f, "simulated_time_s"), 2 * S, 1e-9);
}

}  // namespace
}  // namespace closed_loop_test
}  // namespace kappasim
