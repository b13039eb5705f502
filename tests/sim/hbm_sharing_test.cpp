// HBM as a shared resource (issue 13 item 2): a GPU's compute step is one CopyPath::Local flow
// on its HBM (GpuCompute::start_step), capped at hbm_bytes / step time. Alone it ends exactly at
// the step time; next to a host copy landing in the same HBM, max-min sharing splits the HBM
// and the step stretches by a factor computed by hand below. One simulation per TEST.
#include <gtest/gtest.h>

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "models/gpu/gpu_compute.hpp"
#include "systems/flow_fabric.hpp"
#include "systems/link_backend.hpp"
#include "systems/topology.hpp"

namespace kappasim {
namespace hbm_sharing_test {
namespace {

constexpr double kPs = 1e-12;

SystemSpec system_preset(const std::string& name) {
  return read_preset_config<SystemSpec>(ConfigNode::make_scalar(name), "system", "system");
}

// HBM capacity of the flow model: hbm_bandwidth × hbm_efficiency (the same roof kernel_timing
// divides a kernel's HBM bytes by). H100 SXM5: 3.35 TB/s × 0.92.
double hbm_capacity(const SystemSpec& s) {
  return s.gpu.hbm_bandwidth_Bps * s.gpu.hbm_efficiency.value_or(1.0);
}

TEST(HbmSharing, AComputeStepAloneEndsAtExactlyItsComputeTime) {
  const SystemSpec s = system_preset("h100");
  EXPECT_DOUBLE_EQ(hbm_capacity(s), 3.35e12 * 0.92);
  const double T = 1e-3;
  std::unique_ptr<LinkModule> link;
  std::unique_ptr<GpuCompute> gpu;
  TransferRequest a, b, c;
  TransferGroup ga, gb, gc;
  double ta = -1, tb = -1, tc = -1;
  run_simulation([&] {
    link = make_link_backend("flow", "fabric", s);
    gpu = std::make_unique<GpuCompute>("gpu0", s.gpu);
    gpu->attach_link(*link, 0);
    sc_core::sc_spawn([&] {
      // 60% of the HBM roof for T; then no HBM bytes (a timed completion); then 100% of the
      // roof (memory-bound), 0.5 ms after being started.
      EXPECT_DOUBLE_EQ(gpu->start_step(T, 0.6 * hbm_capacity(s) * T, a, ga), T);
      sc_core::wait(ga.done);
      ta = ga.end_s;
      gpu->start_step(T, 0, b, gb);
      sc_core::wait(gb.done);
      tb = gb.end_s - ta;
      gpu->start_step(T, hbm_capacity(s) * T, c, gc, 0.5e-3);
      sc_core::wait(gc.done);
      tc = gc.end_s - ta - tb;
    });
  });
  EXPECT_NEAR(ta, T, 2 * kPs);
  EXPECT_NEAR(tb, T, 2 * kPs);
  EXPECT_NEAR(tc, 0.5e-3 + T, 2 * kPs);
  EXPECT_EQ(a.path, CopyPath::Local);
  EXPECT_DOUBLE_EQ(a.rate_cap_Bps, 0.6 * hbm_capacity(s));
  link->check_conservation();
  // Only gpu0.hbm carried anything: 0.6·C·T + C·T bytes.
  for (const auto& r : dynamic_cast<FlowFabric&>(*link).stats())
    EXPECT_NEAR(r.carried, r.name == "gpu0.hbm" ? 1.6 * hbm_capacity(s) * T : 0.0, 1e-3) << r.name;
}

// The unified-HBM setting of the tests below: the tier link set to 0.6·C (C: the HBM
// capacity), and a tier copy into GPU 0 demanding 0.6·C for 3·T.
struct TierSetting {
  SystemSpec s = system_preset("unified-hbm");
  double C = hbm_capacity(s);
  double T = 1e-3;
  TransferRequest copy;
  TierSetting() {
    s.host_link.bandwidth_per_direction_Bps = 0.6 * C;
    copy.gpu = 0;
    copy.dir = Direction::H2D;
    copy.path = CopyPath::Dma;
    copy.bytes = 0.6 * C * 3 * T;
  }
};

// Unified-HBM tier (B200, 8 TB/s × hbm_efficiency of HBM C), the tier link set to 0.6·C so a
// tier copy alone demands 60% of the HBM; the compute step also demands 0.6·C (bytes 0.6·C·T
// over T). Together they want 1.2·C > C: max-min gives each C/2. By hand:
//   compute: 0.6·C·T bytes at C/2 → ends at 1.2·T (stretch 1.2);
//   copy of 0.6·C·3T bytes: 0.5·C·1.2T moved by 1.2·T, the remaining 0.6·C·T·(3 − 1) at 0.6·C
//   → 2T more: ends at 3.2·T (alone 3T).
TEST(HbmSharing, AComputeStepAndATierCopyShareHbmMaxMin) {
  TierSetting x;
  const SystemSpec& s = x.s;
  const double C = x.C, T = x.T;
  TransferRequest& copy = x.copy;
  std::unique_ptr<LinkModule> link;
  std::unique_ptr<GpuCompute> gpu;
  TransferRequest step;
  TransferGroup gs, gcopy;
  run_simulation([&] {
    link = make_link_backend("flow", "fabric", s);
    gpu = std::make_unique<GpuCompute>("gpu0", s.gpu);
    gpu->attach_link(*link, 0);
    sc_core::sc_spawn([&] {
      link->start(copy, gcopy);
      gpu->start_step(T, 0.6 * C * T, step, gs);
    });
  });
  EXPECT_EQ(link->latency_s(0, Direction::H2D, CopyPath::Dma, true), 0.0);  // no tier latency
  EXPECT_NEAR(step.end_s, 1.2 * T, 4 * kPs);
  EXPECT_NEAR(copy.end_s, 3.2 * T, 4 * kPs);
  link->check_conservation();
}

// Issue 24: a tensor-parallel group's GPUs compute a step in lockstep (their per-layer
// all-reduces keep them within a layer of each other): GpuCompute::start_steps moves the group's
// HBM flows as one flow crossing every GPU's HBM, at the slowest GPU's rate. The setting above on
// two GPUs, the tier copy landing in GPU 0's HBM only: GPU 0's share is C/2, so GPU 1's step,
// alone on its HBM, ends with GPU 0's at 1.2·T (on its own it would end at T). Each GPU's HBM
// carries its own 0.6·C·T; each GPU books its own step.
TEST(HbmSharing, AGroupsStepsMoveInLockstepAtTheSlowestGpusRate) {
  TierSetting x;
  const SystemSpec& s = x.s;
  const double C = x.C, T = x.T;
  TransferRequest& copy = x.copy;
  std::unique_ptr<LinkModule> link;
  std::vector<std::unique_ptr<GpuCompute>> gpus;
  std::vector<TransferRequest> steps(2);
  TransferGroup gs, gcopy;
  run_simulation([&] {
    link = make_link_backend("flow", "fabric", s);
    for (int i = 0; i < 2; ++i) {
      gpus.push_back(std::make_unique<GpuCompute>(("gpu" + std::to_string(i)).c_str(), s.gpu));
      gpus.back()->attach_link(*link, i);
    }
    sc_core::sc_spawn([&] {
      link->start(copy, gcopy);
      GpuCompute* both[] = {gpus[0].get(), gpus[1].get()};
      GpuCompute::start_steps(both, 2, T, 0.6 * C * T, steps.data(), gs);
    });
  });
  EXPECT_NEAR(steps[0].end_s, 1.2 * T, 4 * kPs);
  EXPECT_NEAR(steps[1].end_s, 1.2 * T, 4 * kPs);
  EXPECT_NEAR(gs.end_s, 1.2 * T, 4 * kPs);
  EXPECT_NEAR(copy.end_s, 3.2 * T, 4 * kPs);
  for (const TransferRequest& r : steps) {
    EXPECT_EQ(r.path, CopyPath::Local);
    EXPECT_DOUBLE_EQ(r.bytes, 0.6 * C * T);
  }
  for (const auto& g : gpus) EXPECT_DOUBLE_EQ(g->stats().time.compute_time_s, T);
  link->check_conservation();
  for (const auto& r : dynamic_cast<FlowFabric&>(*link).stats()) {
    if (r.name == "gpu1.hbm") {
      EXPECT_NEAR(r.carried, 0.6 * C * T, 1e-3);
    }
  }
  EXPECT_EQ(dynamic_cast<FlowFabric&>(*link).transfers(), 3u);  // two steps and the copy
}

// On the packet back end (no HBM), a compute step is a timed completion: it ends at its time.
TEST(HbmSharing, OnThePacketBackEndAStepIsTimed) {
  const SystemSpec s = system_preset("h100");
  std::unique_ptr<LinkModule> link;
  std::unique_ptr<GpuCompute> gpu;
  TransferRequest r;
  TransferGroup g;
  run_simulation([&] {
    link = make_link_backend("packet", "fabric", s);
    gpu = std::make_unique<GpuCompute>("gpu0", s.gpu);
    gpu->attach_link(*link, 0);
    sc_core::sc_spawn([&] { gpu->start_step(2e-3, 1e9, r, g, 1e-3); });
  });
  EXPECT_TRUE(g.finished);
  EXPECT_NEAR(g.end_s, 3e-3, kPs);
}

}  // namespace
}  // namespace hbm_sharing_test
}  // namespace kappasim
