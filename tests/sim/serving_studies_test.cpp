// The KV studies' serving features (docs/studies-kv.md) against hand values: the GPU-side KV
// buffer (hits copied at the buffer's bandwidth instead of crossing the link; the hbm kind's
// carve-out of the paged-KV pool), partial recompute of the cached prefix (fixed fraction: bytes
// and tokens; auto: the choice on a fast and on a slow link) and the dequantisation pass of an
// int4 KV cache. Hand numbers are quoted from the presets next to each constant; batch_step_time
// is the one model call (a step's compute is defined as that function). One simulation per TEST
// (ctest runs each TEST in its own process).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "serving/engine.hpp"
#include "tests/sim/serving_test_util.hpp"

namespace kappasim {
namespace serving_studies_test {
namespace {

using namespace kappasim::testing;

// ServingSpec defaults (serving/serving_spec.hpp).
// presets/gpus/h100-sxm5.yaml
constexpr double kHbm = 3.35e12;  // hbm_bandwidth
constexpr double kHbmEff = 0.92;  // hbm_efficiency
constexpr double kLaunch = 2e-6;  // kernel_launch_overhead
// presets/links/pcie5.yaml: round trip 1 µs; one x16 direction on the wire less SKP ordered sets;
// an SM read of 64 B requests costs 1 + 20/64 + 2/64 wire bytes per payload byte.
const double kSmRate = kWire / (1 + 20.0 / 64 + 2.0 / 64);

struct Outcome {
  std::vector<RequestRecord> recs;
  SummaryBuilder::Totals totals;
  std::int64_t kv_blocks = 0;
  const RequestRecord& rec(std::uint64_t id) const {
    for (const auto& r : recs)
      if (r.id == id) return r;
    throw std::logic_error("no record for request " + std::to_string(id));
  }
};

Outcome serve(const RunSpec& spec, std::vector<Request> rs) {
  VectorSource src(std::move(rs));
  Outcome out;
  EngineSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r) { out.recs.push_back(r); };
  std::unique_ptr<ServingEngine> engine;
  run_simulation([&] { engine = std::make_unique<ServingEngine>("engine", spec, src, sinks); });
  engine->check_end();
  out.totals = engine->totals(0);
  out.kv_blocks = engine->gpu_kv().total_blocks();
  return out;
}

// ---- GPU-side KV buffer ----------------------------------------------------------------------

// Two requests on one document, 100 s apart: the first loads its 16 chunks over the link and
// leaves them in the buffer; the second finds all 16 there and copies them at HBM × efficiency
// / 2 (the copy reads and writes HBM), nothing over the link. The CPU tier's lookup costs stay.
// The hbm buffer of 2 GiB = 1024 blocks of 16 tokens × 131,072 B leaves 1024 fewer GPU blocks.
TEST(ServingStudies, BufferHitCopiesAtHalfHbmBandwidthAndCarvesThePool) {
  const std::string serving = "serving: {" KAPPASIM_TEST_STACK
                              "tp: 1, warm_tier: true, store: none, load_path: kernel, "
                              "kv_buffer: {capacity: 2147483648 B, kind: hbm}}\n";
  const RunSpec spec = run_spec(std::string(kLlama8bH100) + serving);
  const std::int64_t K = 4096, T = 128;  // 16 chunks of 256 tokens
  const Outcome o = serve(spec, {request(1, 0, K, T, 7), request(2, 100, K, T, 7)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double bytes = K * kBkv8b;  // 512 MiB, fits the 2 GiB buffer
  const double retrieve = kRetrieveFixed + 16 * kRetrievePerChunk;

  const RequestRecord& a = o.rec(1);  // a miss: over the link as without a buffer
  const double load_a = retrieve + 16 * kBlockOverhead + kRtt + bytes / kSmRate;
  EXPECT_NEAR(a.load_s, load_a, tol(load_a));
  EXPECT_DOUBLE_EQ(a.bytes_loaded, bytes);
  EXPECT_DOUBLE_EQ(a.bytes_from_buffer, 0);
  EXPECT_DOUBLE_EQ(a.kappa_link_ratio, 32);

  const RequestRecord& b = o.rec(2);            // a hit: buffer → KV pages
  const double buffer_bw = kHbm * kHbmEff / 2;  // 1.541 TB/s
  EXPECT_DOUBLE_EQ(kv_buffer_bandwidth(spec.serving.kv_buffer, spec.system.gpu), buffer_bw);
  const double load_b = retrieve + bytes / buffer_bw;
  EXPECT_NEAR(b.load_s, load_b, tol(load_b));
  const double ttft_b = kStepOverhead + load_b + step_compute(spec, {{double(T), double(K), true}});
  EXPECT_NEAR(b.ttft_s, ttft_b, tol(ttft_b));
  EXPECT_DOUBLE_EQ(b.bytes_loaded, 0);
  EXPECT_DOUBLE_EQ(b.bytes_from_buffer, bytes);
  EXPECT_EQ(b.cached_tokens, K);
  EXPECT_DOUBLE_EQ(b.kappa_ratio, 32);
  EXPECT_DOUBLE_EQ(b.kappa_link_ratio, 0);
  // Totals: the link carried only the first request's KV.
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, bytes);

  // Carve-out: the same pool without the buffer, less 2 GiB / (16 × 131,072 B) = 1024 blocks.
  const double v_eff = effective_kv_bytes_per_gpu(spec.model, spec.system.gpu, 1, DType::Bf16,
                                                  spec.serving.activation_reserve_bytes,
                                                  spec.serving.gpu_memory_utilization);
  EXPECT_EQ(o.kv_blocks, kv_blocks_for(v_eff, 16, kBkv8b) - 1024);
}

// Issue 12.12 (sweeps helper): the same buffer described as GPU hardware (system.gpu.kv_buffer,
// kind sram, 1 TB/s, below the HBM write cap of 3.08 TB/s) is what the engine uses when
// serving.kv_buffer is off: the second request's hit copies at 1 TB/s. Its energy per bit is
// charged per byte read from the buffer; at 1 J/bit (8 J/B, chosen to dwarf the rest of the
// run's energy: idle and compute over ~100 s are ~1e4 J) the total is 512 MiB × 8 J/B within 1e-5.
TEST(ServingStudies, GpuHardwareBufferIsUsedWhenServingHasNone) {
  const std::string gpu_buffer =
      "model: llama-3.1-8b\n"
      "system: {preset: h100, gpu: {preset: h100-sxm5, kv_buffer: {capacity: 2147483648 B, kind: "
      "sram, "
      "bandwidth: 1 TB/s, energy_per_bit: 1 J/bit}}}\n"
      "serving: {" KAPPASIM_TEST_STACK
      "tp: 1, warm_tier: true, store: none, load_path: kernel}\n"
      "workload: {type: sharegpt, requests: 1}\n";
  const RunSpec spec = run_spec(gpu_buffer);
  ASSERT_TRUE(spec.serving.kv_buffer.enabled());
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T, 7), request(2, 100, K, T, 7)});
  ASSERT_EQ(o.recs.size(), 2u);
  const double bytes = K * kBkv8b;
  const double retrieve = kRetrieveFixed + 16 * kRetrievePerChunk;
  const RequestRecord& b = o.rec(2);
  EXPECT_DOUBLE_EQ(b.bytes_from_buffer, bytes);
  EXPECT_NEAR(b.load_s, retrieve + bytes / 1e12, tol(retrieve + bytes / 1e12));
  EXPECT_NEAR(o.totals.gpu_energy_j, bytes * 8.0, 1e-5 * bytes * 8.0);
}

// An sram buffer needs its bandwidth (no default), does not shrink the pool, and copies at the
// lower of its bandwidth and the HBM write rate.
TEST(ServingStudies, SramBufferBandwidthIsRequiredAndCappedByHbmWrites) {
  EXPECT_THROW(run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                                    "kv_buffer: {capacity: 1 GB, kind: sram}}\n"),
               InputError);
  const RunSpec fast =
      run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                           "kv_buffer: {capacity: 1 GB, kind: sram, "
                                           "bandwidth: 10 TB/s}}\n");
  EXPECT_DOUBLE_EQ(kv_buffer_bandwidth(fast.serving.kv_buffer, fast.system.gpu), kHbm * kHbmEff);
  const RunSpec slow =
      run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                           "kv_buffer: {capacity: 1 GB, kind: sram, "
                                           "bandwidth: 1 TB/s}}\n");
  EXPECT_DOUBLE_EQ(kv_buffer_bandwidth(slow.serving.kv_buffer, slow.system.gpu), 1e12);
  EXPECT_THROW(run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                                    "recompute: {mode: none, fraction: 0.5}}\n"),
               InputError);
}

// Bad serving inputs for the studies' features: messages name the key and what was expected.
TEST(ServingStudies, BadBufferAndRecomputeInputsNameTheKey) {
  try {
    run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                         "recompute: {mode: fixed, fraction: 1.5}}\n");
    ADD_FAILURE() << "a recompute fraction above 1 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("serving.recompute.fraction"), std::string::npos)
        << e.what();
  }
  // An hbm carve-out as large as the whole KV pool leaves nothing to serve from: refused when
  // the config is read (issue 20 part 5; before, by the engine before simulating):
  // 80 GB x 0.9 less 16 GB of weights and the reserve < 80 GB.
  VectorSource src({});
  try {
    const RunSpec big =
        run_spec(std::string(kLlama8bH100) + "serving: {" KAPPASIM_TEST_STACK
                                             "kv_buffer: {capacity: 80 GB, kind: hbm}}\n");
    run_serving(big, src, EngineSinks{});
    ADD_FAILURE() << "an hbm buffer larger than the KV pool was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("serving.kv_buffer.capacity"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("leaves no paged-KV pool"), std::string::npos) << e.what();
  }
}

// ---- partial recompute -----------------------------------------------------------------------

// r = 0.25 of K = 4096: the leading 1024 tokens are recomputed (causal, no earlier context), the
// other 3072 (12 chunks) are loaded; the 128 new tokens attend over all 4096.
TEST(ServingStudies, FixedRecomputeLoadsTheRestAndComputesTheLeadingPart) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100) +
                                "serving: {" KAPPASIM_TEST_STACK
                                "tp: 1, warm_tier: true, store: none, load_path: kernel, "
                                "recompute: {mode: fixed, fraction: 0.25}}\n");
  const std::int64_t K = 4096, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T, 1)});
  ASSERT_EQ(o.recs.size(), 1u);
  const RequestRecord& r = o.recs[0];
  const double loaded = 0.75 * K;  // 3072 tokens = 12 chunks
  EXPECT_EQ(r.recomputed_tokens, 1024);
  EXPECT_EQ(r.cached_tokens, 3072);
  EXPECT_EQ(r.computed_tokens, T + 1024);
  EXPECT_DOUBLE_EQ(r.bytes_loaded, loaded * kBkv8b);
  EXPECT_DOUBLE_EQ(r.kappa_ratio, 3072.0 / 1152.0);
  const double load = kRetrieveFixed + 12 * kRetrievePerChunk + 12 * kBlockOverhead + kRtt +
                      loaded * kBkv8b / kSmRate;
  EXPECT_NEAR(r.load_s, load, tol(load));
  const double compute = step_compute(spec, {{1024, 0, false}, {double(T), double(K), true}});
  EXPECT_NEAR(r.compute_s, compute, 1e-15);
  EXPECT_NEAR(r.ttft_s, kStepOverhead + load + compute, tol(kStepOverhead + load + compute));
  EXPECT_DOUBLE_EQ(o.totals.h2d_bytes_per_gpu, loaded * kBkv8b);
}

// Fast link (unified-hbm: 8 TB/s per GPU): loading a token of Llama-3.1-8B KV costs
// 131,072 B / 8 TB/s = 16 ps, recomputing it at least 2 × 8.0e9 FLOP / 2.25 PFLOP/s (B200 dense
// BF16) = 7 µs, and a whole chunk's CPU cost (0.1 ms) is below 256 tokens' recompute (1.8 ms):
// auto keeps r = 0.
// Slow link (H100 behind PCIe 3.0 x1: 8 GT/s × 128/130 / 8 = 0.985 GB/s): a token's KV takes
// 131,072 / 0.985e9 = 133 µs; recomputing it costs at most (2 × 8.03e9 + attention 4 × 32 ×
// 4096 × 8320 ≈ 4.4e9 FLOP) / (989 TFLOP/s × 0.3) ≈ 69 µs even at a pessimistic 30% of peak:
// every recomputed token saves time, so auto recomputes the whole prefix.
TEST(ServingStudies, AutoRecomputeKeepsTheFastLinkAndRecomputesOverTheSlowOne) {
  const std::int64_t K = 8192, T = 128;
  const RunSpec fast = run_spec(
      "model: llama-3.1-8b\nsystem: unified-hbm\ntrace: false\nworkload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_STACK "tp: 1, recompute: {mode: auto}}\n");
  EXPECT_NEAR(fast.system.host_link_bandwidth_per_gpu(), 8e12, 1);
  EXPECT_EQ(choose_recompute_tokens(fast, K, T), 0);

  const RunSpec slow = run_spec(
      "model: llama-3.1-8b\nsystem: {preset: h100, host_link: {preset: pcie3, lanes: 1}}\n"
      "trace: false\nworkload: {type: narrativeqa}\nserving: {" KAPPASIM_TEST_STACK
      "tp: 1, recompute: {mode: auto}}\n");
  EXPECT_NEAR(slow.system.host_link_bandwidth_per_gpu(), 8e9 * 128 / 130 / 8, 1e3);
  EXPECT_EQ(choose_recompute_tokens(slow, K, T), K);
  // The estimate agrees with the hand reasoning: all-recompute beats all-load.
  EXPECT_LT(estimate_recompute(slow, K, T, K).total_s, estimate_recompute(slow, K, T, 0).total_s);
  const double load0 = K * kBkv8b / slow.system.host_link_bandwidth_per_gpu();
  EXPECT_GT(estimate_recompute(slow, K, T, 0).load_s, load0);
}

// In the engine, auto on the slow link: the request recomputes its whole prefix and loads
// nothing.
TEST(ServingStudies, AutoRecomputeInTheEngineLoadsNothingOverTheSlowLink) {
  const RunSpec spec = run_spec(
      "model: llama-3.1-8b\nsystem: {preset: h100, host_link: {preset: pcie3, lanes: 1}}\n"
      "trace: false\nworkload: {type: narrativeqa}\n"
      "serving: {" KAPPASIM_TEST_STACK
      "tp: 1, warm_tier: true, store: none, recompute: {mode: auto}}\n");
  const std::int64_t K = 8192, T = 128;
  const Outcome o = serve(spec, {request(1, 0, K, T, 1)});
  ASSERT_EQ(o.recs.size(), 1u);
  EXPECT_EQ(o.recs[0].recomputed_tokens, K);
  EXPECT_EQ(o.recs[0].cached_tokens, 0);
  EXPECT_EQ(o.recs[0].computed_tokens, K + T);
  EXPECT_DOUBLE_EQ(o.recs[0].bytes_loaded, 0);
  EXPECT_EQ(o.recs[0].load_s, 0);
}

// ---- compressed KV ---------------------------------------------------------------------------

// int4 KV: a dequant pass per layer reads the packed cached KV (0.5 B per element) and writes it
// as BF16 (2 B): Llama-3.1-8B per layer per token 2 × 8 × 128 × (0.5 + 2) = 5120 B, i.e. 5× the
// packed bytes, at the H100's HBM roof 3.35 TB/s × 0.92, one launch (2 µs) per layer for the
// whole batch. Attention then reads BF16, so the step costs exactly L such kernels more.
TEST(ServingStudies, Int4DequantPassIsPackedPlusBf16BytesAtTheHbmRoof) {
  const RunSpec spec = run_spec(std::string(kLlama8bH100));
  const ModelSpec& m = spec.model;
  const GpuSpec& gpu = spec.system.gpu;
  const double K1 = 4096, K2 = 1024;
  const double per_layer_bytes = (K1 + K2) * 2 * 8 * 128 * (0.5 + 2);
  EXPECT_DOUBLE_EQ(kv_dequant_bytes(m, 1, K1, DType::Int4), K1 * 5120);
  EXPECT_DOUBLE_EQ(kv_dequant_bytes(m, 1, K1, DType::Int4), 5 * K1 * 2 * 8 * 128 * 0.5);
  const double per_layer_s = per_layer_bytes / (kHbm * kHbmEff) + kLaunch;
  const std::vector<SeqSlice> batch = {{128, K1, true}, {256, K2, true}};
  const double bf16 =
      batch_step_time(m, gpu, 1, batch, "bf16", 1.0, DType::Bf16).total.compute_time_s;
  const double int4 =
      batch_step_time(m, gpu, 1, batch, "bf16", 1.0, DType::Int4).total.compute_time_s;
  EXPECT_NEAR(int4 - bf16, 32 * per_layer_s, 1e-12);
  // fp8 is read by attention directly: no pass, and no pass with nothing cached.
  EXPECT_EQ(kv_dequant_mode(DType::Fp8), KvDequant::FusedDequant);
  EXPECT_DOUBLE_EQ(kv_dequant_bytes(m, 1, K1, DType::Fp8), 0);
  EXPECT_DOUBLE_EQ(kv_dequant_bytes(m, 1, 0, DType::Int4), 0);
  for (const Kernel& k : layer_kernels(m, 0, 128, K1, 1, DType::Bf16, DType::Fp8))
    EXPECT_NE(k.name, "kv_dequant");
}

}  // namespace
}  // namespace serving_studies_test
}  // namespace kappasim
