// The serving stack profiles in the engine (serving/stack_profile, presets/stacks/): each cost
// charged where it sits (on every tier, the on-package one too), `ideal` = the hardware bound,
// the per-rank pool dropping stores, and a warm tier that holds only what fits.
// Hand numbers from the preset files, in the comments; one simulation per test (process).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "models/gpu/copy_engine.hpp"
#include "serving/engine.hpp"
#include "serving/measure.hpp"
#include "tests/sim/serving_test_util.hpp"
#include "workloads/request.hpp"

namespace kappasim {
namespace serving_stack_test {
namespace {

using namespace kappasim::testing;

// Llama-3.1-8B on one H100: K = 4096 cached (16 chunks of 256), T = 128; the prompt's 4224
// tokens are 16 full chunks. B_kv = 131,072 B per token: 536,870,912 B to load.
constexpr std::int64_t kK = 4096, kT = 128;
constexpr double kChunks = 16, kLayers = 32;
// The SM-read rate on the DGX H100 host: PCIe 5 x16 wire over (1 + 20/64 + 2/64) wire bytes per
// payload byte (see serving_engine_test.cpp): 46.77 GB/s, below the tag and DRAM limits.
const double kSmRate = kWire / (1 + 20.0 / 64 + 2.0 / 64);

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
};

Outcome serve(const RunSpec& spec, const std::vector<Request>& rs, bool warm_from_stream = false) {
  VectorSource src(rs);
  Outcome out;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  if (warm_from_stream) sinks.warm_source = [rs] { return std::make_unique<VectorSource>(rs); };
  out.totals = run_serving(spec, src, sinks);
  return out;
}

RunSpec spec_with(const std::string& serving) {
  return run_spec(std::string(kLlama8bH100) + "serving: {" + serving + "}\n");
}

TEST(ServingStack, IdealKernelLoadIsTheHardwareBound) {
  const RunSpec spec =
      spec_with("stack: ideal, tp: 1, warm_tier: true, store: none, load_path: kernel");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  // Only the copy hardware: 16 copy-kernel blocks × 0.24 µs, one 1 µs round trip, the bytes at
  // the SM-read rate.
  const double load = kChunks * kBlockOverhead + kRtt + kK * kBkv8b / kSmRate;
  EXPECT_NEAR(r.load_s, load, tol(load));
  const double compute = step_compute(spec, {{double(kT), double(kK), true}});
  EXPECT_NEAR(r.ttft_s, kStepOverhead + load + compute, tol(kStepOverhead + load + compute));
  EXPECT_DOUBLE_EQ(o.totals.stack_scheduler_s + o.totals.stack_step_cpu_s +
                       o.totals.stack_gpu_gap_s + o.totals.stack_cpu_bound_s,
                   0);
}

TEST(ServingStack, Lmcache035KernelChargesEachCostWhereItSits) {
  const RunSpec spec =
      spec_with("stack: lmcache-0.3.5, tp: 1, warm_tier: true, store: none, load_path: kernel");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  // Scheduler path: lookup re-hashes 16 chunks at 27 µs (0.432 ms); build_connector_meta
  // converts 4224 tokens at 110 ns (0.46464 ms).
  const double sched = kChunks * 27e-6 + 4224 * 110e-9;
  EXPECT_NEAR(o.totals.stack_scheduler_s, sched, 1e-12);
  // In step: 0.5 ms + 16 × 28 µs = 0.948 ms before the copies; the copies (hardware as in the
  // ideal test); 16 GPU gaps of 25 µs = 0.4 ms; the Python (16 × 74 µs = 1.184 ms) runs
  // alongside 11.5 ms of copies and adds nothing.
  const double copies = kChunks * kBlockOverhead + kRtt + kK * kBkv8b / kSmRate;
  ASSERT_GT(copies, kChunks * 74e-6);
  const double load = 0.5e-3 + kChunks * 28e-6 + copies + kChunks * 25e-6;
  EXPECT_NEAR(r.load_s, load, tol(load));
  EXPECT_NEAR(o.totals.stack_step_cpu_s, 0.948e-3, 1e-12);
  EXPECT_NEAR(o.totals.stack_gpu_gap_s, 0.4e-3, 1e-12);
  EXPECT_DOUBLE_EQ(o.totals.stack_cpu_bound_s, 0);
  const double compute = step_compute(spec, {{double(kT), double(kK), true}});
  const double ttft = kStepOverhead + sched + load + compute;
  EXPECT_NEAR(r.ttft_s, ttft, tol(ttft));
}

// Issue 20 item 3: an end-to-end TTFT adds the stack's front end before the scheduler (1 ms HTTP
// + 4224 prompt tokens × 1.1 µs + 0.1 ms engine-core hop = 5.7464 ms), the output path after
// the first token (0.15 ms), and to the lookup its RPC (50 µs) and torch.tensor of the prompt
// (4224 × 110 ns = 0.46464 ms); everything else as in the engine-TTFT test above.
TEST(ServingStack, EndToEndTtftAddsTheFrontEndAndTheLookupRpc) {
  const RunSpec spec = spec_with(
      "stack: lmcache-0.3.5, tp: 1, warm_tier: true, store: none, load_path: kernel, "
      "ttft: end_to_end");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  const double fe_in = 1e-3 + 4224 * 1.1e-6 + 0.1e-3, fe_out = 0.15e-3;
  const double sched = kChunks * 27e-6 + 4224 * 110e-9 + 50e-6 + 4224 * 110e-9;
  EXPECT_NEAR(o.totals.stack_scheduler_s, sched, 1e-12);
  const double copies = kChunks * kBlockOverhead + kRtt + kK * kBkv8b / kSmRate;
  const double load = 0.5e-3 + kChunks * 28e-6 + copies + kChunks * 25e-6;
  EXPECT_NEAR(r.load_s, load, tol(load));
  const double compute = step_compute(spec, {{double(kT), double(kK), true}});
  const double ttft = fe_in + kStepOverhead + sched + load + compute + fe_out;
  EXPECT_NEAR(r.ttft_s, ttft, tol(ttft));
  EXPECT_NEAR(r.front_end_s, fe_in + fe_out, 1e-15);
  // Its one lookup (scheduled at once, never the waiting head again): 50 µs RPC + 4224 × 110 ns
  // = 0.51464 ms of tier_request, inside the scheduler's software (not the front end).
  const double tier_req = 50e-6 + 4224 * 110e-9;
  EXPECT_NEAR(r.tier_request_s, 0.51464e-3, 1e-15);
  EXPECT_NEAR(r.time.sched_software_s, sched, 1e-12);
  EXPECT_GT(r.time.sched_software_s, r.tier_request_s);
  // The front end is neither queueing nor in the breakdown: the categories sum to TTFT less it.
  EXPECT_NEAR(r.queue_s, 0, 1e-12);
  EXPECT_NEAR(r.time.sum() + r.front_end_s, r.ttft_s, tol(ttft));
  EXPECT_TRUE(o.totals.end_to_end);
  SummaryBuilder b;
  b.add_request(r);
  int found = 0;
  for (const auto& [k, v] : b.figures(o.totals))
    if (k == "front_end_mean_s") {
      ++found;
      EXPECT_NEAR(v, fe_in + fe_out, 1e-15);
    } else if (k == "tier_request_mean_s") {
      ++found;
      EXPECT_NEAR(v, tier_req, 1e-15);
    }
  EXPECT_EQ(found, 2);
  // requests.csv carries both (front_end_s = 5.7464 + 0.15 ms = 5.8964 ms): written and read
  // back by name.
  const std::string path = ::testing::TempDir() + "/e2e_requests.csv";
  {
    RequestsCsvWriter w(path);
    w.write(r);
    w.close();
  }
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const auto cell = [&](const std::string& name) {
    std::stringstream h(header), v(row);
    std::string c, x;
    while (std::getline(h, c, ',')) {
      std::getline(v, x, ',');
      if (c == name) return std::stod(x);
    }
    return -1.0;
  };
  EXPECT_NEAR(cell("front_end_s"), 5.8964e-3, 1e-15) << header;
  EXPECT_NEAR(cell("tier_request_s"), 0.51464e-3, 1e-15) << header;
}

// vLLM's native connector looks up in the scheduler's own process (tier_request 0): an
// end-to-end TTFT charges the front end and nothing per lookup.
TEST(ServingStack, EndToEndTtftOnTheNativeStackHasNoTierRequestCost) {
  const RunSpec spec = spec_with(
      "stack: vllm-native-0.12, tp: 1, warm_tier: true, store: none, load_path: block_dma, "
      "ttft: end_to_end");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_NEAR(o.recs[0].front_end_s, 1e-3 + 4224 * 1.1e-6 + 0.1e-3 + 0.15e-3, 1e-15);
  EXPECT_DOUBLE_EQ(o.recs[0].tier_request_s, 0);
}

// One API server process: two requests arriving together leave the front end one after the
// other, so the second reaches the scheduler 2 × 5.7464 ms after it arrived.
TEST(ServingStack, TheFrontEndServesOneRequestAtATime) {
  const RunSpec spec = spec_with(
      "stack: lmcache-0.3.5, tp: 1, warm_tier: true, store: none, load_path: kernel, "
      "ttft: end_to_end, max_num_batched_tokens: 100000");
  const Outcome o = serve(spec, {request(1, 0, kK, kT), request(2, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double fe_in = 1e-3 + 4224 * 1.1e-6 + 0.1e-3;
  for (const RequestRecord& r : o.recs)
    EXPECT_NEAR(r.front_end_s, fe_in + 0.15e-3, 1e-15);  // its own service, not the wait
  const RequestRecord& second = o.recs[0].id == 2 ? o.recs[0] : o.recs[1];
  const RequestRecord& first = o.recs[0].id == 1 ? o.recs[0] : o.recs[1];
  EXPECT_GE(second.ttft_s, first.ttft_s - 1e-12);
  // The first reached the scheduler after its own service and was scheduled at once; the
  // second waited one front-end service behind the first (counted as queueing) before its own.
  EXPECT_NEAR(first.queue_s, 0, 1e-12);
  EXPECT_GE(second.queue_s, fe_in - 1e-12);
  EXPECT_GE(second.time.queue_s, fe_in - 1e-12);
}

// The default (engine TTFT) charges none of it and writes the config it always wrote.
TEST(ServingStack, EngineTtftIsTheDefaultAndShowsNoFrontEnd) {
  const RunSpec spec =
      spec_with("stack: lmcache-0.3.5, tp: 1, warm_tier: true, store: none, load_path: kernel");
  EXPECT_EQ(spec.serving.ttft, TtftMode::Engine);
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_DOUBLE_EQ(o.recs[0].front_end_s, 0);
  EXPECT_DOUBLE_EQ(o.recs[0].tier_request_s, 0);
  EXPECT_FALSE(o.totals.end_to_end);
  SummaryBuilder b;
  b.add_request(o.recs[0]);
  for (const auto& [k, v] : b.figures(o.totals)) {
    EXPECT_NE(k, "front_end_mean_s");
    EXPECT_NE(k, "tier_request_mean_s");
  }
  RunSpec w = spec;
  const std::string yaml = emit_yaml(write_config(w.serving), false);
  for (const char* key : {"front_end", "tier_request", "nvme_read_queue_depth", "ttft:"})
    EXPECT_EQ(yaml.find(key), std::string::npos) << key;
  w.serving.ttft = TtftMode::EndToEnd;
  const std::string e2e = emit_yaml(write_config(w.serving), false);
  for (const char* key : {"front_end", "tier_request", "ttft: end_to_end"})
    EXPECT_NE(e2e.find(key), std::string::npos) << key;
}

// Issue 20 item 3: a DMA stream of n copies from NVMe waits a read latency after each copy (one
// read in flight: LMCache's LocalDiskBackend, nvme_read_queue_depth 1, and the default); a
// connector keeping q > 1 reads in flight waits ceil(n / q) latencies. Writes and other
// endpoints are unchanged.
TEST(ServingStack, NvmeReadQueueDepthSetsTheSerialLatencies) {
  TransferRequest r;
  r.endpoint = Endpoint::Nvme;
  r.dir = Direction::H2D;
  EXPECT_EQ(dma_read_waves(r, 10), 10);  // 0: one at a time
  r.queue_depth = 1;
  EXPECT_EQ(dma_read_waves(r, 10), 10);
  r.queue_depth = 4;
  EXPECT_EQ(dma_read_waves(r, 10), 3);  // ceil(10 / 4)
  r.queue_depth = 32;
  EXPECT_EQ(dma_read_waves(r, 10), 1);
  r.dir = Direction::D2H;
  EXPECT_EQ(dma_read_waves(r, 10), 10);
  r.dir = Direction::H2D;
  r.endpoint = Endpoint::HostDram;
  EXPECT_EQ(dma_read_waves(r, 10), 10);
  // The stream's fixed time on an H100 (dma_copy_overhead, presets/gpus/h100-sxm5.yaml) for 10
  // copies of an 80 µs + 1 µs read: q = 1: 10 × overhead + 9 × 81 µs; q = 4: 10 × overhead +
  // 2 × 81 µs.
  const RunSpec spec = spec_with("stack: ideal");
  const double ovh = spec.system.gpu.dma_copy_overhead_s.value_or(0);
  EXPECT_NEAR(dma_stream_fixed_s(spec.system.gpu, 10, 81e-6), 10 * ovh + 9 * 81e-6, 1e-15);
  EXPECT_NEAR(dma_stream_fixed_s(spec.system.gpu, 10, 0) + (3 - 1) * 81e-6, 10 * ovh + 2 * 81e-6,
              1e-15);
}

// Layer-wise at step granularity, CPU-bound: every layer's 16 objects are issued in Python on
// the rank (0.3.5: 38 µs + the 67 µs WARNING line each; 0.3.7: 38 µs) and the copies (536 MB of
// 512 DMAs, under 14 ms) finish first. TTFT = step overhead + scheduler path + 0.948 ms up front
// + max(32 layers' issue + the last layer's compute, one layer's issue + the compute).
double layerwise_ttft(const RunSpec& spec, double per_object, double meta) {
  const double layer_cpu = kChunks * per_object;
  const double sched = kChunks * 27e-6 + kChunks * kLayers * 1.68e-6 + meta;
  const StepTime st =
      batch_step_time(spec.model, spec.system.gpu, 1, {{double(kT), double(kK), true}}, "bf16");
  const double pipe =
      std::max(kLayers * layer_cpu + st.last_layer_s, layer_cpu + st.total.compute_time_s);
  return kStepOverhead + sched + 0.5e-3 + kChunks * 28e-6 + pipe;
}

TEST(ServingStack, Lmcache035LayerwisePaysTheLogLinePerObject) {
  const RunSpec spec = spec_with(
      "stack: lmcache-0.3.5, tp: 1, warm_tier: true, store: none, load_path: layerwise, "
      "granularity: step");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  ASSERT_LT(kK * kBkv8b / 45e9 + 512 * 3e-6, kLayers * kChunks * 38e-6);  // CPU-bound
  const double ttft = layerwise_ttft(spec, 38e-6 + 67e-6, 4224 * 110e-9);
  EXPECT_NEAR(o.recs[0].ttft_s, ttft, tol(ttft));
}

TEST(ServingStack, Lmcache037LayerwiseHasNoLogLineAndNoMetadata) {
  // Same request: 32 × 16 × 67 µs = 34.304 ms and the 0.46464 ms of metadata faster than 0.3.5.
  const RunSpec spec = spec_with(
      "stack: lmcache-0.3.7, tp: 1, warm_tier: true, store: none, load_path: layerwise, "
      "granularity: step");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  const double ttft = layerwise_ttft(spec, 38e-6, 0);
  EXPECT_NEAR(o.recs[0].ttft_s, ttft, tol(ttft));
}

// The stack's software does not depend on where the tier's bytes sit (issue 22: like for like):
// LMCache 0.3.5 on the on-package unified-HBM tier pays the same scheduler-path, in-step and gap
// costs as on the PCIe host of Lmcache035KernelChargesEachCostWhereItSits (the same 16 chunks,
// 4224 tokens, from presets/stacks/lmcache-0.3.5.yaml); only the copies are the tier's own. A tier
// with no connector's software is the `ideal` stack (IdealKernelLoadIsTheHardwareBound).
TEST(ServingStack, UnifiedHbmTierPaysTheStacksSoftwareLikeAnyTier) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: unified-hbm\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {stack: lmcache-0.3.5, tp: 1, warm_tier: true, store: none, load_path: kernel}\n");
  const Outcome o = serve(spec, {request(1, 0, kK, kT)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  EXPECT_EQ(r.cached_tokens, kK);
  EXPECT_NEAR(o.totals.stack_scheduler_s, kChunks * 27e-6 + 4224 * 110e-9, 1e-12);
  EXPECT_NEAR(o.totals.stack_step_cpu_s, 0.948e-3, 1e-12);
  EXPECT_NEAR(o.totals.stack_gpu_gap_s, 0.4e-3, 1e-12);
  // The load is the up-front CPU, the copies and the gaps: at least the 1.348 ms of software
  // beyond the copies' busy time.
  EXPECT_GE(r.load_s, o.totals.link_busy_s + 0.948e-3 + 0.4e-3 - tol(r.load_s));
  // Its tier is its own 192 GB (presets/links/unified-hbm.yaml), not LMCache's 5 GB pool.
  EXPECT_DOUBLE_EQ(o.totals.tier_capacity_bytes, 192e9);
}

TEST(ServingStack, PoolSmallerThanAChunkDropsEveryStore) {
  // 10 MB per rank cannot hold one 256-token chunk (256 × 131,072 B = 33.5 MB): LMCache drops
  // the store ("Local cpu memory under pressure"); no D2H copy, no store software.
  const RunSpec spec =
      spec_with("stack: {preset: lmcache-0.3.7, pool_per_rank: 10 MB}, tp: 1, load_path: kernel");
  const Outcome o = serve(spec, {request(1, 0, 1024, 128)});  // 1152 tokens: 4 full chunks
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_DOUBLE_EQ(o.totals.tier_dropped_chunks, 4);
  EXPECT_DOUBLE_EQ(o.totals.tier_stored_chunks, 0);
  EXPECT_DOUBLE_EQ(o.recs[0].bytes_stored, 0);
  EXPECT_DOUBLE_EQ(o.totals.stack_store_s, 0);
  EXPECT_DOUBLE_EQ(o.totals.tier_capacity_bytes, 10e6);
}

TEST(ServingStack, WarmTierHoldsOnlyWhatFitsInStreamOrder) {
  // Two documents of 4 chunks each; the pool holds 4 chunks (4 × 33,554,432 B). Warming from
  // the stream places A then B: B evicts A. So A, first in the run, misses; B hits.
  const RunSpec spec = spec_with(
      "stack: {preset: lmcache-0.3.7, pool_per_rank: 134217728 B}, tp: 1, warm_tier: true, "
      "store: none, load_path: kernel");
  const Outcome o = serve(spec, {request(1, 0, 1024, 128), request(2, 1, 1024, 128)}, true);
  ASSERT_EQ(o.recs.size(), 2u);
  for (const RequestRecord& r : o.recs) EXPECT_EQ(r.cached_tokens, r.id == 1 ? 0 : 1024) << r.id;
  EXPECT_DOUBLE_EQ(o.totals.tier_warm_chunks, 8);
  EXPECT_DOUBLE_EQ(o.totals.tier_evicted_chunks, 4);
  EXPECT_DOUBLE_EQ(o.totals.tier_working_set_bytes, 8 * 33554432.0);
  EXPECT_GT(o.totals.tier_working_set_bytes, o.totals.tier_capacity_bytes);  // does not fit
}

}  // namespace
}  // namespace serving_stack_test
}  // namespace kappasim

namespace kappasim {
namespace serving_stack_test {
namespace {

TEST(ServingStack, IsolatedProbesHoldThePrefixInHostDram) {
  // measure (κ_crit, P_OH) holds the probe's prefix in CPU memory, as the κ paper does: without
  // serving.tier_capacity the pool is host DRAM less the stack's reserve, 2 TB × 0.75 = 1.5 TB on
  // paper-testbed, not LMCache's 5 GB per rank (which would not hold a 104k-token Qwen3 prefix).
  const RunSpec spec = isolated_run_spec(
      parse_yaml("model: qwen3-235b-a22b\nsystem: paper-testbed\n", "<test>"), 8, nullptr);
  ASSERT_TRUE(spec.serving.tier_capacity_bytes);
  EXPECT_DOUBLE_EQ(*spec.serving.tier_capacity_bytes, 2e12 * 0.75);
  EXPECT_EQ(spec.serving.stack.name, "lmcache-0.3.5");
}

}  // namespace
}  // namespace serving_stack_test
}  // namespace kappasim

namespace kappasim {
namespace serving_stack_test {
namespace {

TEST(ServingStack, LookupIsRepeatedWhileTheHeadWaits) {
  // The FIFO head-of-line case of serving_engine_test.cpp (PolicyCase): R1 and R2 each hold
  // 196,608 cached + 128 new tokens and cannot run together; R3 is 1,024 + 128. Step 1 admits
  // R1 (looked up) and reaches R2, which is looked up and fails to allocate; step 2 admits R2
  // (looked up again) and R3. Prompt chunks: R1, R2 floor(196,736 / 256) = 768; R3 4. With
  // lmcache-0.3.7's 27 µs per chunk: (768 + 768 + 768 + 4) × 27 µs = 62.316 ms on the
  // scheduler's path. (The tier is sized to hold the prefixes: 5 GB would not.)
  const RunSpec spec = spec_with(
      "stack: lmcache-0.3.7, tp: 1, warm_tier: true, tier_capacity: 1 TB, store: none, "
      "policy: fifo");
  const Outcome o = serve(
      spec, {request(1, 0, 196608, 128), request(2, 0, 196608, 128), request(3, 0, 1024, 128)});
  ASSERT_EQ(o.recs.size(), 3u);
  EXPECT_NEAR(o.totals.stack_scheduler_s, (768 + 768 + 768 + 4) * 27e-6, 1e-12);
}

// The same requests with an end-to-end TTFT whose front end costs nothing before the scheduler
// (so they reach it together, as above): each lookup of a request also charges it 50 µs + its
// prompt × 110 ns (R1, R2: 50e-6 + 196,736 × 110e-9 = 21.69096 ms; R3: 50e-6 + 1,152 × 110e-9 =
// 0.17672 ms). R2 is looked up twice (it waits at the head through step 1): 43.38192 ms; the
// scheduler's software is (768 + 768 + 768 + 4) × 27 µs + the four charges = 62.316 + 3 ×
// 21.69096 + 0.17672 = 127.5656 ms.
TEST(ServingStack, TierRequestCostIsChargedToTheRequestOnEveryLookup) {
  const RunSpec spec = spec_with(
      "tp: 1, warm_tier: true, tier_capacity: 1 TB, store: none, "
      "policy: fifo, ttft: end_to_end, stack: {preset: lmcache-0.3.7, front_end: {http: 0 s, "
      "tokenize_per_token: 0 s, ipc: 0 s}}");
  const Outcome o = serve(
      spec, {request(1, 0, 196608, 128), request(2, 0, 196608, 128), request(3, 0, 1024, 128)});
  ASSERT_EQ(o.recs.size(), 3u);
  for (const RequestRecord& r : o.recs) {
    const double want = r.id == 1 ? 21.69096e-3 : r.id == 2 ? 43.38192e-3 : 0.17672e-3;
    EXPECT_NEAR(r.tier_request_s, want, 1e-12) << r.id;
  }
  EXPECT_NEAR(o.totals.stack_scheduler_s,
              (768 + 768 + 768 + 4) * 27e-6 + 3 * 21.69096e-3 + 0.17672e-3, 1e-12);
}

}  // namespace
}  // namespace serving_stack_test
}  // namespace kappasim
