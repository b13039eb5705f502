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

// A micro-batch waiting for a stage busy with another is not compute (issue 21): the requests'
// queue, the figure pp_stage_wait_s, and the GPUs' time leaves it out. The three steps above:
// step 2 waits for stage 0 while step 1 runs it (a), then for stage 1 until step 1 leaves it
// (t1 − (2a + x) = b − a); step 3, planned at t1, reaches stage 1 at t1 + a + x while step 2
// holds it until t2 = t1 + b: it waits max(0, b − a − x).
TEST(EngineLayouts, PipelineWaitForABusyStageIsQueueNotCompute) {
  const RunSpec spec = testing::run_spec(pp2_yaml());
  testing::Served out;
  testing::serve(spec,
                 {testing::request(1, 0, 0, kBudget), testing::request(2, 0, 0, kBudget),
                  testing::request(3, 0, 0, kBudget)},
                 out);
  const Stages s = stages(spec, SeqSlice{static_cast<double>(kBudget), 0, true});
  ASSERT_LT(s.a, s.b);
  const double t1 = s.a + s.x + s.b, own = s.a + s.x + s.b;
  const double w2 = s.a + (s.b - s.a), w3 = std::max(0.0, s.b - s.a - s.x);
  EXPECT_NEAR(out.rec(1).time.compute_s, own, testing::tol(own));
  EXPECT_NEAR(out.rec(1).time.queue_s, 0, 1e-12);
  EXPECT_NEAR(out.rec(2).time.compute_s, own, testing::tol(own));
  EXPECT_NEAR(out.rec(2).time.queue_s, w2, testing::tol(w2));
  EXPECT_NEAR(out.rec(3).time.compute_s, own, testing::tol(own));
  EXPECT_NEAR(out.rec(3).time.queue_s, t1 + w3, testing::tol(t1 + w3));
  EXPECT_NEAR(out.figure("pp_stage_wait_s"), w2 + w3, testing::tol(w2 + w3));
  // The GPUs' time: the steps' compute, no wait in it, a step counting 1/pp (a stage's GPUs
  // hold one of the pp micro-batches in flight); with idle it sums to the simulated time, though
  // the steps overlap (their times add up to more than the run's).
  EXPECT_NEAR(out.totals.time.compute_s, 3 * own / 2, testing::tol(3 * own));
  EXPECT_NEAR(out.totals.time.sum(), out.totals.simulated_time_s,
              testing::tol(out.totals.simulated_time_s));
  EXPECT_GT(3 * own, out.totals.simulated_time_s);  // the steps' times alone would exceed it
}

// KV loads on pipeline stages (issue 21), as vLLM's PP workers run them: stage s's worker loads
// its own layers' KV (half of Llama-3.1-8B's 32 layers here) when stage s − 1's worker has
// launched its forward, so stage 1's load runs while stage 0 computes, and stage 1 computes
// once its load and stage 0's activations are there. The kernel path (KAPPASIM_TEST_STACK: no
// copy-kernel shape, link-bound at the SM read's wire rate, as tests/sim/serving_engine_test.cpp
// computes it); every stage's worker pays its own retrieve. Two isolated requests: one whose
// stage load outlasts stage 0's compute (stage 1 waits for its load), one the other way round.
constexpr double kRetrieveFixed = 0.5e-3, kRetrievePerChunk = 0.1e-3;  // KAPPASIM_TEST_STACK
constexpr double kChunk = 256;                                         // chunk_tokens
constexpr double kBlockOverhead =
    0.24e-6;                              // presets/gpus/h100-sxm5.yaml copy_kernel_block_overhead
constexpr double kDmaOverhead = 2.36e-6;  // presets/gpus/h100-sxm5.yaml dma_copy_overhead
const double kSmReadCost = 1 + 20.0 / 64 + 2.0 / 64;         // 64 B reads, 128 B completions
const double kDmaReadCost = 1 + 4 * 20.0 / 512 + 2.0 / 512;  // 512 B reads
std::string pp2_load_yaml(const std::string& path) {
  return "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\n"
         "serving: {" KAPPASIM_TEST_STACK
         "tp: 1, parallelism: {pp: 2}, step_overhead: 0 s, warm_tier: true, store: none, " +
         path + "}\nworkload: {type: narrativeqa}\n";
}

TEST(EngineLayouts, PipelineStagesLoadTheirOwnLayersAsTheMicroBatchReachesThem) {
  const RunSpec spec = testing::run_spec(pp2_load_yaml("load_path: kernel"));
  const std::vector<std::int64_t> Ks = {8192, 1024}, Ts = {128, 4096};
  testing::Served out;
  testing::serve(
      spec, {testing::request(1, 0, Ks[0], Ts[0]), testing::request(2, 100, Ks[1], Ts[1])}, out);
  const double rate = testing::kWire / kSmReadCost;
  bool load_bound = false, compute_bound = false;
  for (std::size_t i = 0; i < 2; ++i) {
    const double K = static_cast<double>(Ks[i]), chunks = K / kChunk;
    // One stage's load: its worker's retrieve, the copy kernel's blocks, a round trip, and half
    // the request's KV bytes (its 16 layers) at the link's rate.
    const double load = kRetrieveFixed + chunks * kRetrievePerChunk + chunks * kBlockOverhead +
                        testing::kRtt + K * testing::kBkv8b / 2 / rate;
    const Stages s = stages(spec, SeqSlice{static_cast<double>(Ts[i]), K, true});
    // Stage 0: load, compute a, activations x; stage 1: its load from `load` on, compute b
    // once both its load and the activations are there.
    const double start1 = std::max(2 * load, load + s.a + s.x);
    (2 * load > load + s.a + s.x ? load_bound : compute_bound) = true;
    const double ttft = start1 + s.b;
    const RequestRecord& r = out.rec(i + 1);
    EXPECT_NEAR(r.ttft_s, ttft, testing::tol(ttft)) << r.id;
    EXPECT_NEAR(r.load_s, 2 * load, testing::tol(2 * load)) << r.id;  // to stage 1's load end
    EXPECT_NEAR(r.time.sum(), r.ttft_s, 1e-12) << r.id;  // the categories sum to the TTFT
  }
  EXPECT_TRUE(load_bound);
  EXPECT_TRUE(compute_bound);
}

// The layer-wise pipeline per stage (issue 21): each stage's worker loads and computes its own
// 16 layers a layer at a time (granularity layer: layer 0's load, then 15 rounds of max(load,
// compute), then the last layer's compute), and stage 1's worker starts once stage 0's has
// launched its last layer, that is after stage 0's loads. Load-bound (a layer's DMA outlasts a
// layer's compute on both stages): TTFT = 2 retrieves + 32 layer loads + stage 1's last layer.
TEST(EngineLayouts, PipelineStagesRunTheLayerwisePipelineOverTheirOwnLayers) {
  const RunSpec spec = testing::run_spec(pp2_load_yaml("load_path: layerwise, granularity: layer"));
  const std::int64_t K = 4096, T = 128;
  testing::Served out;
  testing::serve(spec, {testing::request(1, 0, K, T)}, out);
  const double chunks = K / kChunk;
  const double rate = testing::kWire / kDmaReadCost;
  const double R = kRetrieveFixed + chunks * kRetrievePerChunk;
  // One layer's load on a stage's GPU: one DMA per chunk, one layer's KV (1/32 of B_kv).
  const double l = chunks * kDmaOverhead + chunks * testing::kRtt + K * testing::kBkv8b / 32 / rate;
  const Stages s = stages(spec, SeqSlice{static_cast<double>(T), static_cast<double>(K), true});
  const double c0 = s.a / 16, c1 = s.b / 16;
  ASSERT_GT(l, c0);
  ASSERT_GT(l, c1);
  ASSERT_LT(R + 16 * l + c0 + s.x,
            2 * R + 17 * l);  // the activations come before stage 1 needs them
  const double ttft = 2 * R + 32 * l + c1;
  const RequestRecord& r = out.rec(1);
  EXPECT_NEAR(r.ttft_s, ttft, 4 * 32 * 1e-12 + 1e-9 * ttft);
}

// The same pipeline with a CPU-bound issue (issue 21): each stage's worker spends 50 µs of
// Python per (layer, chunk) object, 16 × 50 µs = 0.8 ms a layer, more than a layer's DMA. Layer
// by layer each round takes that CPU; as one flow (granularity step) the stage's loads end no
// earlier than the CPU has issued all 16 layers, and stage 1's worker starts only then (before,
// it started when the copies ended). Both: TTFT = 2 retrieves + 32 layers' CPU + the drain.
struct IssueBound {
  double ttft = 0, hand = 0, drain = 0, stage_b = 0;
};
IssueBound issue_bound_run(const std::string& granularity) {
  const std::int64_t K = 4096, T = 128;
  const double chunks = K / kChunk, cpu = chunks * 50e-6;  // layerwise_per_object below
  const RunSpec spec = testing::run_spec(
      "model: llama-3.1-8b\nsystem: h100\ntrace: false\ncheck: true\nserving: {"
      "stack: {family: lmcache, store: blocking, retrieve_fixed: 0.5 ms, "
      "retrieve_hash_per_chunk: 0.1 ms, store_fixed: 1.8 ms, layerwise_per_object: 50 us}, "
      "tp: 1, parallelism: {pp: 2}, step_overhead: 0 s, warm_tier: true, store: none, "
      "load_path: layerwise, granularity: " +
      granularity + "}\nworkload: {type: narrativeqa}\n");
  testing::Served out;
  testing::serve(spec, {testing::request(1, 0, K, T)}, out);
  const double R = kRetrieveFixed + chunks * kRetrievePerChunk;
  const double l = chunks * kDmaOverhead + chunks * testing::kRtt +
                   K * testing::kBkv8b / 32 / (testing::kWire / kDmaReadCost);
  const Stages s = stages(spec, SeqSlice{static_cast<double>(T), static_cast<double>(K), true});
  EXPECT_GT(cpu, l);         // CPU-bound
  EXPECT_GT(cpu, s.a / 16);  // and above a layer's compute
  IssueBound r;
  r.ttft = out.rec(1).ttft_s;
  r.drain = s.b / 16;
  r.stage_b = s.b;
  r.hand = 2 * R + 32 * cpu + r.drain;
  return r;
}

TEST(EngineLayouts, PipelineStagesWaitForTheWorkersLayerIssueLayerByLayer) {
  const IssueBound r = issue_bound_run("layer");
  EXPECT_NEAR(r.ttft, r.hand, 1e-9 * r.hand + 1e-10);
}

TEST(EngineLayouts, PipelineStagesWaitForTheWorkersLayerIssueAsOneFlow) {
  const IssueBound r = issue_bound_run("step");
  // The step's drain is the stage's last layer as timed (the LM head in it, where `layer` spreads
  // the stage's compute evenly): more than nothing, less than the whole stage. Starting stage 1
  // when the copies end (16 layers' DMA, not 16 layers' CPU) would come 7 ms earlier.
  const double issued = r.hand - r.drain;
  EXPECT_GT(r.ttft, issued);
  EXPECT_LT(r.ttft, issued + r.stage_b);
}

}  // namespace
}  // namespace engine_layouts_test
}  // namespace kappasim
