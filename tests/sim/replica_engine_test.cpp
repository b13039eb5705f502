// The replica engine (issue 14, serving/replica_engine): a DP-attention + EP run of DeepSeek-V3
// end to end. Behaviour, not timings (those are replica_step's, tested by hand in
// tests/unit/replica_step_test.cpp): every arrival finishes or is rejected, requests go to the
// rank vLLM's DP load balancer picks, the DP figures are in the summary. One simulation per TEST.
#include <gtest/gtest.h>

#include <string>

#include "core/config.hpp"
#include "serving/replica_engine.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace {

RunSpec dp_ep_run(int requests) {
  const std::string yaml =
      "model: deepseek-v3\nsystem: {preset: dgx-h100, gpu: h200-sxm}\n"
      "serving: {tp: 1, compute_dtype: fp8, tier_capacity: 400 GB, warm_tier: true,\n"
      "  parallelism: {dp_attention: 8, ep: 8}}\n"
      "workload: {type: narrativeqa, requests: " +
      std::to_string(requests) + ", rate: 4, seed: 3, narrativeqa: {documents: 8}}\ncheck: true\n";
  return read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
}

double figure(const SummaryBuilder& s, const SummaryBuilder::Totals& t, const std::string& k) {
  for (const auto& [name, v] : s.figures(t))
    if (name == k) return v;
  ADD_FAILURE() << "no figure " << k;
  return -1;
}

TEST(ReplicaEngine, DpEpRunFinishesEveryRequestSpreadOverRanksWithItsFigures) {
  const RunSpec spec = dp_ep_run(24);
  auto source = make_source(spec.workload, 3, "");
  SummaryBuilder summary;
  EngineSinks sinks;
  sinks.summary = &summary;
  const SummaryBuilder::Totals t = run_serving(spec, *source, sinks);  // dispatches to the replica
  EXPECT_EQ(summary.requests() + t.requests_rejected, 24u);
  EXPECT_EQ(t.gpus, 8);
  EXPECT_EQ(figure(summary, t, "dp_ranks"), 8.0);
  // 24 requests at 4 RPS over 8 ranks: the balancer spreads them, so the busiest rank's
  // tokens per step are at most all of them and at least the mean.
  const double mean = figure(summary, t, "dp_mean_rank_tokens_per_step");
  const double max = figure(summary, t, "dp_max_rank_tokens_per_step");
  EXPECT_GT(mean, 0.0);
  EXPECT_GE(max, mean);
  EXPECT_LE(max, 8 * mean + 1e-9);
  EXPECT_GT(figure(summary, t, "ep_nvlink_bytes"), 0.0);
  EXPECT_EQ(figure(summary, t, "ep_nic_bytes"), 0.0);  // one node: no NIC traffic
  const double share = figure(summary, t, "ep_a2a_time_share");
  EXPECT_GT(share, 0.0);
  EXPECT_LT(share, 1.0);
}

}  // namespace
}  // namespace kappasim
