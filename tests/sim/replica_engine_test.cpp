// The replica engine (issue 14, serving/replica_engine): a DP-attention + EP run of DeepSeek-V3
// end to end. Behaviour, not timings (those are replica_step's, tested by hand in
// tests/unit/replica_step_test.cpp): every arrival finishes or is rejected, requests go to the
// rank vLLM's DP load balancer picks, the DP figures are in the summary. One simulation per TEST.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
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

TEST(ReplicaEngine, TwoNodeAllToAllGoesThroughTheFabricsNicsAtLeastThePortBound) {
  // DeepSeek-V3 FP8 as DP-16 + EP-16 over 2 DGX H100 nodes (ConnectX-7 per GPU): the
  // all-to-all runs as PeerGpu transfers in the flow back end, NVLink within a node and the NIC
  // between them. Max-min sharing on non-blocking switches can only be as fast as the busiest
  // port (replica_step's per-port time), never faster.
  const std::string yaml =
      "model: deepseek-v3\nsystem: dgx-h100\n"
      "serving: {tp: 1, compute_dtype: fp8, tier_capacity: 400 GB, warm_tier: true,\n"
      "  parallelism: {dp_attention: 16, ep: 16, nodes: 2}}\n"
      "workload: {type: narrativeqa, requests: 24, rate: 4, seed: 3, narrativeqa: {documents: "
      "8}}\ncheck: true\n";
  const RunSpec spec = read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
  auto source = make_source(spec.workload, 3, "");
  SummaryBuilder summary;
  EngineSinks sinks;
  sinks.summary = &summary;
  const SummaryBuilder::Totals t = run_serving(spec, *source, sinks);
  EXPECT_EQ(summary.requests() + t.requests_rejected, 24u);
  EXPECT_EQ(t.gpus, 16);
  EXPECT_GT(figure(summary, t, "peer_gpu_transfers"), 0.0);
  EXPECT_GT(figure(summary, t, "ep_nic_bytes"), 0.0);
  const double a2a = figure(summary, t, "ep_a2a_s");
  const double bound = figure(summary, t, "ep_a2a_port_bound_s");
  EXPECT_GT(bound, 0.0);
  EXPECT_GE(a2a, bound * (1 - 1e-9));
}

TEST(ReplicaEngine, TheDpRouterSpreadsSimultaneousArrivalsOverDistinctRanks) {
  // vLLM's balancer: least waiting × 4 + running. Eight requests arriving together: the first
  // goes to rank 0 (all 0, lowest index), each next one to an empty rank (any request already
  // placed scores at least 1), so the eight land on eight ranks.
  const std::string yaml =
      "model: deepseek-v3\nsystem: {preset: dgx-h100, gpu: h200-sxm}\n"
      "serving: {tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 8, ep: 8}}\n"
      "workload: {type: sharegpt, requests: 8, rate: 1000000, seed: 1}\n";
  const RunSpec spec = read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
  auto source = make_source(spec.workload, 1, "");
  std::unique_ptr<ReplicaEngine> e;
  std::vector<std::uint64_t> ids;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { ids.push_back(r.id); };
  run_simulation([&] { e = std::make_unique<ReplicaEngine>("replica", spec, *source, sinks); });
  ASSERT_EQ(ids.size(), 8u);
  std::set<int> ranks;
  for (std::uint64_t id : ids) ranks.insert(e->rank_of_request(id));
  EXPECT_EQ(ranks.size(), 8u);
}

}  // namespace
}  // namespace kappasim
