// serving/stack_profile: the serving software stacks (presets/stacks/) and their pure cost
// functions, the tier's default capacity, and the KV tier's honest counters (warm, re-stores,
// drops). Every expected number is worked out by hand from the preset files' values in the
// comments next to it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "serving/kv_tier.hpp"
#include "serving/run_spec.hpp"
#include "serving/serving_spec.hpp"
#include "serving/stack_profile.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace stack_profile_test {
namespace {

StackProfile stack(const std::string& name) {
  return read_preset_config<StackProfile>(ConfigNode::make_scalar(name), "stack", "serving.stack");
}
SystemSpec system_of(const std::string& name) {
  return read_preset_config<SystemSpec>(ConfigNode::make_scalar(name), "system", "system");
}
std::string error_of(const std::string& yaml) {
  try {
    read_config<RunSpec>(parse_yaml(yaml, "t.yaml"), "");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Llama-3.1-70B at TP 8 (80 layers), K = 65,536 cached tokens = 256 chunks of 256, T = 1024 new:
// the prompt's 66,560 tokens are 260 full chunks; 4,096 16-token blocks cover K.
constexpr int kLayers = 80;
constexpr std::int64_t kChunks = 256, kPromptChunks = 260, kBlocks = 4096;

TEST(StackProfile, Lmcache035KernelPathCostsByWhereTheySit) {
  const StackProfile p = stack("lmcache-0.3.5");
  EXPECT_EQ(p.family, StackFamily::Lmcache);
  EXPECT_EQ(p.store, StackStore::Blocking);
  ASSERT_TRUE(p.pool_per_rank_bytes);
  EXPECT_DOUBLE_EQ(*p.pool_per_rank_bytes, 5e9);  // max_local_cpu_size 5.0 GB per rank
  // Scheduler: every one of the 260 prompt chunks re-hashed at 27 µs = 7.02 ms.
  EXPECT_NEAR(stack_lookup_s(p, LoadPath::Kernel, kPromptChunks, kChunks, kLayers), 7.02e-3, 1e-12);
  // Per step, build_connector_meta converts the prompt: 66,560 tokens × 110 ns = 7.3216 ms.
  EXPECT_NEAR(stack_step_meta_s(p, 66560), 7.3216e-3, 1e-12);
  // In step, one request: 0.5 ms + 256 × 28 µs = 7.668 ms before the first copy; 256 GPU
  // gaps of 25 µs = 6.4 ms; 256 × 74 µs = 18.944 ms of Python alongside the copies; one copy
  // kernel per chunk.
  const RetrieveCost c = stack_retrieve(p, LoadPath::Kernel, 1, kChunks, kBlocks, kLayers);
  EXPECT_NEAR(c.cpu_before_s, 7.668e-3, 1e-12);
  EXPECT_NEAR(c.gpu_gap_s, 6.4e-3, 1e-12);
  EXPECT_NEAR(c.cpu_overlap_s, 18.944e-3, 1e-12);
  EXPECT_DOUBLE_EQ(c.per_layer_cpu_s, 0);
  EXPECT_EQ(c.copies, 256);
  // Store of 16 chunks: 1.26 ms + 16 × 25 µs = 1.66 ms (LMCache PR #1740's residual).
  EXPECT_NEAR(stack_store_s(p, 1, 16), 1.66e-3, 1e-12);
}

TEST(StackProfile, Lmcache035LayerwiseIsSlowerThan037ByTheLogLine) {
  const StackProfile a = stack("lmcache-0.3.5"), b = stack("lmcache-0.3.7");
  const RetrieveCost ca = stack_retrieve(a, LoadPath::Layerwise, 1, kChunks, kBlocks, kLayers);
  const RetrieveCost cb = stack_retrieve(b, LoadPath::Layerwise, 1, kChunks, kBlocks, kLayers);
  // Per layer: 256 objects × (38 µs Python + 67 µs WARNING line) = 26.88 ms in 0.3.5; 256 × 38 µs
  // = 9.728 ms in 0.3.7: over 80 layers 2.1504 s against 0.77824 s.
  EXPECT_NEAR(ca.per_layer_cpu_s, 26.88e-3, 1e-12);
  EXPECT_NEAR(cb.per_layer_cpu_s, 9.728e-3, 1e-12);
  EXPECT_NEAR((ca.per_layer_cpu_s - cb.per_layer_cpu_s) * kLayers, kChunks * kLayers * 67e-6,
              1e-12);
  // The same up-front cost in both: 0.5 ms + 256 × 28 µs; no per-chunk sync gap (no host sync
  // on the layer-wise load).
  EXPECT_NEAR(ca.cpu_before_s, 7.668e-3, 1e-12);
  EXPECT_DOUBLE_EQ(ca.cpu_before_s, cb.cpu_before_s);
  EXPECT_DOUBLE_EQ(ca.gpu_gap_s, 0);
  // Layer-wise lookup also calls contains() on every per-layer key of the hits: 7.02 ms + 256 ×
  // 80 × 1.68 µs = 7.02 + 34.4064 = 41.4264 ms (KSM: 31-50 ms per 65k request).
  EXPECT_NEAR(stack_lookup_s(a, LoadPath::Layerwise, kPromptChunks, kChunks, kLayers), 41.4264e-3,
              1e-12);
  // 0.3.6's PR #1463 removed the per-step metadata conversions.
  EXPECT_DOUBLE_EQ(stack_step_meta_s(b, 66560), 0);
}

TEST(StackProfile, NativeConnectorCopiesPerBlockAndPerLayerKvIn011) {
  const StackProfile a = stack("vllm-native-0.11"), b = stack("vllm-native-0.12");
  EXPECT_EQ(a.store, StackStore::Async);
  EXPECT_FALSE(a.pool_per_rank_bytes);  // no default pool size: host DRAM less the reserve
  // 0.11: one copy per block, per layer, per K/V = 4096 × 80 × 2 = 655,360 copies, issued at
  // 3.36 µs each (the vLLM blog's Fig. 4 t0) = 2.2020096 s of CPU alongside the DMAs; 0.12:
  // 4096 copies = 13.76256 ms.
  const RetrieveCost ca = stack_retrieve(a, LoadPath::BlockDma, 1, kChunks, kBlocks, kLayers);
  const RetrieveCost cb = stack_retrieve(b, LoadPath::BlockDma, 1, kChunks, kBlocks, kLayers);
  EXPECT_EQ(ca.copies, 655360);
  EXPECT_EQ(cb.copies, 4096);
  EXPECT_NEAR(ca.cpu_overlap_s, 2.2020096, 1e-9);
  EXPECT_NEAR(cb.cpu_overlap_s, 13.76256e-3, 1e-12);
  EXPECT_NEAR(ca.cpu_before_s, 0.1e-3, 1e-15);  // retrieve_fixed
  EXPECT_DOUBLE_EQ(stack_lookup_s(b, LoadPath::BlockDma, kPromptChunks, kChunks, kLayers), 0);
}

TEST(StackProfile, TheIdealStackPaysNoSoftware) {
  const StackProfile ideal = stack("ideal");
  for (LoadPath lp : {LoadPath::Kernel, LoadPath::Layerwise, LoadPath::BlockDma}) {
    EXPECT_TRUE(stack_supports(ideal, lp));
    const RetrieveCost c = stack_retrieve(ideal, lp, 3, kChunks, kBlocks, kLayers);
    EXPECT_DOUBLE_EQ(c.cpu_before_s + c.gpu_gap_s + c.cpu_overlap_s + c.per_layer_cpu_s, 0);
    EXPECT_DOUBLE_EQ(stack_lookup_s(ideal, lp, kPromptChunks, kChunks, kLayers), 0);
  }
  EXPECT_DOUBLE_EQ(stack_store_s(ideal, 3, 16), 0);
}

TEST(StackProfile, DefaultTierCapacityIsThePoolPerRankOrTheTierOrHostDram) {
  // paper-testbed at TP 8 with LMCache: 8 ranks × 5 GB = 40 GB.
  const SystemSpec paper = system_of("paper-testbed");
  EXPECT_DOUBLE_EQ(default_tier_capacity(stack("lmcache-0.3.5"), paper, 8).bytes, 40e9);
  // ideal: host DRAM (2 TB, epyc-milan-ddr4-3200-2s) less a quarter = 1.5 TB.
  EXPECT_DOUBLE_EQ(default_tier_capacity(stack("ideal"), paper, 8).bytes,
                   paper.host_memory.capacity_bytes * 0.75);
  // unified-hbm: the tier's own 192 GB per GPU × 8.
  const TierCapacity u = default_tier_capacity(stack("lmcache-0.3.5"), system_of("unified-hbm"), 8);
  EXPECT_DOUBLE_EQ(u.bytes, 8 * 192e9);
  EXPECT_NE(u.why.find("HBM tier"), std::string::npos) << u.why;
}

TEST(StackProfile, TierCapacityBeyondTheHostsMemoryIsAnInputError) {
  // Issue 20 part 5 / issue 26 item 6. GB200: one Grace with 480 GB LPDDR5X, less the ideal
  // stack's quarter reserve: 480 × 0.75 = 360 GB. The 1.5 TB the report's section 6 used fails;
  // 360 GB passes, 361 GB fails.
  const std::string gb200 =
      "model: llama-3.1-8b\nsystem: gb200\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 2, stack: ideal, tier_capacity: ";
  std::string e = error_of(gb200 + "1.5 TB}\n");
  EXPECT_NE(e.find("serving.tier_capacity: 1.5 TB exceeds what system 'gb200' can hold"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("host DRAM 480 GB"), std::string::npos) << e;
  EXPECT_NE(e.find("= 360 GB"), std::string::npos) << e;
  EXPECT_EQ(error_of(gb200 + "360 GB}\n"), "");
  EXPECT_NE(error_of(gb200 + "361 GB}\n"), "");
  // The 1 PB tier on the 256 GB node: 256 × 0.75 = 192 GB.
  e = error_of(
      "model: llama-3.1-8b\nsystem: dgx-h100-256gb-cxl\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 8, tier_capacity: 1 PB}\n");
  EXPECT_NE(e.find("serving.tier_capacity: 1 PB"), std::string::npos) << e;
  EXPECT_NE(e.find("= 192 GB"), std::string::npos) << e;
  // An on-package HBM tier holds its own capacity per GPU: unified-hbm 192 GB × 8 = 1.536 TB.
  const std::string hbm =
      "model: llama-3.1-8b\nsystem: unified-hbm\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 8, tier_capacity: ";
  EXPECT_EQ(error_of(hbm + "1.536 TB}\n"), "");
  e = error_of(hbm + "1.6 TB}\n");
  EXPECT_NE(e.find("on-package HBM tier"), std::string::npos) << e;
  // Layouts over several nodes pool every node's DRAM: 2 × 2 TB × 0.75 = 3 TB on dgx-h100.
  const std::string two_nodes =
      "model: deepseek-v3\nsystem: {preset: dgx-h100, gpu: h200-sxm}\n"
      "workload: {type: narrativeqa}\nserving: {tp: 8, compute_dtype: fp8, "
      "parallelism: {tp: 8, pp: 2, nodes: 2}, tier_capacity: ";
  EXPECT_EQ(error_of(two_nodes + "3 TB}\n"), "");
  e = error_of(two_nodes + "3.1 TB}\n");
  EXPECT_NE(e.find("x 2 nodes"), std::string::npos) << e;
  // A GPU-side HBM buffer larger than what weights leave: checked when the config is read.
  // Llama-3.1-8B on an H100 at TP 1: 80 GB × 0.9 = 72 GB less 16 GB of weights < 80 GB.
  e = error_of(
      "model: llama-3.1-8b\nsystem: h100\nworkload: {type: narrativeqa}\n"
      "serving: {tp: 1, kv_buffer: {capacity: 80 GB, kind: hbm}}\n");
  EXPECT_NE(e.find("serving.kv_buffer.capacity: 80 GB of kind hbm leaves no paged-KV pool"),
            std::string::npos)
      << e;
}

TEST(StackProfile, RunSpecFillsTheDefaultsAndChecksTheLoadPath) {
  const RunSpec s = read_config<RunSpec>(
      parse_yaml("model: llama-3.1-70b\nsystem: paper-testbed\nserving: {tp: 8}\n"
                 "workload: {type: narrativeqa}\n",
                 "t.yaml"),
      "");
  EXPECT_EQ(s.serving.stack.name, kDefaultStack);
  EXPECT_EQ(s.serving.store, StoreMode::Blocking);  // the stack's own store, resolved
  ASSERT_TRUE(s.serving.tier_capacity_bytes);
  EXPECT_DOUBLE_EQ(*s.serving.tier_capacity_bytes, 40e9);
  // A stack that cannot run the load path.
  const std::string e = error_of(
      "model: llama-3.1-8b\nsystem: h100\nserving: {stack: vllm-native-0.12, load_path: kernel}\n"
      "workload: {type: narrativeqa}\n");
  EXPECT_NE(e.find("serving.load_path: kernel is not a load path of stack 'vllm-native-0.12'"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("supports: block_dma"), std::string::npos) << e;
}

TEST(StackProfile, UnknownStackNameListsTheValidOnes) {
  const std::string e = error_of(
      "model: llama-3.1-8b\nsystem: h100\nserving: {stack: lmcache-0.4}\n"
      "workload: {type: narrativeqa}\n");
  EXPECT_NE(e.find("serving.stack: unknown stack preset 'lmcache-0.4'"), std::string::npos) << e;
  for (const char* n :
       {"ideal", "lmcache-0.3.5", "lmcache-0.3.7", "vllm-native-0.11", "vllm-native-0.12"})
    EXPECT_NE(e.find(n), std::string::npos) << n << ": " << e;
}

// Issue 20 item 3: the front end and the tier's per-request costs (presets/stacks `front_end:`,
// `tier_request:`), charged only for an end-to-end TTFT.
TEST(StackProfile, FrontEndAndPerRequestTierCostsFromThePresets) {
  const StackProfile p = stack("lmcache-0.3.5");
  // Before the scheduler, a 66,560-token prompt: 1 ms HTTP + 66,560 × 1.1 µs tokenising
  // (73.216 ms) + 0.1 ms to the engine core = 74.316 ms; after the first token 0.15 ms.
  EXPECT_NEAR(front_end_in_s(p, 66560), 74.316e-3, 1e-12);
  EXPECT_NEAR(front_end_out_s(p), 0.15e-3, 1e-15);
  // Every lookup: the 50 µs round trip + torch.tensor of the prompt at 110 ns a token
  // (7.3216 ms) = 7.3716 ms.
  EXPECT_NEAR(stack_lookup_request_s(p, 66560), 7.3716e-3, 1e-12);
  EXPECT_EQ(p.nvme_read_queue_depth, 1);  // LocalDiskBackend: one file read at a time
  // The native connector: the same vLLM v1 front end; its lookup is in-process on vLLM's hashes.
  const StackProfile n = stack("vllm-native-0.12");
  EXPECT_NEAR(front_end_in_s(n, 1000), 1e-3 + 1000 * 1.1e-6 + 0.1e-3, 1e-15);
  EXPECT_DOUBLE_EQ(stack_lookup_request_s(n, 66560), 0);
  EXPECT_EQ(n.nvme_read_queue_depth, 0);  // no disk backend: the drive's own depth
  // No front end: the hardware bound, and TensorRT-LLM v0.5's in-process benchmark.
  for (const char* none : {"ideal", "tensorrt-llm-0.5"}) {
    const StackProfile z = stack(none);
    EXPECT_DOUBLE_EQ(front_end_in_s(z, 66560) + front_end_out_s(z), 0) << none;
    EXPECT_DOUBLE_EQ(stack_lookup_request_s(z, 66560), 0) << none;
  }
}

TEST(StackProfile, EndToEndTtftIsOptInAndBadValuesNameTheKey) {
  const std::string base = "model: llama-3.1-8b\nsystem: h100\nworkload: {type: narrativeqa}\n";
  const RunSpec d = read_config<RunSpec>(parse_yaml(base, "t.yaml"), "");
  EXPECT_EQ(d.serving.ttft, TtftMode::Engine);  // the default: the engine's TTFT
  const RunSpec e =
      read_config<RunSpec>(parse_yaml(base + "serving: {ttft: end_to_end}\n", "t.yaml"), "");
  EXPECT_TRUE(e.serving.end_to_end());
  std::string err = error_of(base + "serving: {ttft: client}\n");
  EXPECT_NE(err.find("serving.ttft"), std::string::npos) << err;
  EXPECT_NE(err.find("end_to_end"), std::string::npos) << err;
  err = error_of(base + "serving: {stack: {preset: lmcache-0.3.5, front_end: {http: -1 ms}}}\n");
  EXPECT_NE(err.find("serving.stack.front_end.http"), std::string::npos) << err;
  err = error_of(base + "serving: {stack: {preset: lmcache-0.3.5, nvme_read_queue_depth: -2}}\n");
  EXPECT_NE(err.find("serving.stack.nvme_read_queue_depth"), std::string::npos) << err;
}

// ---- the KV tier's honest counters -----------------------------------------------------------

// Issue 20: how each stack launches a forward (presets/stacks/*.yaml `launch:`).
TEST(StackProfile, LaunchesAreAStackProperty) {
  for (const char* n : {"lmcache-0.3.5", "lmcache-0.3.7", "vllm-native-0.11", "vllm-native-0.12"}) {
    const LaunchSpec l = stack(n).launch;
    EXPECT_EQ(l.graph_mode, GraphMode::Piecewise) << n;  // vLLM v1 piecewise CUDA graphs
    EXPECT_DOUBLE_EQ(l.max_capture_tokens, 512) << n;    // min(2 × max_num_seqs 256, 512)
    EXPECT_DOUBLE_EQ(l.host_launch_s, 10e-6) << n;
    EXPECT_DOUBLE_EQ(l.graph_launch_s, 2.5e-6) << n;
  }
  const LaunchSpec trt = stack("tensorrt-llm-0.5").launch;
  EXPECT_EQ(trt.graph_mode, GraphMode::None);  // gptSession v0.5-v0.9: no CUDA graphs
  // (6.3 ms - 0.3 ms) / 451 kernels = 13.3 us, rounded: TensorRT-LLM v0.9.0 performance.md, H100
  // FP8 LLaMA 7B, 128 tokens (host-bound).
  EXPECT_DOUBLE_EQ(trt.host_launch_s, 13e-6);
  const LaunchSpec ideal = stack("ideal").launch;
  EXPECT_DOUBLE_EQ(ideal.host_launch_s + ideal.graph_launch_s, 0);
  // A bad graph mode names the key and the choices.
  const std::string e = error_of(
      "model: llama-3.1-8b\nsystem: h100\n"
      "serving: {stack: {preset: ideal, launch: {graph_mode: always}}}\n"
      "workload: {type: narrativeqa}\n");
  EXPECT_NE(e.find("graph_mode"), std::string::npos) << e;
  EXPECT_NE(e.find("piecewise"), std::string::npos) << e;
}

TEST(KvTierCounters, WarmRestoresAndDrops) {
  // 3 chunks of 100 B each fit a 300 B tier.
  KvTier t(1, 300, 100);
  EXPECT_EQ(t.warm({1, 2, 3}), 3u);
  EXPECT_EQ(t.warm_chunks(), 3u);
  EXPECT_EQ(t.stored_chunks(), 0u);  // warming is not a store (no D2H in the run)
  // Storing 4 evicts 1 (LRU); storing 1 again is a re-store of an evicted chunk.
  EXPECT_EQ(t.insert({4}), 1u);
  EXPECT_EQ(t.evicted_chunks(), 1u);
  EXPECT_FALSE(t.contains(1));
  EXPECT_EQ(t.insert({1}), 1u);
  EXPECT_EQ(t.restored_chunks(), 1u);
  EXPECT_EQ(t.stored_chunks(), 2u);
  EXPECT_EQ(t.distinct_chunks(), 4u);  // working set 400 B > 300 B capacity
  // A chunk larger than the pool is dropped, not stored.
  KvTier small(1, 50, 100);
  EXPECT_EQ(small.insert({7, 8}), 0u);
  EXPECT_EQ(small.dropped_chunks(), 2u);
}

}  // namespace
}  // namespace stack_profile_test
}  // namespace kappasim
