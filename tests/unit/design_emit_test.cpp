// models/design/design_emit and `kappasim design emit`: an emitted design point, loaded back
// through the ordinary preset loader, has exactly the design model's FLOP/s, link rate, SRAM and
// power. The expected numbers are computed here from the coefficient literals of
// presets/design/h100-4n.yaml, not from the model.
//
// By hand, equal-area split compute 0.8 / link 0.1 / SRAM 0.1 of h100-4n:
//   movable area A = 989 TFLOP/s / 2.1978 TFLOP/s/mm^2 + 63.015384615 GB/s / 8.7521 GB/s/mm^2
//                  = 449.9955 + 7.2000 = 457.1955 mm^2 (fixed = 814 - A = 356.80 mm^2)
//   C    = 0.8 x A x 2.1978  = 803.86 TFLOP/s
//   BW   = 0.1 x A x 8.7521  = 400.14 GB/s per direction (= 101.6 PCIe 5.0 lanes)
//   SRAM = 0.1 x A x 4.1681 MB/mm^2 = 190.56 MB per GPU
//   power = fixed (700 - 989e12 x 0.56623 pJ - 63.015e9 B/s x 2 x 130 pJ/B = 123.61 W)
//         + C x 0.56623 pJ (455.17 W) + BW x 2 x 130 pJ/B (104.04 W) + SRAM x 20 mW/MB (3.81 W)
//         = 686.63 W
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/design/area_power.hpp"
#include "models/design/design_emit.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "serving/serving_spec.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace design_emit_test {
namespace {

// presets/design/h100-4n.yaml literals (SI).
const double kDie = 814e-6, kTdp = 700, kC0 = 989e12, kBw0 = 63.015384615e9;
const double kRhoC = 2.1978e18, kEc = 0.56623e-12, kRhoL = 8.7521e15, kEl = 16.25e-12 * 8;
const double kRhoS = 4.1681e12, kPs = 20e-3 / 1e6, kSramBw = 3.35e12;

DesignCoefficients h100_4n() {
  return read_preset_config<DesignCoefficients>(ConfigNode::make_scalar("h100-4n"), "design",
                                                "test");
}

void expect_rel(double got, double want, double tol = 1e-9) {
  EXPECT_NEAR(got / want, 1.0, tol) << "got " << got << ", want " << want;
}

// Registers the emitted GPU under its name and reads the system and kv_buffer back through the
// loader that `run` uses.
struct Loaded {
  GpuSpec gpu;
  SystemSpec system;
  KvBufferSpec buffer;
};
Loaded load_back(const EmittedDesign& e) {
  PresetRegistry::instance().add_text("gpu", e.name, "emitted/gpus/" + e.name + ".yaml",
                                      emit_yaml(e.gpu));
  PresetRegistry::instance().add_text(
      "system", e.system_name, "emitted/systems/" + e.system_name + ".yaml", emit_yaml(e.system));
  Loaded l;
  l.system =
      read_preset_config<SystemSpec>(ConfigNode::make_scalar(e.system_name), "system", "system");
  l.gpu = l.system.gpu;
  l.buffer = read_config<KvBufferSpec>(parse_yaml(emit_yaml(e.kv_buffer), "kv_buffer.yaml"),
                                       "serving.kv_buffer");
  return l;
}

TEST(DesignEmit, EmittedPresetReproducesTheDesignModelByHand) {
  DesignSplit s;
  s.mode = BudgetMode::Area;
  s.link_fraction = 0.1;
  s.sram_fraction = 0.1;
  DesignEmitOptions o;
  o.host = "dgx-h100";
  const EmittedDesign e = emit_design(h100_4n(), s, o);
  const Loaded l = load_back(e);

  const double A = kC0 / kRhoC + kBw0 / kRhoL;
  const double C = 0.8 * A * kRhoC, BW = 0.1 * A * kRhoL, S = 0.1 * A * kRhoS;
  const double fixed_w = kTdp - kC0 * kEc - kBw0 * 2 * kEl;
  const double P = fixed_w + C * kEc + BW * 2 * kEl + S * kPs;
  EXPECT_NEAR(A * 1e6, 457.1955, 1e-3);  // the hand value above
  EXPECT_NEAR(kDie - A, 356.80e-6, 0.01e-6);
  expect_rel(l.gpu.peak_flops.at("bf16"), C);
  expect_rel(l.gpu.peak_flops.at("fp8"), 1979e12 * C / kC0);  // every precision scales with the SMs
  expect_rel(l.system.host_link.per_direction_bandwidth(), BW);
  EXPECT_EQ(l.system.host_link.lanes, 16);
  EXPECT_EQ(l.system.gpus_sharing_host_link, 1);
  // The requester keeps the base die's tags per B/s of PHY: 768 x BW / kBw0, rounded.
  EXPECT_EQ(*l.system.host_link.max_outstanding_reads, std::round(768 * BW / kBw0));
  expect_rel(l.buffer.capacity_bytes, S);
  EXPECT_EQ(l.buffer.kind, KvBufferKind::Sram);
  expect_rel(*l.buffer.bandwidth_Bps, kSramBw);
  expect_rel(l.gpu.tdp_w, P);
  EXPECT_NEAR(l.gpu.tdp_w, 686.63, 0.01);
  // Idle power: 140 W + the always-on PHY above the base die's + the SRAM.
  expect_rel(*l.gpu.idle_power_w, 140 + (BW - kBw0) * 2 * kEl + S * kPs);
  EXPECT_EQ(l.gpu.sm_count, 107);  // round(132 x 803.86 / 989) = round(107.29)
  // The rest of the system is the DGX H100's; every changed value says where it came from.
  EXPECT_EQ(l.system.gpus, 8);
  EXPECT_EQ(l.system.gpus_per_socket, 4);
  ASSERT_TRUE(e.gpu.find("tdp")->provenance);
  EXPECT_EQ(e.gpu.find("tdp")->provenance->kind, "derived");
  EXPECT_NE(e.gpu.find("tdp")->provenance->source.find("compute 0.8 / link 0.1 / SRAM 0.1"),
            std::string::npos);
}

TEST(DesignEmit, BaselineSplitIsTheStockH100) {
  const DesignCoefficients c = h100_4n();
  DesignEmitOptions o;
  o.host = "dgx-h100";
  o.name = "test-stock";
  const Loaded l = load_back(emit_design(c, baseline_split(c, BudgetMode::Area), o));
  expect_rel(l.gpu.peak_flops.at("bf16"), 989e12);
  // PCIe 5.0 x16: 16 x 32 GT/s x 128/130 / 8
  expect_rel(l.system.host_link.per_direction_bandwidth(), 16 * 32e9 * 128.0 / 130.0 / 8, 1e-8);
  EXPECT_EQ(*l.system.host_link.max_outstanding_reads, 768);  // pcie5's own
  EXPECT_EQ(l.buffer.capacity_bytes, 0);
  EXPECT_EQ(l.gpu.sm_count, 132);
  EXPECT_NEAR(l.gpu.tdp_w, 700, 1e-6);
  EXPECT_NEAR(*l.gpu.idle_power_w, 140, 1e-6);
}

TEST(DesignEmit, GraceAndDieOnlyHosts) {
  DesignSplit s;
  s.mode = BudgetMode::Power;
  s.link_fraction = 0.1;
  DesignEmitOptions o;
  o.host = "gb200";
  const Loaded g = load_back(emit_design(h100_4n(), s, o));
  EXPECT_EQ(g.system.gpus, 8);
  EXPECT_EQ(g.system.gpus_per_socket, 2);
  EXPECT_EQ(g.system.host_memory.sockets, 4);
  // 512 GB/s LPDDR5X per Grace (presets/host-memory/gb200-grace.yaml)
  EXPECT_NEAR(*g.system.host_memory.bandwidth_per_socket_Bps, 512e9, 1);
  o.host = "unlimited";
  const Loaded u = load_back(emit_design(h100_4n(), s, o));
  EXPECT_EQ(u.system.gpus_per_socket, 1);
  EXPECT_GE(*u.system.host_memory.bandwidth_per_socket_Bps, 1e15);
}

TEST(DesignEmit, InfeasibleSplitsAndUnknownNamesAreInputErrors) {
  const DesignCoefficients c = h100_4n();
  DesignSplit s;
  s.mode = BudgetMode::Area;
  s.link_fraction = 0.5;  // 0.5 x 457.2 mm^2 of PHY draws 0.5 x A x 8.7521 GB/s x 260 pJ/B = 520 W
  EXPECT_THROW(emit_design(c, s, {}), InputError);
  s.link_fraction = 0.05;
  s.sram_fraction = 0.1;
  DesignEmitOptions o;
  o.base_gpu = "no-such-gpu";
  EXPECT_THROW(emit_design(c, s, o), InputError);
  o = {};
  o.host = "no-such-host";
  EXPECT_THROW(emit_design(c, s, o), InputError);
  s.sram_fraction = 0.99;  // sums to more than 1
  EXPECT_THROW(emit_design(c, s, {}), InputError);
}

}  // namespace
}  // namespace design_emit_test
}  // namespace kappasim
