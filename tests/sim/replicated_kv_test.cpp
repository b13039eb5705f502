// Replicated KV loaded once (issue 23 item 5; serving.replicated_kv: shard_allgather; serving/
// step_group.cpp start_gather): the engine loads 1/r of every GPU's KV over its host link and
// all-gathers the rest over NVLink as PeerGpu transfers in the fabric. One isolated request per
// TEST (one simulation per process), its bytes and the all-gather's time by hand:
//   Qwen3-235B-A22B at TP 8: 48,128 B per token per GPU (94 layers × 2 × 1 head × 128 × 2 B),
//     each head on r = 2 GPUs;
//   DeepSeek-V3 at TP 8: the latent 61 × 576 × 2 = 70,272 B per token on all r = 8 GPUs;
//   NVLink 4: 450 GB/s per direction per GPU, 2.8 µs per ring step (presets/gpus/h100-sxm5.yaml,
//     h200-sxm.yaml: the fabric charges it once per transfer, the engine waits the other r − 2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"
#include "workloads/request.hpp"

namespace kappasim {
namespace replicated_kv_test {
namespace {

using namespace kappasim::testing;

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
};

Outcome serve(const RunSpec& spec, std::vector<Request> rs) {
  VectorSource src(std::move(rs));
  Outcome out;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  out.totals = run_serving(spec, src, sinks);
  return out;
}

// A serial load (block DMA, then compute) at step granularity: one copy group, one all-gather,
// with nothing else on NVLink or HBM while it runs.
std::string yaml(const std::string& model_system, const std::string& serving) {
  return model_system + "trace: false\ncheck: true\nworkload: {type: narrativeqa}\nserving: {" +
         KAPPASIM_TEST_NATIVE_STACK +
         "warm_tier: true, store: none, load_path: block_dma, granularity: step, " + serving +
         "}\n";
}
const char* const kQwen = "model: qwen3-235b-a22b\nsystem: dgx-h100\n";
const char* const kDeepSeek = "model: deepseek-v3\nsystem: {preset: dgx-h100, gpu: h200-sxm}\n";
constexpr double kNvlink = 450e9, kStep = 2.8e-6;
constexpr std::int64_t K = 4096, T = 128;  // 16 chunks of 256

TEST(ReplicatedKvEngine, Qwen3Tp8HostBytesHalveAndTheOtherHalfCrossesNvlink) {
  const Outcome o =
      serve(run_spec(yaml(kQwen, "tp: 8, replicated_kv: shard_allgather")), {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  // each_rank would load 4096 × 48,128 = 197,132,288 B per GPU; sharded over r = 2 each GPU's
  // host link carries 98,566,144 B and it sends the same 98,566,144 B to its pair over NVLink.
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, 98566144.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_allgather_bytes_per_gpu, 98566144.0);
  EXPECT_TRUE(o.totals.kv_shard);
  EXPECT_DOUBLE_EQ(o.totals.kv_replication, 2.0);
  // The request's host-link bytes over the TP group: 8 × 98,566,144 = 788,529,152 B.
  EXPECT_DOUBLE_EQ(o.recs[0].bytes_loaded, 788529152.0);
  // Model-level bytes count each token's KV once: 4096 × 192,512 = 788,529,152 B (now equal to
  // what crossed the host links: the shards add up to one copy).
  EXPECT_DOUBLE_EQ(o.totals.h2d_model_bytes, 788529152.0);
  // The ring of 2: one step, 2.8 µs + 98,566,144 / 450e9 = 2.8 + 219.0359 µs = 221.8359 µs.
  const double gather = kStep + 98566144.0 / kNvlink;
  EXPECT_NEAR(o.totals.kv_allgather_s, gather, tol(gather));
  EXPECT_GT(o.recs[0].load_s, gather);  // the shards first, then the gather
}

// Issue 25, serving.kv_cache: hybrid: sharded by bytes. Qwen3-Next-80B-A3B at TP 4: each GPU
// holds 1 of the 2 KV heads (r = 2) of the 12 full layers, 12 × 2 × 256 × 2 B = 12,288 B per
// token, and a quarter of the 36 Gated DeltaNet states, 36 × 1,097,728 / 4 = 9,879,552 B, which
// no other GPU holds (the linear heads split 4 ways: nothing to gather). K = 4096: attention
// 4096 × 12,288 = 50,331,648 B per GPU, half over its host link (25,165,824 B) and half from its
// pair over NVLink; its state whole over its host link: 25,165,824 + 9,879,552 = 35,045,376 B.
TEST(ReplicatedKvEngine, HybridQwen3NextShardsAttentionKvAndLoadsEachStateWhole) {
  const Outcome o = serve(run_spec(yaml("model: qwen3-next-80b-a3b\nsystem: dgx-h100\n",
                                        "tp: 4, kv_cache: hybrid, replicated_kv: shard_allgather")),
                          {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_DOUBLE_EQ(o.totals.kv_replication, 2.0);
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, 35045376.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_allgather_bytes_per_gpu, 25165824.0);
  // Over the 4 host links 140,181,504 B: one copy of the model's KV, 4096 × 24,576 (12 full
  // layers × 2 heads × 256 × 2 × 2 B) + 36 × 1,097,728 = 100,663,296 + 39,518,208.
  EXPECT_DOUBLE_EQ(o.recs[0].bytes_loaded, 140181504.0);
  EXPECT_DOUBLE_EQ(o.totals.h2d_model_bytes, 140181504.0);
  const double gather = kStep + 25165824.0 / kNvlink;
  EXPECT_NEAR(o.totals.kv_allgather_s, gather, tol(gather));
}

TEST(ReplicatedKvEngine, DeepSeekV3MlaTp8LoadsAnEighthAndGathersSevenEighths) {
  const Outcome o =
      serve(run_spec(yaml(kDeepSeek, "tp: 8, compute_dtype: fp8, replicated_kv: shard_allgather")),
            {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  // 4096 × 70,272 = 287,834,112 B per GPU; 1/8 = 35,979,264 B over each host link; each GPU
  // forwards the 7 other shards: 7 × 35,979,264 = 251,854,848 B over NVLink.
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, 35979264.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_allgather_bytes_per_gpu, 251854848.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_replication, 8.0);
  // The ring of 8: 7 steps of 2.8 µs + 251,854,848 / 450e9 = 19.6 + 559.6774 µs = 579.2774 µs.
  const double gather = 7 * kStep + 251854848.0 / kNvlink;
  EXPECT_NEAR(o.totals.kv_allgather_s, gather, tol(gather));
}

TEST(ReplicatedKvEngine, LayerwisePathGathersEveryLayerWithItsRingLatencies) {
  // The layer-wise path at layer granularity: one copy group per layer, so 61 all-gathers of
  // 251,854,848 / 61 B each: at least 61 × 7 × 2.8 µs + 251,854,848 / 450e9 = 1,195.6 +
  // 559.68 µs = 1,755.28 µs (more where the layers' compute shares HBM with the gather).
  const RunSpec spec = run_spec(
      std::string(kDeepSeek) +
      "trace: false\ncheck: true\nworkload: {type: narrativeqa}\nserving: {" + KAPPASIM_TEST_STACK +
      "warm_tier: true, store: none, load_path: layerwise, granularity: layer, tp: 8, "
      "compute_dtype: fp8, replicated_kv: shard_allgather}\n");
  const Outcome o = serve(spec, {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, 35979264.0);
  EXPECT_NEAR(o.totals.kv_allgather_bytes_per_gpu, 251854848.0, 1e-6);
  const double floor = 61 * 7 * kStep + 251854848.0 / kNvlink;
  EXPECT_GE(o.totals.kv_allgather_s, floor * (1 - 1e-9));
  EXPECT_LT(o.totals.kv_allgather_s, 1.5 * floor);
}

TEST(ReplicatedKvEngine, NothingReplicatedIsEachRanksRun) {
  // Llama-3.1-8B (8 KV heads) at tp 2: 4 heads per GPU, no copies (r = 1): each GPU loads its
  // whole 4096 × 65,536 = 268,435,456 B and nothing is gathered.
  const Outcome o = serve(run_spec(yaml("model: llama-3.1-8b\nsystem: dgx-h100\n",
                                        "tp: 2, replicated_kv: shard_allgather")),
                          {request(1, 0, K, T)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, 268435456.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_replication, 1.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_allgather_bytes_per_gpu, 0.0);
  EXPECT_DOUBLE_EQ(o.totals.kv_allgather_s, 0.0);
}

}  // namespace
}  // namespace replicated_kv_test
}  // namespace kappasim
