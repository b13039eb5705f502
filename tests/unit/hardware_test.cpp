// The hardware descriptions read from presets: PCIe bandwidth derived from rate × lanes ×
// encoding, lane overrides through --set, NVLink-C2C (shared on GB200), host DRAM bandwidth
// from channels × rate × width, GPU peak FLOP/s, and that every preset loads. Expected values
// are computed here from the spec numbers (PCI-SIG, JEDEC, NVIDIA datasheets) written as
// literals.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "interconnects/link_spec.hpp"
#include "memory/host_memory_spec.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace hardware_test {
namespace {

SystemSpec system_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<SystemSpec>(ref, "system", "system");
}

// A root {system: <name>} with --set style overrides applied, read like the CLI reads it.
SystemSpec system_with(const std::string& name, const std::vector<std::string>& sets) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar(name));
  for (const auto& s : sets) apply_set(root, s);
  const ConfigNode* sys = root.find("system");
  EXPECT_NE(sys, nullptr);
  return read_preset_config<SystemSpec>(*sys, "system", "system");
}

LinkSpec link_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<LinkSpec>(ref, "link", "link");
}

void expect_rel(double actual, double expected, double rel, const std::string& what = "") {
  EXPECT_NEAR(actual, expected, rel * (expected < 0 ? -expected : expected)) << what;
}

// PCI-SIG base specs: GT/s per lane; Gen3-5 128b/130b line code; Gen6 256 B FLIT with 236 B of
// TLP. Per direction, x16, bits -> bytes.
const double kGen3 = 8e9 * 16 * 128 / 130 / 8;   // 15.7538e9 B/s
const double kGen4 = 16e9 * 16 * 128 / 130 / 8;  // 31.5077e9
const double kGen5 = 32e9 * 16 * 128 / 130 / 8;  // 63.0154e9
const double kGen6 = 64e9 * 16 * 236 / 256 / 8;  // 118e9

TEST(Hardware, PcieBandwidthDerivedFromSpec) {
  expect_rel(kGen3, 15.75385e9, 1e-6, "hand value Gen3");
  expect_rel(kGen4, 31.5077e9, 1e-5, "hand value Gen4");
  expect_rel(kGen5, 63.0154e9, 1e-5, "hand value Gen5");
  expect_rel(kGen6, 118e9, 1e-12, "hand value Gen6");

  const LinkSpec g3 = link_preset("pcie3");
  EXPECT_EQ(g3.type, LinkType::Pcie);
  EXPECT_EQ(g3.generation, 3);
  EXPECT_EQ(g3.lanes, 16);
  EXPECT_DOUBLE_EQ(g3.rate_per_lane_Tps, 8e9);
  expect_rel(g3.per_direction_bandwidth(), kGen3, 1e-12, "pcie3");
  expect_rel(link_preset("pcie4").per_direction_bandwidth(), kGen4, 1e-12, "pcie4");
  expect_rel(link_preset("pcie5").per_direction_bandwidth(), kGen5, 1e-12, "pcie5");
  expect_rel(link_preset("pcie6").per_direction_bandwidth(), kGen6, 1e-12, "pcie6");
  // reference-data.md table: 15.75 / 31.5 / 63.0 / ≈118 GB/s.
  expect_rel(link_preset("pcie5").per_direction_bandwidth(), 63.0e9, 1e-3, "63.0 GB/s");
}

TEST(Hardware, SystemHostLinkBandwidthPerGpu) {
  expect_rel(system_preset("h100").host_link_bandwidth_per_gpu(), kGen5, 1e-12, "h100");
  expect_rel(system_preset("dgx-h100").host_link_bandwidth_per_gpu(), kGen5, 1e-12);
  expect_rel(system_preset("paper-testbed").host_link_bandwidth_per_gpu(), kGen5, 1e-12);
  expect_rel(system_preset("b200").host_link_bandwidth_per_gpu(), kGen5, 1e-12, "b200");
  // DGX A100: two GPUs behind each PCIe 4.0 x16 switch uplink.
  expect_rel(system_preset("a100").host_link_bandwidth_per_gpu(), kGen4 / 2, 1e-12, "a100");
}

TEST(Hardware, LaneOverrideThroughSet) {
  const SystemSpec x8 = system_with("h100", {"system.host_link.lanes=8"});
  EXPECT_EQ(x8.host_link.lanes, 8);
  EXPECT_EQ(x8.host_link.generation, 5);  // still the preset's PCIe 5.0
  expect_rel(x8.host_link_bandwidth_per_gpu(), kGen5 / 2, 1e-12, "x8 halves x16");
  const SystemSpec x1 = system_with("h100", {"system.host_link.lanes=1"});
  expect_rel(x1.host_link_bandwidth_per_gpu(), 32e9 * 1 * 128 / 130 / 8, 1e-12, "x1");
  // Swapping the link preset keeps the default x16.
  const SystemSpec g4 = system_with("h100", {"system.host_link=pcie4"});
  expect_rel(g4.host_link_bandwidth_per_gpu(), kGen4, 1e-12, "pcie4");
  const SystemSpec g6x8 = system_with("h100", {"system.host_link={preset: pcie6, lanes: 8}"});
  expect_rel(g6x8.host_link_bandwidth_per_gpu(), 64e9 * 8 * 236 / 256 / 8, 1e-12, "pcie6 x8");
  // The override does not leak into the preset itself.
  expect_rel(system_preset("h100").host_link_bandwidth_per_gpu(), kGen5, 1e-12);
}

TEST(Hardware, InvalidLaneCountsRejected) {
  EXPECT_THROW(system_with("h100", {"system.host_link.lanes=3"}), InputError);
  EXPECT_THROW(system_with("h100", {"system.host_link.lanes=64"}), InputError);
  EXPECT_THROW(system_with("h100", {"system.host_link.lanes=24"}), InputError);
  EXPECT_THROW(system_with("h100", {"system.host_link.lanes=0"}), InputError);
}

TEST(Hardware, NvlinkC2c) {
  // NVIDIA GH200 / GB200 datasheets: NVLink-C2C 900 GB/s bidirectional = 450 GB/s per direction.
  const LinkSpec c2c = link_preset("nvlink-c2c");
  EXPECT_EQ(c2c.type, LinkType::C2c);
  EXPECT_DOUBLE_EQ(c2c.per_direction_bandwidth(), 450e9);
  ASSERT_TRUE(c2c.energy_per_byte_J.has_value());
  expect_rel(*c2c.energy_per_byte_J, 1.3e-12 * 8, 1e-12, "1.3 pJ/bit");  // stored per byte
  EXPECT_DOUBLE_EQ(system_preset("gh200").host_link_bandwidth_per_gpu(), 450e9);
  // GB200: the superchip's 900 GB/s C2C split into one share per B200 (links: 450 / 2 per
  // direction each; a lone GPU gets its share, not the whole link).
  const SystemSpec gb = system_preset("gb200");
  EXPECT_EQ(gb.gpus_sharing_host_link, 1);
  EXPECT_DOUBLE_EQ(gb.host_link.per_direction_bandwidth(), 450e9 / 2);
  EXPECT_DOUBLE_EQ(gb.host_link_bandwidth_per_gpu(), 225e9);
  // Unified HBM tier (hypothetical): 8 TB/s per GPU.
  EXPECT_DOUBLE_EQ(system_preset("unified-hbm").host_link_bandwidth_per_gpu(), 8e12);
}

TEST(Hardware, SharingMoreGpusThanTheSystemHasRejected) {
  EXPECT_THROW(system_with("gh200", {"system.gpus_sharing_host_link=2"}), InputError);
}

TEST(Hardware, HostMemoryBandwidth) {
  // Paper testbed host: 8 DDR4 channels/socket (AMD EPYC 7003), 3200 MT/s, 8 B per transfer.
  const SystemSpec tb = system_preset("paper-testbed");
  EXPECT_EQ(tb.host_memory.sockets, 2);
  EXPECT_DOUBLE_EQ(tb.host_memory.socket_bandwidth(), 8 * 3200e6 * 8);
  EXPECT_DOUBLE_EQ(tb.host_memory.socket_bandwidth(), 204.8e9);
  EXPECT_DOUBLE_EQ(tb.host_memory.capacity_bytes, 2e12);
  // DGX H100 host: 8 DDR5 channels/socket at 4400 MT/s (2 DPC), 8 B.
  EXPECT_DOUBLE_EQ(system_preset("h100").host_memory.socket_bandwidth(), 8 * 4400e6 * 8);
  // Grace: published 512 GB/s LPDDR5X.
  EXPECT_DOUBLE_EQ(system_preset("gh200").host_memory.socket_bandwidth(), 512e9);
  EXPECT_DOUBLE_EQ(system_preset("gb200").host_memory.socket_bandwidth(), 512e9);
}

TEST(Hardware, HostMemoryNeedsExactlyOneBandwidthForm) {
  HostMemorySpec both;
  both.bandwidth_per_socket_Bps = 1e9;
  both.channels_per_socket = 8;
  both.capacity_bytes = 1e9;
  EXPECT_THROW(both.validate("hm"), InputError);
  HostMemorySpec none;
  none.capacity_bytes = 1e9;
  EXPECT_THROW(none.validate("hm"), InputError);
}

TEST(Hardware, GpuPeaks) {
  // NVIDIA H100 datasheet (SXM): BF16 1,979 / FP8 3,958 TFLOPS with sparsity, dense = half.
  const SystemSpec h = system_preset("h100");
  EXPECT_DOUBLE_EQ(h.gpu.peak("bf16"), 989e12);
  EXPECT_DOUBLE_EQ(h.gpu.peak("fp8"), 1979e12);
  EXPECT_DOUBLE_EQ(h.gpu.hbm_capacity_bytes, 80e9);
  EXPECT_DOUBLE_EQ(h.gpu.hbm_bandwidth_Bps, 3.35e12);
  EXPECT_EQ(h.gpu.sm_count, 132);
  EXPECT_DOUBLE_EQ(h.gpu.tdp_w, 700);
  // NVIDIA A100 datasheet: BF16 312 TFLOPS dense; no FP8 tensor cores.
  const SystemSpec a = system_preset("a100");
  EXPECT_DOUBLE_EQ(a.gpu.peak("bf16"), 312e12);
  EXPECT_THROW(a.gpu.peak("fp8"), InputError);
  EXPECT_THROW(h.gpu.peak("fp4"), InputError);
  // B200 (1000 W): BF16 4,500 TFLOPS sparse / 2.
  EXPECT_DOUBLE_EQ(system_preset("b200").gpu.peak("bf16"), 2250e12);
}

TEST(Hardware, GpuOverrideThroughSet) {
  const SystemSpec s = system_with("h100", {"system.gpu.peak_flops.bf16=2000 TFLOP/s"});
  EXPECT_DOUBLE_EQ(s.gpu.peak("bf16"), 2000e12);
  EXPECT_DOUBLE_EQ(s.gpu.peak("fp8"), 1979e12);  // untouched
}

// The preset files shipped in presets/<folder>/ (the registry itself is shared with tests that
// register deliberately broken presets, so list the source tree instead).
std::vector<std::string> shipped(const std::string& kind) {
  std::vector<std::string> names;
  const std::filesystem::path dir =
      std::filesystem::path(KAPPASIM_SOURCE_DIR) / "presets" / PresetRegistry::folder_of(kind);
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Hardware, EveryPresetLoads) {
  const std::vector<std::string> systems = shipped("system");
  EXPECT_EQ(systems,
            (std::vector<std::string>{
                "a100",
                "b200",
                "dgx-h100",
                "dgx-h100-256gb-cxl",
                "dgx-h100-256gb-cxl-nvme",
                "dgx-h100-256gb-cxl-pool",
                "dgx-h100-256gb-nvme",
                "gb200",
                "gb300",
                "gh200",
                "h100",
                "h20",
                "hgx-b300",
                "hgx-b300-gen6",
                "l40s",
                "mi300a",
                "mi300x",
                "mi355x",
                "paper-testbed",
                "paper-testbed-gen4",
                "rtx-pro-6000",
                "rubin-cpx",
                "unified-hbm",
                "vr200"}));  // issue 14: the DGX H100 tier variants; issue 25: new generations
  const PresetRegistry& reg = PresetRegistry::instance();
  for (const auto& n : systems) {
    SCOPED_TRACE(n);
    EXPECT_NE(reg.find("system", n), nullptr);  // compiled in as a built-in
    SystemSpec s;
    EXPECT_NO_THROW(s = system_preset(n));
    EXPECT_GT(s.host_link_bandwidth_per_gpu(), 0);
    EXPECT_GT(s.host_memory.socket_bandwidth(), 0);
    EXPECT_GT(s.gpu.peak("bf16"), 0);
    EXPECT_GE(s.gpus, s.gpus_sharing_host_link);
  }
  const std::vector<std::string> links = shipped("link");
  EXPECT_EQ(links.size(), 6u);
  for (const auto& n : links) {
    SCOPED_TRACE(n);
    EXPECT_GT(link_preset(n).per_direction_bandwidth(), 0);
  }
  const std::vector<std::string> gpus = shipped("gpu");
  EXPECT_EQ(gpus.size(), 16u);  // issue 25: 10 new GPUs
  for (const auto& n : gpus) {
    SCOPED_TRACE(n);
    ConfigNode ref = ConfigNode::make_scalar(n);
    EXPECT_NO_THROW(read_preset_config<GpuSpec>(ref, "gpu", "gpu"));
  }
  const std::vector<std::string> hosts = shipped("host-memory");
  EXPECT_EQ(hosts.size(), 11u);  // issue 14: dgx-h100-host-256gb; issue 25: 4 new hosts
  for (const auto& n : hosts) {
    SCOPED_TRACE(n);
    ConfigNode ref = ConfigNode::make_scalar(n);
    EXPECT_GT(read_preset_config<HostMemorySpec>(ref, "host-memory", "hm").socket_bandwidth(), 0);
  }
}

}  // namespace
}  // namespace hardware_test
}  // namespace kappasim
