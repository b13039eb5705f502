// Non-blocking copies (issue 13 item 1): CopyEngine::start and CopyKernel::start issue their
// transfers through LinkModel::start with the blocking path's fixed costs, and a started copy
// kernel holds its SMs until its last byte, so a compute step started meanwhile runs on the
// SMs left (GpuCompute::start_step). Expectations by hand from the DGX H100 preset:
//   PCIe 5.0 x16 wire W = 16·32e9·128/130/8·370/371 B/s, DMA read 1 + 4·20/512 + 2/512 wire B
//   per payload B, round trip 1 µs; H100: dma_copy_overhead 2.36 µs, copy_kernel_block_overhead
//   0.24 µs, 132 SMs (64 warps, 32 blocks per SM at most). The copy kernel's launch shape
//   (models/gpu/copy_kernel_shape): 8 B loads, one-warp blocks, 1 block per SM, 1 load each:
//   one warp-wide load of 32 × 8 = 256 B in flight per SM.
// One simulation per TEST.
#include <gtest/gtest.h>

#include <systemc>

#include <memory>
#include <string>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "models/gpu/copy_engine.hpp"
#include "models/gpu/gpu_compute.hpp"
#include "systems/link_backend.hpp"

namespace kappasim {
namespace copy_start_test {
namespace {

constexpr double kPs = 1e-12;
constexpr double kW = 16 * 32e9 * 128.0 / 130.0 / 8 * 370.0 / 371.0;
constexpr double kDmaRead = 1 + 4 * 20.0 / 512 + 2.0 / 512;
constexpr double kRtt = 1e-6;

SystemSpec h100() {
  return read_preset_config<SystemSpec>(ConfigNode::make_scalar("h100"), "system", "system");
}

// 3 back-to-back cudaMemcpyAsync of 4 MiB in all: 3·2.36 µs + 2·1 µs of fixed cost, then one
// read: 1 µs + 4 MiB·1.16015625 / W (alone on the link; DRAM 225 GB/s and HBM do not bind).
// Both back ends.
void engine_stream(const std::string& fidelity) {
  const SystemSpec s = h100();
  std::unique_ptr<LinkModule> link;
  std::unique_ptr<CopyEngine> ce;
  TransferRequest r;
  r.dir = Direction::H2D;
  r.bytes = 4.0 * 1024 * 1024;
  TransferGroup g;
  run_simulation([&] {
    link = make_link_backend(fidelity, "link", s);
    ce = std::make_unique<CopyEngine>("ce", s.gpu, 1);
    ce->connect(*link);
    sc_core::sc_spawn([&] { ce->start(r, 3, g, 1e-6); });
  });
  const double want = 1e-6 + 3 * 2.36e-6 + 2 * kRtt + kRtt + r.bytes * kDmaRead / kW;
  EXPECT_TRUE(g.finished);
  EXPECT_EQ(r.gpu, 1);
  EXPECT_EQ(r.path, CopyPath::Dma);
  EXPECT_DOUBLE_EQ(r.start_s, 0.0);
  // flow: exact (2 ps of sc_time rounding); packet: within 1% (first request, trailing ACKs).
  if (fidelity == "flow")
    EXPECT_NEAR(g.end_s, want, 2 * kPs);
  else
    EXPECT_NEAR(g.end_s / want, 1.0, 0.01);
  EXPECT_EQ(ce->copies(), 3u);
  link->check_conservation();
}

TEST(CopyStart, CopyEngineStreamOnFlowIsFixedCostThenTheRead) { engine_stream("flow"); }
TEST(CopyStart, CopyEngineStreamOnPacketIsFixedCostThenTheRead) { engine_stream("packet"); }

// Issue 24: LinkModel::start_many (a rank's stores, one copy per GPU, in one call; the flow
// fabric queues a run due at the same time as one entry) moves every request exactly as start()
// of each in order does. Two flow links side by side in one simulation, the same four D2H copies
// on GPUs 0-3 (two due together, then one later, then one with the first two's delay again, so
// runs split and the queue orders them): the same bits for every end time and bottleneck time.
TEST(CopyStart, StartManyOnFlowMovesEachAsItsOwnStartDoes) {
  const SystemSpec s = h100();
  std::unique_ptr<LinkModule> a, b;
  TransferRequest ra[4], rb[4];
  TransferGroup ga, gb;
  const double delays[4] = {2e-6, 2e-6, 5e-6, 2e-6};
  for (int i = 0; i < 4; ++i) {
    for (TransferRequest* r : {&ra[i], &rb[i]}) {
      r->gpu = i;
      r->dir = Direction::D2H;
      r->bytes = (1 + i) * 1024.0 * 1024;
    }
  }
  run_simulation([&] {
    a = make_link_backend("flow", "a", s);
    b = make_link_backend("flow", "b", s);
    sc_core::sc_spawn([&] {
      for (int i = 0; i < 4; ++i) a->start(ra[i], ga, delays[i]);
      b->start_many(rb, 4, gb, delays);
    });
  });
  ASSERT_TRUE(ga.finished);
  ASSERT_TRUE(gb.finished);
  EXPECT_EQ(ga.end_s, gb.end_s);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ra[i].start_s, 0.0);
    EXPECT_EQ(rb[i].start_s, 0.0);
    EXPECT_EQ(ra[i].end_s, rb[i].end_s) << "copy " << i;
    EXPECT_EQ(ra[i].bottleneck_s, rb[i].bottleneck_s) << "copy " << i;
  }
  // The late one (3 MiB, 3 µs after the others) ends after the 2 MiB copy started before it.
  EXPECT_GT(rb[2].end_s, rb[1].end_s);
  a->check_conservation();
  b->check_conservation();
}

// The flow link, a copy kernel of one-warp blocks (8 B loads, 1 block per SM) and GPU 0's
// compute on that link; built inside the simulation.
struct OneWarpRig {
  std::unique_ptr<LinkModule> link;
  std::unique_ptr<CopyKernel> ck;
  std::unique_ptr<GpuCompute> gpu;
  void build(const SystemSpec& s) {
    link = make_link_backend("flow", "link", s);
    CopyKernelShape one_warp;
    one_warp.load_width = 8;
    one_warp.threads_per_block = 32;
    one_warp.blocks_per_sm = 1;
    ck = std::make_unique<CopyKernel>("ck", s.gpu, one_warp);
    ck->connect(*link);
    gpu = std::make_unique<GpuCompute>("gpu0", s.gpu);
    gpu->attach_link(*link, 0);
  }
};

// A copy kernel on half the SMs (66 of 132) and a compute-bound step started right after it:
//  - the step runs on 66/132 of the SMs: sm_bound_s = T = 50 µs stretches to 2T = 100 µs;
//  - the kernel reads 100 blocks of 16,896 B: Little's law on 66 SMs × 1 warp × 1 load × 32 ×
//    8 B in flight per 1 µs round trip = 16.896 GB/s (below the link's 62.85/1.34375 = 46.8 GB/s SM
//    read rate, so no separate latency): 100 × 0.24 µs + 1,689,600 B / 16.896 GB/s =
//    24 µs + 100 µs = 124 µs; then its SMs are back;
//  - a second step started after that (t = 124 µs) takes T again.
TEST(CopyStart, ACopyKernelHoldingHalfTheSmsStretchesAComputeBoundStepTwofold) {
  const SystemSpec s = h100();
  OneWarpRig rig;
  TransferRequest copy, step1, step2;
  copy.gpu = 0;
  copy.dir = Direction::H2D;
  copy.bytes = 100 * 16896.0;
  TransferGroup gcopy, g1, g2;
  const double T = 50e-6;
  int free_during = -1, free_after = -1;
  run_simulation([&] {
    rig.build(s);
    sc_core::sc_spawn([&] {
      rig.ck->start(copy, 100, gcopy, 0, &rig.gpu->sm_pool(), 66);
      free_during = rig.gpu->sm_pool().free();
      EXPECT_DOUBLE_EQ(rig.gpu->start_step(T, 0, step1, g1, 0, T), 2 * T);
      sc_core::wait(gcopy.done);
      free_after = rig.gpu->sm_pool().free();
      rig.gpu->start_step(T, 0, step2, g2, 0, T);
    });
  });
  EXPECT_EQ(free_during, 66);
  EXPECT_EQ(free_after, 132);
  EXPECT_EQ(rig.ck->sms_held(), 0);
  EXPECT_NEAR(copy.sm_inflight_bytes, 66 * 32 * 8.0, 1e-9);
  EXPECT_NEAR(g1.end_s, 2 * T, 2 * kPs);
  EXPECT_NEAR(gcopy.end_s, 24e-6 + 100e-6, 4 * kPs);
  EXPECT_NEAR(g2.end_s - gcopy.end_s, T, 2 * kPs);
  rig.link->check_conservation();
}

// PP micro-batches in flight each start their own copy kernel. The first wants every SM and
// gets 131 (the pool keeps one for compute); a second started meanwhile gets none and runs on
// that shared SM: one SM's warp-wide load of 256 B in flight per 1 µs round trip = 256 MB/s.
// 10 blocks of 2,560 B: 10 × 0.24 µs + 25,600 B / 256 MB/s = 2.4 + 100 µs (the first kernel's
// 131 × 256 B / 1 µs = 33.5 GB/s and this one's fit the link's 46.8 GB/s SM-read rate).
TEST(CopyStart, AKernelStartedWhileOthersHoldEverySmRunsOnTheSmComputeKeeps) {
  const SystemSpec s = h100();
  OneWarpRig rig;
  TransferRequest first, second;
  first.dir = second.dir = Direction::H2D;
  first.bytes = 100 * 16896.0;
  second.bytes = 10 * 2560.0;
  TransferGroup g1, g2;
  int free_between = -1;
  run_simulation([&] {
    rig.build(s);
    sc_core::sc_spawn([&] {
      rig.ck->start(first, 100, g1, 0, &rig.gpu->sm_pool(), 132);
      free_between = rig.gpu->sm_pool().free();
      rig.ck->start(second, 10, g2, 0, &rig.gpu->sm_pool(), 132);
    });
  });
  EXPECT_EQ(free_between, 1);
  EXPECT_NEAR(second.sm_inflight_bytes, 1 * 32 * 8.0, 1e-9);
  EXPECT_NEAR(g2.end_s, 2.4e-6 + 100e-6, 4 * kPs);
  EXPECT_TRUE(g1.finished);
  EXPECT_EQ(rig.gpu->sm_pool().free(), 132);
  EXPECT_EQ(rig.ck->sms_held(), 0);
  rig.link->check_conservation();
}

TEST(CopyStart, StartWithoutALinkIsALogicError) {
  const SystemSpec s = h100();
  std::unique_ptr<CopyEngine> ce;
  TransferRequest r;
  TransferGroup g;
  EXPECT_THROW(run_simulation([&] {
                 ce = std::make_unique<CopyEngine>("ce", s.gpu, 0);
                 ce->start(r, 1, g);
               }),
               std::logic_error);
}

}  // namespace
}  // namespace copy_start_test
}  // namespace kappasim
