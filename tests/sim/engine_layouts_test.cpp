// The serving engine on layouts beyond plain TP (issues 14, 21; serving/engine, step_model): a
// DP-attention + EP run of DeepSeek-V3 end to end. Behaviour, not timings (those are
// replica_step's, tested by hand in tests/unit/replica_step_test.cpp): every arrival finishes or is
// rejected, requests go to the rank vLLM's DP load balancer picks, the DP figures are in the
// summary. One simulation per TEST.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "serving/engine.hpp"
#include "serving/replica_step.hpp"
#include "tests/sim/serving_test_util.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace engine_layouts_test {
namespace {

std::string dp_ep_yaml(int requests) {
  return "model: deepseek-v3\nsystem: {preset: dgx-h100, gpu: h200-sxm}\n"
         "serving: {tp: 1, compute_dtype: fp8, tier_capacity: 400 GB, warm_tier: true,\n"
         "  parallelism: {dp_attention: 8, ep: 8}}\n"
         "workload: {type: narrativeqa, requests: " +
         std::to_string(requests) +
         ", rate: 4, seed: 3, narrativeqa: {documents: 8}}\ncheck: true\n";
}

struct RunOut {
  SummaryBuilder summary;
  SummaryBuilder::Totals totals;
  std::vector<RequestRecord> records;
};
void run_yaml(const std::string& yaml, RunOut& out) {
  const RunSpec spec = read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
  auto source = make_source(spec.workload, spec.workload.seed, "");
  EngineSinks sinks;
  sinks.summary = &out.summary;
  sinks.on_finish = [&](const RequestRecord& r) { out.records.push_back(r); };
  out.totals = run_serving(spec, *source, sinks);
}

double figure(const SummaryBuilder& s, const SummaryBuilder::Totals& t, const std::string& k) {
  for (const auto& [name, v] : s.figures(t))
    if (name == k) return v;
  ADD_FAILURE() << "no figure " << k;
  return -1;
}

TEST(EngineLayouts, DpEpRunFinishesEveryRequestSpreadOverRanksWithItsFigures) {
  RunOut r;
  run_yaml(dp_ep_yaml(24), r);
  const SummaryBuilder& summary = r.summary;
  const SummaryBuilder::Totals& t = r.totals;
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

TEST(EngineLayouts, TwoNodeAllToAllGoesThroughTheFabricsNicsAtLeastThePortBound) {
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
  RunOut r;
  run_yaml(yaml, r);
  const SummaryBuilder& summary = r.summary;
  const SummaryBuilder::Totals& t = r.totals;
  EXPECT_EQ(summary.requests() + t.requests_rejected, 24u);
  EXPECT_EQ(t.gpus, 16);
  EXPECT_GT(figure(summary, t, "peer_gpu_transfers"), 0.0);
  EXPECT_GT(figure(summary, t, "ep_nic_bytes"), 0.0);
  const double a2a = figure(summary, t, "ep_a2a_s");
  const double bound = figure(summary, t, "ep_a2a_port_bound_s");
  EXPECT_GT(bound, 0.0);
  EXPECT_GE(a2a, bound * (1 - 1e-9));
}

TEST(EngineLayouts, TheDpRouterSpreadsSimultaneousArrivalsOverDistinctRanks) {
  // vLLM's balancer: least waiting × 4 + running. Eight requests arriving together: the first
  // goes to rank 0 (all 0, lowest index), each next one to an empty rank (any request already
  // placed scores at least 1), so the eight land on eight ranks.
  const std::string yaml =
      "model: deepseek-v3\nsystem: {preset: dgx-h100, gpu: h200-sxm}\n"
      "serving: {tp: 1, compute_dtype: fp8, parallelism: {dp_attention: 8, ep: 8}}\n"
      "workload: {type: sharegpt, requests: 8, rate: 1000000, seed: 1}\n";
  const RunSpec spec = read_config<RunSpec>(parse_yaml(yaml, "run.yaml"), "");
  auto source = make_source(spec.workload, 1, "");
  std::unique_ptr<ServingEngine> e;
  std::vector<std::uint64_t> ids;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { ids.push_back(r.id); };
  run_simulation([&] { e = std::make_unique<ServingEngine>("engine", spec, *source, sinks); });
  ASSERT_EQ(ids.size(), 8u);
  // One arrival per rank: every rank's tier was looked up exactly once.
  for (std::size_t r = 0; r < 8; ++r) EXPECT_EQ(e->store(r).dram().lookups(), 1u) << "rank " << r;
}

TEST(EngineLayouts, DpEpServesLowerTiersAndTheLayerwisePathWithItsBounds) {
  // Every feature on every layout: DeepSeek-V3 DP-8 + EP-8 with a CXL tier below a DRAM tier
  // too small for the documents (5 GB a rank), loading layer-wise. Every request finishes
  // (invariants checked), the CXL level's figures are in the summary, and every request that loaded
  // KV has its load bound.
  RunOut r;
  run_yaml(
      "model: deepseek-v3\nsystem: {preset: dgx-h100-256gb-cxl, gpu: h200-sxm}\n"
      "serving: {tp: 1, compute_dtype: fp8, load_path: layerwise, tier_capacity: 40 GB,\n"
      "  warm_tier: true, tiers: {cxl_capacity: 200 GB}, parallelism: {dp_attention: 8, ep: 8}}\n"
      "workload: {type: narrativeqa, requests: 24, rate: 4, seed: 3, narrativeqa: {documents: "
      "8}}\ncheck: true\n",
      r);
  EXPECT_EQ(r.records.size() + r.totals.requests_rejected, 24u);
  // The replica's CXL capacity, split over its ranks, adds up again; its hits load from it.
  EXPECT_EQ(figure(r.summary, r.totals, "tiers_cxl_capacity_bytes"), 200e9);
  EXPECT_GT(figure(r.summary, r.totals, "tiers_cxl_loaded_bytes"), 0.0);
  int loaded = 0;
  for (const RequestRecord& q : r.records) {
    EXPECT_EQ(q.load_path, "layerwise");
    if (q.bytes_loaded > 0) {
      ++loaded;
      EXPECT_FALSE(q.load_bound.empty()) << "request " << q.id;
    }
  }
  EXPECT_GT(loaded, 0);
}

TEST(EngineLayouts, PipelineStagesLoadTheirOwnLayersAndSendActivations) {
  // Llama-3.1-70B as TP-4 x PP-2 on one node: each stage's GPUs load their own layers' KV (the
  // stage's share of the request's bytes), the activations cross to the next stage every step.
  RunOut r;
  run_yaml(
      "model: llama-3.1-70b\nsystem: dgx-h100\nserving: {tp: 4, parallelism: {pp: 2}}\n"
      "workload: {type: narrativeqa, requests: 8, rate: 1, seed: 2, narrativeqa: {documents: "
      "4}}\ncheck: true\n",
      r);
  EXPECT_EQ(r.records.size(), 8u);
  EXPECT_GT(figure(r.summary, r.totals, "pp_activation_s"), 0.0);
  EXPECT_GT(figure(r.summary, r.totals, "pp_bytes"), 0.0);
}

// Pipeline micro-batches in flight (vLLM v1's batch queue, max_concurrent_batches = pp):
// Llama-3.1-8B as PP-2 on one DGX H100 node with no software cost (stack ideal, no step
// overhead), the packet back end (the activations wait replica_step's NVLink time, no HBM
// sharing) and a budget of exactly one request's tokens, so every step is one request. The
// stage times a, b and the activation time x of one such step are replica_step_cost's (checked
// by hand in tests/unit/replica_step_test.cpp); how the steps overlap is computed here by hand.
constexpr std::int64_t kBudget = 2048;
std::string pp2_yaml() {
  return "model: llama-3.1-8b\nsystem: dgx-h100\ntrace: false\ncheck: true\n"
         "serving: {tp: 1, parallelism: {pp: 2}, stack: ideal, step_overhead: 0 s,\n"
         "  link_fidelity: packet, max_num_batched_tokens: " +
         std::to_string(kBudget) + "}\nworkload: {type: narrativeqa}\n";
}
struct Stages {
  double a = 0, x = 0, b = 0;  // stage 0, activations to stage 1, stage 1
};
Stages stages(const RunSpec& spec, SeqSlice slice) {
  const ReplicaStepCost c = replica_step_cost(spec, make_replica_layout(spec), {{slice}});
  return {c.stage_local_s.at(0), c.stage_pp_s.at(0), c.stage_local_s.at(1)};
}

TEST(EngineLayouts, PipelineStagesRunOneMicroBatchEachInFlight) {
  const RunSpec spec = testing::run_spec(pp2_yaml());
  testing::Served out;
  testing::serve(spec,
                 {testing::request(1, 0, 0, kBudget), testing::request(2, 0, 0, kBudget),
                  testing::request(3, 0, 0, kBudget)},
                 out);
  const Stages s = stages(spec, SeqSlice{static_cast<double>(kBudget), 0, true});
  ASSERT_LT(s.a, s.b);  // the last stage carries the LM head: the slower one
  // Step 1 alone; step 2 is planned at once and runs stage 0 while step 1 is in stage 1; step 3
  // waits for step 1 to leave the pipeline (two in flight), then takes the free stage 0.
  const double t1 = s.a + s.x + s.b;
  const double t2 = std::max(2 * s.a + s.x, t1) + s.b;
  const double t3 = std::max(t1 + s.a + s.x, t2) + s.b;
  EXPECT_NEAR(out.rec(1).ttft_s, t1, testing::tol(t1));
  EXPECT_NEAR(out.rec(2).ttft_s, t2, testing::tol(t2));
  EXPECT_NEAR(out.rec(3).ttft_s, t3, testing::tol(t3));
  // In series (one step at a time) the third would end at 3 (a + x + b).
  EXPECT_LT(t3, 3 * t1);
}

TEST(EngineLayouts, PipelinePlansARequestAgainOnlyAfterItsMicroBatchLeftTheLastStage) {
  // One prompt of two budgets: its second chunk waits for its first to leave stage 1, though
  // stage 0 is free (vLLM's scheduled_req_ids): the chunks' stage times add up.
  const RunSpec spec = testing::run_spec(pp2_yaml());
  testing::Served out;
  testing::serve(spec, {testing::request(1, 0, 0, 2 * kBudget)}, out);
  const double T = static_cast<double>(kBudget);
  const Stages c1 = stages(spec, SeqSlice{T, 0, false});
  const Stages c2 = stages(spec, SeqSlice{T, T, true});
  const double end = (c1.a + c1.x + c1.b) + (c2.a + c2.x + c2.b);
  EXPECT_NEAR(out.rec(1).ttft_s, end, testing::tol(end));
}

}  // namespace
}  // namespace engine_layouts_test
}  // namespace kappasim
