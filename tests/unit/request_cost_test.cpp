// serving/request_cost: the one request-cost model (engine's recompute choice, router, design
// study), without SystemC. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "core/config.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/request_cost.hpp"

namespace kappasim {
namespace request_cost_test {
namespace {

TEST(RequestCost, SerialAddsLayerwisePipelinesWithFillAndDrain) {
  RequestCostParts p;
  p.cpu_s = 1;
  p.load_s = 8;
  p.compute_s = 10;
  p.last_layer_s = 0.5;
  p.layers = 4;
  // Serial: 1 + 8 + 10 = 19; the load is cpu + x = 9.
  const RequestCost s = combine_request_cost(LoadOverlap::Serial, p);
  EXPECT_DOUBLE_EQ(s.total_s, 19);
  EXPECT_DOUBLE_EQ(s.load_s, 9);
  EXPECT_DOUBLE_EQ(s.compute_s, 10);
  // Layer-wise, compute-bound: 1 + max(8 + 0.5, 8 / 4 + 10) = 1 + 12 = 13 (the first layer's
  // load, 2, before compute starts).
  EXPECT_DOUBLE_EQ(combine_request_cost(LoadOverlap::Layerwise, p).total_s, 13);
  // Link-bound: x = 40: 1 + max(40.5, 10 + 10) = 41.5 (the last layer's compute after the load).
  p.load_s = 40;
  EXPECT_DOUBLE_EQ(combine_request_cost(LoadOverlap::Layerwise, p).total_s, 41.5);
  // Nothing to load: compute alone, whatever the overlap.
  RequestCostParts none;
  none.compute_s = 3;
  none.last_layer_s = 1;
  none.layers = 4;
  EXPECT_DOUBLE_EQ(combine_request_cost(LoadOverlap::Layerwise, none).total_s, 3);
  EXPECT_DOUBLE_EQ(combine_request_cost(LoadOverlap::Serial, none).total_s, 3);
}

RequestCostModel llama8b_on_h100(LoadPath path) {
  RequestCostModel m;
  m.model =
      read_preset_config<ModelSpec>(ConfigNode::make_scalar("llama-3.1-8b"), "model", "model");
  m.gpu = read_preset_config<GpuSpec>(ConfigNode::make_scalar("h100-sxm5"), "gpu", "gpu");
  m.tp = 1;
  m.path = path;
  m.kv_bytes_per_token_gpu = 131072;  // 2 (K, V) × 32 layers × 8 KV heads × 128 × 2 B
  m.load_rate_Bps = 10e9;
  m.chunk_tokens = 256;
  m.block_tokens = 16;
  m.step_overhead_s = 2e-3;
  m.budget_tokens = 4096;
  m.stack.retrieve_fixed_s = 0.5e-3;
  m.stack.retrieve_hash_per_chunk_s = 28e-6;
  m.stack.retrieve_gap_per_chunk_s = 25e-6;
  m.stack.retrieve_python_per_chunk_s = 74e-6;
  m.stack.layerwise_per_object_s = 38e-6;
  m.stack.layerwise_log_per_object_s = 67e-6;
  return m;
}

TEST(RequestCost, KernelPathLoadsTheRangeAfterTheRecomputedTokens) {
  const RequestCostModel m = llama8b_on_h100(LoadPath::Kernel);
  // K = 1,024, R = 256, T = 128: loads [256, 1024) = 768 tokens, chunks 1..3 = 3.
  // cpu = 0.5 ms + 3 × 28 µs = 0.584 ms; x = 3 × 25 µs gaps + max(768 × 131,072 B / 10 GB/s
  // + 3 × 0.24 µs copy-kernel blocks = 10.0670 ms, Python 3 × 74 µs) = 10.1420 ms.
  const RequestCostParts p = request_cost_parts(m, 1024, 128, 256);
  EXPECT_NEAR(p.cpu_s, 0.584e-3, 1e-12);
  const double x = 75e-6 + 768 * 131072 / 10e9 + 3 * 0.24e-6;
  EXPECT_NEAR(p.load_s, x, 1e-12);
  // compute: the step of {256 over no context, 128 over 1,024} + one step overhead (384 tokens
  // fit one 4,096-token budget).
  const StepTime st =
      batch_step_time(m.model, m.gpu, 1, {{256, 0, false}, {128, 1024, true}}, "bf16");
  EXPECT_NEAR(p.compute_s, st.total.compute_time_s + 2e-3, 1e-15);
  EXPECT_EQ(p.layers, 32);
  const RequestCost c = request_cost(m, 1024, 128, 256);
  EXPECT_NEAR(c.total_s, 0.584e-3 + x + p.compute_s, 1e-12);  // serial
}

TEST(RequestCost, TheIssuingCpuBoundsTheLoadWhenItOutlastsTheCopies) {
  // Layer-wise: 32 layers × 4 chunks × (38 + 67) µs = 13.44 ms of Python issuing the (layer,
  // chunk) objects, against 1,024 × 131,072 / 10 GB/s + 128 DMAs × 2.36 µs = 13.72 ms of
  // copies: the copies bound. At 20 GB/s (6.71 + 0.30 ms) the Python does.
  RequestCostModel m = llama8b_on_h100(LoadPath::Layerwise);
  const double dma = 128 * m.gpu.dma_copy_overhead_s.value_or(0);
  EXPECT_NEAR(request_cost_parts(m, 1024, 128, 0).load_s, 1024 * 131072 / 10e9 + dma, 1e-12);
  m.load_rate_Bps = 20e9;
  const RequestCostParts p = request_cost_parts(m, 1024, 128, 0);
  EXPECT_NEAR(p.load_s, 32 * 4 * 105e-6, 1e-12);
  EXPECT_NEAR(p.cpu_s, 0.5e-3 + 4 * 28e-6, 1e-12);  // up-front re-hash, no gaps
  const RequestCost c = request_cost(m, 1024, 128, 0);
  EXPECT_NEAR(c.total_s, p.cpu_s + std::max(p.load_s + p.last_layer_s, p.load_s / 32 + p.compute_s),
              1e-12);
}

TEST(RequestCost, RecomputeChoiceFollowsTheLinkRate) {
  // 131,072 B per token at 1 GB/s = 131 µs per loaded token against a few µs to recompute one
  // on an H100: recompute the whole prefix. At 10 TB/s (13 ps per token) keep loading.
  RequestCostModel m = llama8b_on_h100(LoadPath::Kernel);
  m.stack = StackProfile{};
  m.load_rate_Bps = 1e9;
  EXPECT_EQ(choose_recompute_tokens(m, 8192, 128), 8192);
  m.load_rate_Bps = 10e12;
  EXPECT_EQ(choose_recompute_tokens(m, 8192, 128), 0);
  EXPECT_EQ(choose_recompute_tokens(m, 0, 128), 0);
}

}  // namespace
}  // namespace request_cost_test
}  // namespace kappasim
