// The SystemC GpuCompute: its simulated prefill equals the pure prefill_time(), it issues the
// documented number of events, and a copy kernel holding half the SMs halves the compute rate.
// One simulation per TEST (ctest runs each TEST in its own process).
#include <gtest/gtest.h>

#include <memory>
#include <systemc>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "models/gpu/gpu_compute.hpp"

namespace kappasim {
namespace gpu_compute_test {
namespace {

ModelSpec model(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}

GpuSpec preset_gpu(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<GpuSpec>(ref, "gpu", "gpu");
}

TEST(GpuCompute, RunPrefillEqualsPrefillTime) {
  const ModelSpec m = model("llama-3.1-70b");
  const GpuSpec g = preset_gpu("h100-sxm5");
  const double T = 8192, K = 32768;
  const int tp = 8;
  const PrefillTime expected = prefill_time(m, g, tp, T, K);
  std::unique_ptr<GpuCompute> gpu;
  double end = -1;
  run_simulation([&] {
    gpu = std::make_unique<GpuCompute>("gpu0", g);
    sc_core::sc_spawn([&] {
      gpu->run_prefill(m, T, K, tp);
      end = sim_now_s();
    });
  });
  const GpuCompute::Stats& s = gpu->stats();
  // The stats accumulate the same doubles in the same order.
  EXPECT_DOUBLE_EQ(s.time.compute_time_s, expected.compute_time_s);
  EXPECT_DOUBLE_EQ(s.time.linear_time_s, expected.linear_time_s);
  EXPECT_DOUBLE_EQ(s.time.attention_time_s, expected.attention_time_s);
  EXPECT_DOUBLE_EQ(s.time.comm_time_s, expected.comm_time_s);
  EXPECT_DOUBLE_EQ(s.time.other_time_s, expected.other_time_s);
  EXPECT_DOUBLE_EQ(s.time.host_time_s, expected.host_time_s);
  EXPECT_DOUBLE_EQ(s.time.flops, expected.flops);
  EXPECT_EQ(s.time.kernels, expected.kernels);
  // Simulated time: each wait is rounded to the 1 ps resolution.
  EXPECT_NEAR(end, expected.compute_time_s, (expected.kernels + 1) * 1e-12);
  // Fine mode: 12 waits per layer (dense GQA with two all-reduces) + 3 edge kernels + the
  // per-forward host cost (one wait, not a kernel).
  EXPECT_EQ(s.kernel_events, 80 * 12 + 3 + 1);
}

TEST(GpuCompute, CoarseModeWaitsOncePerLayer) {
  const ModelSpec m = model("qwen3-30b-a3b");
  const GpuSpec g = preset_gpu("h100-sxm5");
  const PrefillTime expected = prefill_time(m, g, 2, 2048, 4096);
  std::unique_ptr<GpuCompute> gpu;
  double end = -1;
  run_simulation([&] {
    gpu = std::make_unique<GpuCompute>("gpu0", g, "bf16", /*coarse=*/true);
    sc_core::sc_spawn([&] {
      gpu->run_prefill(m, 2048, 4096, 2);
      end = sim_now_s();
    });
  });
  EXPECT_EQ(gpu->stats().kernel_events, m.num_layers + 2);
  EXPECT_EQ(gpu->stats().time.kernels, expected.kernels);
  EXPECT_NEAR(end, expected.compute_time_s, (m.num_layers + 2) * 1e-12);
}

// A GPU whose kernels are purely compute-bound: HBM so fast and launches so cheap that only the
// FLOP roof counts.
GpuSpec compute_bound_gpu() {
  GpuSpec g;
  g.name = "compute-bound";
  g.hbm_capacity_bytes = 80e9;
  g.hbm_bandwidth_Bps = 1e18;
  g.peak_flops = {{"bf16", 1000e12}};
  g.sm_count = 132;
  g.l2_bytes = 50e6;
  g.tdp_w = 700;
  g.nvlink_Bps = 450e9;
  g.copy_engines = 2;
  g.dma_copy_overhead_s = 3e-6;
  g.copy_kernel_block_overhead_s = 0.2e-6;
  g.gemm_efficiency = 0.8;
  g.attention_efficiency = 0.7;
  g.hbm_efficiency = 0.9;
  g.kernel_launch_overhead_s = 0;
  g.nvlink_latency_s = 3e-6;
  return g;
}

TEST(GpuCompute, CopyKernelHoldingHalfTheSmsHalvesTheRate) {
  const ModelSpec m = model("llama-3.1-8b");
  const GpuSpec g = compute_bound_gpu();
  // T = 132 · 128: every GEMM and the attention have a whole number of waves on 132 and on 66
  // SMs, so quantisation is the same and only the rate halves.
  const double T = 16896;
  double full = 0;
  for (const Kernel& k : layer_kernels(m, 3, T, 0, 1, DType::Bf16))
    full += kernel_time(k, g, "bf16", 1.0).time_s;
  std::unique_ptr<GpuCompute> gpu;
  double start = -1, end = -1;
  run_simulation([&] {
    gpu = std::make_unique<GpuCompute>("gpu0", g);
    // The copy kernel: takes 66 SMs at t = 0 and holds them.
    sc_core::sc_spawn([&] { EXPECT_EQ(gpu->sm_pool().acquire(66), 66); });
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
      start = sim_now_s();
      gpu->run_layer(m, 3, T, 0, 1);
      end = sim_now_s();
    });
  });
  EXPECT_DOUBLE_EQ(gpu->sm_pool().compute_fraction(), 0.5);
  EXPECT_NEAR((end - start) / full, 2.0, 1e-6);
}

}  // namespace
}  // namespace gpu_compute_test
}  // namespace kappasim
