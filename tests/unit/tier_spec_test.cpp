// KV tiers below host DRAM (issue 14, docs/memory-tiers.md): the CXL expander and NVMe drive
// specs (link payload from rate × lanes × line code × flit framing, request-size-dependent
// NVMe bandwidth), their presets with sources, the system's device blocks and their bad
// inputs, and the analytic per-tier κ_crit. Every expected number is computed by hand in a
// comment from the spec figures, never copied from the program's output.
#include <gtest/gtest.h>

#include <string>

#include "../cli/cli_util.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "memory/cxl_expander_spec.hpp"
#include "memory/nvme_drive_spec.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

SystemSpec system_from_yaml(const std::string& yaml) {
  ConfigNode root = parse_yaml(yaml, "test.yaml");
  return read_preset_config<SystemSpec>(root, "system", "system");
}

CxlExpanderSpec gen5_x8_cxl() {
  CxlExpanderSpec c;
  c.capacity_bytes = 256e9;
  c.rate_per_lane_Tps = 32e9;
  c.lanes = 8;
  c.encoding_data = 128;
  c.encoding_total = 130;
  c.flit_bytes = 68;
  c.flit_data_bytes = 64;
  return c;
}

NvmeDriveSpec gen5_x4_nvme() {
  NvmeDriveSpec d;
  d.capacity_bytes = 3.84e12;
  d.rate_per_lane_Tps = 32e9;
  d.lanes = 4;
  d.seq_read_Bps = 13e9;
  d.seq_write_Bps = 6.6e9;
  d.read_iops = 2.5e6;
  d.write_iops = 250e3;
  d.io_bytes = 4096;
  d.queue_depth = 256;
  d.read_latency_s = 70e-6;
  return d;
}

TEST(TierSpec, CxlGen5x8LinkPayloadByHand) {
  // 32 GT/s × 8 lanes = 256 Gb/s = 32 GB/s raw per direction; 128b/130b leaves
  // 32 × 128/130 = 31.5077 GB/s; a 68 B flit carries 64 B of slots: 31.5077 × 64/68 =
  // 29.6543 GB/s.
  const CxlExpanderSpec c = gen5_x8_cxl();
  EXPECT_NEAR(c.link_Bps(), 29.6543e9, 0.0001e9);
  // No media limit given: the link is what a device reads at.
  EXPECT_DOUBLE_EQ(c.read_Bps(), c.link_Bps());
  // A media ceiling below the link binds.
  CxlExpanderSpec slow = c;
  slow.media_read_Bps = 20e9;
  EXPECT_DOUBLE_EQ(slow.read_Bps(), 20e9);
  EXPECT_DOUBLE_EQ(slow.write_Bps(), c.link_Bps());
}

TEST(TierSpec, NvmeGen5x4LinkAndRequestSize) {
  // 32 GT/s × 4 lanes / 8 = 16 GB/s raw; × 128/130 = 15.7538 GB/s per direction.
  const NvmeDriveSpec d = gen5_x4_nvme();
  EXPECT_NEAR(d.link_Bps(), 15.7538e9, 0.0001e9);
  // 4 KiB reads: the IOPS bound, 2.5e6 × 4096 = 10.24 GB/s (below the 13 GB/s sequential).
  EXPECT_NEAR(d.read_Bps(4096), 10.24e9, 1e3);
  // 1 MiB reads: 2.5e6 × 1 MiB is far above, so the sequential 13 GB/s binds.
  EXPECT_DOUBLE_EQ(d.read_Bps(1048576), 13e9);
  // Writes: 4 KiB at 250 K IOPS = 1.024 GB/s; 1 MiB at the sequential 6.6 GB/s.
  EXPECT_NEAR(d.write_Bps(4096), 1.024e9, 1e3);
  EXPECT_DOUBLE_EQ(d.write_Bps(1048576), 6.6e9);
}

TEST(TierSpec, PresetsLoadWithSources) {
  ProvenanceTable prov;
  ConfigNode ref = ConfigNode::make_scalar("samsung-cmm-d-256gb");
  const CxlExpanderSpec c = read_preset_config<CxlExpanderSpec>(ref, "cxl", "cxl", &prov);
  EXPECT_DOUBLE_EQ(c.capacity_bytes, 256e9);
  EXPECT_EQ(c.lanes, 8);
  EXPECT_NEAR(c.link_Bps(), 29.6543e9, 0.0001e9);  // as the hand computation above
  ASSERT_TRUE(prov.count("cxl.flit_bytes"));
  EXPECT_EQ(prov.at("cxl.flit_bytes").first.kind, "spec");
  ASSERT_TRUE(prov.count("cxl.usd_per_byte"));
  EXPECT_EQ(prov.at("cxl.usd_per_byte").first.kind, "assumption");

  ConfigNode micron = ConfigNode::make_scalar("micron-cz120-256gb");
  EXPECT_EQ(read_preset_config<CxlExpanderSpec>(micron, "cxl", "cxl").lanes, 8);

  ConfigNode pm1743 = ConfigNode::make_scalar("samsung-pm1743-3840gb");
  const NvmeDriveSpec d = read_preset_config<NvmeDriveSpec>(pm1743, "nvme", "nvme", &prov);
  EXPECT_DOUBLE_EQ(d.seq_read_Bps, 13000e6);  // Samsung: up to 13,000 MB/s
  EXPECT_DOUBLE_EQ(d.read_iops, 2.5e6);
  EXPECT_EQ(prov.at("nvme.seq_read_bandwidth").first.kind, "spec");
  ConfigNode pm1733 = ConfigNode::make_scalar("samsung-pm1733-3840gb");
  const NvmeDriveSpec g4 = read_preset_config<NvmeDriveSpec>(pm1733, "nvme", "nvme");
  // Gen4 x4: 16 GT/s × 4 / 8 × 128/130 = 7.8769 GB/s, above its 7 GB/s sequential read.
  EXPECT_NEAR(g4.link_Bps(), 7.8769e9, 0.0001e9);
  EXPECT_DOUBLE_EQ(g4.read_Bps(1048576), 7000e6);

  // The system variants: 256 GB of DRAM plus 8 devices of each kind.
  ConfigNode cxl_sys = ConfigNode::make_scalar("dgx-h100-256gb-cxl");
  const SystemSpec s = read_preset_config<SystemSpec>(cxl_sys, "system", "system", &prov);
  EXPECT_DOUBLE_EQ(s.host_memory.capacity_bytes, 256e9);
  EXPECT_EQ(s.cxl_devices, 8);
  EXPECT_EQ(s.cxl.name, "samsung-cmm-d-256gb");
  EXPECT_EQ(s.gpus, 8);
  ASSERT_TRUE(s.nic_Bps.has_value());
  EXPECT_DOUBLE_EQ(*s.nic_Bps, 400e9 / 8);  // ConnectX-7 400 Gb/s per GPU
  ConfigNode nvme_sys = ConfigNode::make_scalar("dgx-h100-256gb-nvme");
  const SystemSpec n = read_preset_config<SystemSpec>(nvme_sys, "system", "system");
  EXPECT_EQ(n.nvme_drives, 8);
  EXPECT_DOUBLE_EQ(n.nvme.capacity_bytes, 3.84e12);
  EXPECT_EQ(n.cxl_devices, 0);
  ConfigNode three = ConfigNode::make_scalar("dgx-h100-256gb-cxl-nvme");
  const SystemSpec t = read_preset_config<SystemSpec>(three, "system", "system");
  EXPECT_EQ(t.cxl_devices, 8);
  EXPECT_EQ(t.nvme_drives, 8);
}

TEST(TierSpec, UnusedDeviceBlockStaysOutOfTheDump) {
  ConfigNode plain = ConfigNode::make_scalar("dgx-h100");
  const SystemSpec s = read_preset_config<SystemSpec>(plain, "system", "system");
  const ConfigNode out = write_config(s, "system");
  EXPECT_EQ(out.find("cxl"), nullptr);
  EXPECT_EQ(out.find("nvme"), nullptr);
  ConfigNode with = ConfigNode::make_scalar("dgx-h100-256gb-cxl");
  const ConfigNode out2 = write_config(read_preset_config<SystemSpec>(with, "system", "system"));
  EXPECT_NE(out2.find("cxl"), nullptr);
  EXPECT_EQ(out2.find("nvme"), nullptr);
}

TEST(TierSpec, BadDeviceBlocksNameTheKey) {
  // A flit cannot carry more payload than its size.
  std::string e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-cxl\ncxl: {preset: samsung-cmm-d-256gb, flit_data_bytes: 72 B}\n");
  });
  EXPECT_TRUE(has(e, "system.cxl.flit_data_bytes")) << e;
  // A device count with no device block.
  e = error_of([] { system_from_yaml("preset: dgx-h100\ncxl_devices: 4\n"); });
  EXPECT_TRUE(has(e, "system.cxl: cxl_devices = 4 needs a cxl block")) << e;
  e = error_of([] { system_from_yaml("preset: dgx-h100\nnvme_drives: 2\n"); });
  EXPECT_TRUE(has(e, "system.nvme: nvme_drives = 2 needs an nvme block")) << e;
  // Sequential read above the drive's link: Gen4 x4 carries 7.88 GB/s.
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-nvme\nnvme: {preset: samsung-pm1733-3840gb, seq_read_bandwidth: "
        "9 GB/s}\n");
  });
  EXPECT_TRUE(has(e, "system.nvme.seq_read_bandwidth") && has(e, "exceeds the drive's PCIe link"))
      << e;
  // IOPS × io_size above the sequential figure (a KIOPS / KiB slip): 1e7 × 4096 = 41 GB/s.
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-nvme\nnvme: {preset: samsung-pm1733-3840gb, read_iops: 1e7}\n");
  });
  EXPECT_TRUE(has(e, "system.nvme.read_iops") && has(e, "cannot outrun sequential")) << e;
  // Little's law: 1.47e6 IOPS at 90 us needs 132 reads in flight; queue depth 32 is too few.
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-nvme\nnvme: {preset: samsung-pm1733-3840gb, queue_depth: 32}\n");
  });
  EXPECT_TRUE(has(e, "system.nvme.read_iops") && has(e, "Little's law")) << e;
  // A lane count PCIe does not have.
  e = error_of([] {
    system_from_yaml("preset: dgx-h100-256gb-cxl\ncxl: {preset: samsung-cmm-d-256gb, lanes: 6}\n");
  });
  EXPECT_TRUE(has(e, "system.cxl.lanes")) << e;
  // A missing required key of a given block is named.
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100\ncxl_devices: 1\ncxl: {capacity: 1 GB, rate_per_lane: 32 GT/s, lanes: "
        "8, flit_bytes: 68 B}\n");
  });
  EXPECT_TRUE(has(e, "flit_data_bytes")) << e;
}

test::Result kappasim(const std::string& args) {
  static const auto dir = test::fresh_dir("tier-spec");
  return test::run_shell(KAPPASIM_BIN, args, dir / "stderr.txt");
}

TEST(TierSpecCli, MissingDeviceBlockExitsTwoWithNoOutput) {
  test::Result r =
      kappasim("kappa -m llama-3.1-8b -s dgx-h100 --set system.cxl_devices=4 --format csv");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "system.cxl: cxl_devices = 4 needs a cxl block")) << r.err;
  EXPECT_TRUE(r.out.empty());
  r = kappasim(
      "kappa -m llama-3.1-8b -s dgx-h100-256gb-cxl --set 'system.cxl.flit_data_bytes=70 B'");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "system.cxl.flit_data_bytes")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(TierSpecCli, PresetsAreListed) {
  test::Result r = kappasim("presets");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* n : {"samsung-cmm-d-256gb", "micron-cz120-256gb", "samsung-pm1743-3840gb",
                        "samsung-pm1733-3840gb", "dgx-h100-host-256gb", "dgx-h100-256gb-cxl",
                        "dgx-h100-256gb-nvme", "dgx-h100-256gb-cxl-nvme"})
    EXPECT_TRUE(has(r.out, n)) << n;
}

}  // namespace
}  // namespace kappasim
