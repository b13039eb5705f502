// The TP all-reduce by mechanism (models/gpu/all_reduce, docs/compute-model.md "All-reduce"):
// NCCL's cheapest of ring × {LL, LL128, Simple} and NVLS, vLLM's custom one-shot / two-shot
// kernel, and the line-rate ring for a GPU without a table. Expected values are computed here by
// hand from the preset's sourced numbers, written as literals: H100 ring busbw 370 GB/s, NVLS
// algbw 274.3 GB/s + 25 us; LL 6.6 us + 0.6 us/step at min(0.5 x 370, 141) GB/s; LL128 14 us +
// 1.9 us/step at 0.92 x 370 GB/s; Simple 8.4 us + 3.4 us/step; barrier 1.5 us; launch 2 us.
#include <gtest/gtest.h>

#include <string>

#include "models/gpu/all_reduce.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "models/gpu/kernel_timing.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace all_reduce_test {
namespace {

GpuSpec h100() { return test::system_preset("h100").gpu; }
GpuSpec a100() { return test::system_preset("a100").gpu; }

AllReduceImpl vllm() {
  AllReduceImpl i;
  i.library = AllReduceLibrary::VllmCustom;
  i.custom_max_bytes = 8 * 1024 * 1024;
  return i;
}

void expect_time(const AllReduceTime& t, double seconds, const std::string& algorithm,
                 const std::string& protocol) {
  EXPECT_NEAR(t.time_s, seconds, 1e-9 * seconds + 1e-15);
  EXPECT_EQ(t.algorithm, algorithm);
  EXPECT_EQ(t.protocol, protocol);
}

TEST(AllReduce, SmallMessagesTakeNcclsLlRing) {
  const GpuSpec g = h100();
  const double S = 1024;
  // LL: base 6.6 us + 2(p-1) x 0.6 us + 2(p-1)/p x S / 141 GB/s (0.5 x 370 = 185 capped at 141).
  expect_time(all_reduce_time(g, 2, S), 6.6e-6 + 2 * 0.6e-6 + 1024 / 141e9, "ring", "ll");
  expect_time(all_reduce_time(g, 4, S), 6.6e-6 + 6 * 0.6e-6 + 1536 / 141e9, "ring", "ll");
  expect_time(all_reduce_time(g, 8, S), 6.6e-6 + 14 * 0.6e-6 + 1792 / 141e9, "ring", "ll");
  // 15.0 us at 8 GPUs, against 14 x 2.8 + 2 = 41.2 us for the line-rate ring's latency.
  EXPECT_NEAR(all_reduce_time(g, 8, S).time_s, 15.0127e-6, 1e-10);
}

TEST(AllReduce, LargeMessagesTakeNvlsOnHopperAtFourAndEightGpus) {
  const GpuSpec g = h100();
  const double S = 1073741824;  // 1 GiB
  // NVLS: 25 us + S / 274.3 GB/s at any GPU count. The Simple ring at 8 GPUs: 8.4 + 14 x 3.4
  // = 56 us + 1.75 S / 370 GB/s = 5.135 ms; at 4 GPUs 28.8 us + 1.5 S / 370 GB/s = 4.382 ms.
  expect_time(all_reduce_time(g, 4, S), 25e-6 + S / 274.3e9, "nvls", "simple");
  expect_time(all_reduce_time(g, 8, S), 25e-6 + S / 274.3e9, "nvls", "simple");
  EXPECT_NEAR(all_reduce_time(g, 8, S).time_s, 3.93948e-3, 1e-8);
  // nccl-tests' busbw = S / t x 2(p-1)/p: 477 GB/s at 1 GiB on 8 GPUs (the 480 the 274.3 comes
  // from, less the 25 us), 409 GB/s on 4.
  EXPECT_NEAR(S / all_reduce_time(g, 8, S).time_s * 1.75, 476.98e9, 0.01e9);
  EXPECT_NEAR(S / all_reduce_time(g, 4, S).time_s * 1.5, 408.84e9, 0.01e9);
  // 2 GPUs: the Simple ring's S / 370 GB/s beats NVLS's S / 274.3: 8.4 + 2 x 3.4 us + S / 370.
  expect_time(all_reduce_time(g, 2, S), 15.2e-6 + S / 370e9, "ring", "simple");
}

TEST(AllReduce, A100HasNoNvlsSoLargeMessagesRideTheSimpleRing) {
  const GpuSpec g = a100();
  const double S = 1073741824;
  // Simple: 8.4 + 14 x 3.4 = 56 us + 1.75 S / 232.5 GB/s; LL128 would be 40.6 us + 1.75 S /
  // (0.92 x 232.5) GB/s = 8.82 ms.
  expect_time(all_reduce_time(g, 8, S), 56e-6 + 1879048192 / 232.5e9, "ring", "simple");
  EXPECT_NEAR(all_reduce_time(g, 8, S).time_s, 8.13793e-3, 1e-8);
  // Small: the LL ring, capped at Ampere's 87.7 GB/s (0.5 x 232.5 = 116 above it).
  expect_time(all_reduce_time(g, 2, 1024), 7.8e-6 + 1024 / 87.7e9, "ring", "ll");
}

TEST(AllReduce, VllmCustomKernelOneShotAndTwoShot) {
  const GpuSpec g = h100();
  // launch 2 us + 2 barriers x 1.5 us + NVLink ingress / 370 GB/s.
  // 2 GPUs: always one-shot, the peer's whole buffer: 1 MiB.
  expect_time(all_reduce_time(g, 2, 1048576, vllm()), 5e-6 + 1048576 / 370e9, "one_shot", "");
  EXPECT_NEAR(all_reduce_time(g, 2, 1048576, vllm()).time_s, 7.83399e-6, 1e-11);
  // 4 GPUs, 1 MiB >= 512 KiB: two-shot, 2 x 3/4 x 1 MiB.
  expect_time(all_reduce_time(g, 4, 1048576, vllm()), 5e-6 + 1572864 / 370e9, "two_shot", "");
  // 8 GPUs, 128 KiB < 256 KiB: one-shot, 7 peers' 128 KiB each.
  expect_time(all_reduce_time(g, 8, 131072, vllm()), 5e-6 + 917504 / 370e9, "one_shot", "");
  // 8 GPUs, 1 MiB: two-shot, 2 x 7/8 x 1 MiB.
  expect_time(all_reduce_time(g, 8, 1048576, vllm()), 5e-6 + 1835008 / 370e9, "two_shot", "");
  // At or above custom_max (8 MiB): NCCL. 16 MiB on 8 GPUs: NVLS 25 us + 16 MiB / 274.3 GB/s.
  expect_time(all_reduce_time(g, 8, 16777216, vllm()), 25e-6 + 16777216 / 274.3e9, "nvls",
              "simple");
  // 3 GPUs: the custom kernel takes 2, 4, 6 or 8 only; NCCL's LL ring at 1 KiB.
  expect_time(all_reduce_time(g, 3, 1024, vllm()), 6.6e-6 + 4 * 0.6e-6 + 1024 * 4.0 / 3 / 141e9,
              "ring", "ll");
}

// The ideal stack's bound (library fastest): per message the faster of NCCL's choice and the
// custom kernel, at any size. On 8 H100s: 1 KiB, one-shot 5 us + 7 KiB / 370 GB/s = 5.02 us
// against NCCL's LL ring 15.01 us; 16 MiB, two-shot 5 us + 1.75 x 16 MiB / 370 GB/s = 84.35 us
// against NVLS 25 us + 16 MiB / 274.3 GB/s = 86.16 us (vllm_custom hands 16 MiB to NCCL: above
// its 8 MiB buffer); 1 GiB, NVLS 3.94 ms against two-shot 5.08 ms. 3 GPUs: NCCL only.
TEST(AllReduce, FastestTakesTheFasterOfNcclAndTheCustomKernel) {
  const GpuSpec g = h100();
  AllReduceImpl f;
  f.library = AllReduceLibrary::Fastest;
  expect_time(all_reduce_time(g, 8, 1024, f), 5e-6 + 7168 / 370e9, "one_shot", "");
  expect_time(all_reduce_time(g, 8, 16777216, f), 5e-6 + 1.75 * 16777216 / 370e9, "two_shot", "");
  EXPECT_LT(all_reduce_time(g, 8, 16777216, f).time_s,
            all_reduce_time(g, 8, 16777216, vllm()).time_s);
  expect_time(all_reduce_time(g, 8, 1073741824, f), 25e-6 + 1073741824 / 274.3e9, "nvls", "simple");
  expect_time(all_reduce_time(g, 3, 1024, f), 6.6e-6 + 4 * 0.6e-6 + 1024 * 4.0 / 3 / 141e9, "ring",
              "ll");
}

TEST(AllReduce, GpuWithoutATableKeepsTheLineRateRing) {
  GpuSpec g = h100();
  g.all_reduce = AllReduceSpec{};
  // 2(p-1)/p x S / 450 GB/s + 2(p-1) x 2.8 us + 2 us launch, at 8 GPUs and 1 MiB.
  expect_time(all_reduce_time(g, 8, 1048576), 1835008 / 450e9 + 14 * 2.8e-6 + 2e-6,
              "ring_line_rate", "");
  EXPECT_NEAR(all_reduce_time(g, 8, 1048576).time_s, 45.2778e-6, 1e-10);
}

TEST(AllReduce, KernelTimeChargesTheStacksAllReduce) {
  const GpuSpec g = h100();
  // One layer's all-reduce of Llama-3.1-70B at T = 512 on 8 GPUs: 512 x 8192 x 2 B = 8 MiB,
  // at custom_max: NCCL's NVLS, 25 us + 8 MiB / 274.3 GB/s.
  const ModelSpec m = test::model_preset("llama-3.1-70b");
  double seen = 0;
  for (const Kernel& k : layer_kernels(m, 0, 512, 0, 8, DType::Bf16)) {
    if (k.kind != Kernel::Kind::AllReduce) continue;
    EXPECT_DOUBLE_EQ(k.comm_bytes, 8388608);
    seen += kernel_time(k, g, "bf16", 1.0, vllm()).time_s;
  }
  EXPECT_NEAR(seen, 2 * (25e-6 + 8388608 / 274.3e9), 1e-12);
  // One token fewer: the custom two-shot kernel, 5 us + 1.75 x 511 x 16 KiB / 370 GB/s.
  for (const Kernel& k : layer_kernels(m, 0, 511, 0, 8, DType::Bf16)) {
    if (k.kind != Kernel::Kind::AllReduce) continue;
    EXPECT_NEAR(kernel_time(k, g, "bf16", 1.0, vllm()).time_s, 5e-6 + 1.75 * 511 * 16384 / 370e9,
                1e-12);
  }
}

TEST(AllReduce, AnIncompleteTableIsRefused) {
  GpuSpec g = h100();
  g.all_reduce.ll.step_latency_s.reset();
  EXPECT_NE(test::error_of([&] { g.validate("system.gpu"); }).find("system.gpu.all_reduce.ll"),
            std::string::npos);
  g = h100();
  g.all_reduce.nvls_latency_s.reset();
  EXPECT_NE(test::error_of([&] { g.validate("system.gpu"); }).find("nvls_latency"),
            std::string::npos);
}

}  // namespace
}  // namespace all_reduce_test
}  // namespace kappasim
