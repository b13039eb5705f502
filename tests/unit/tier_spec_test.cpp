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
#include "models/analytic/kappa.hpp"
#include "models/analytic/tier_kappa.hpp"
#include "sweeps/point_kind.hpp"
#include "systems/system_spec.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace tier_spec_test {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

using test::error_of;

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
  // Issue 20 part 5 / issue 26 item 11: devices beyond what the host attaches. dgx-h100's
  // cxl_lanes 160 = 2 sockets x 80 Xeon 8480C lanes: 1000 x8 CMM-D need 8000 lanes, at most
  // 160 / 8 = 20 devices; 21 need 168 > 160. Its 8 U.2 bays hold 8 drives, not 9 or 100,000.
  e = error_of([] { system_from_yaml("preset: dgx-h100-256gb-cxl\ncxl_devices: 1000\n"); });
  EXPECT_TRUE(has(e, "system.cxl_devices: 1000 x8 CXL expanders need 8000 lanes") &&
              has(e, "160 (system.cxl_lanes)") && has(e, "at most 20 devices"))
      << e;
  e = error_of([] { system_from_yaml("preset: dgx-h100-256gb-cxl\ncxl_devices: 21\n"); });
  EXPECT_TRUE(has(e, "need 168 lanes")) << e;
  EXPECT_EQ(system_from_yaml("preset: dgx-h100-256gb-cxl\ncxl_devices: 20\n").cxl_devices, 20);
  e = error_of([] { system_from_yaml("preset: dgx-h100-256gb-nvme\nnvme_drives: 100000\n"); });
  EXPECT_TRUE(has(e, "system.nvme_drives: 100000 drives exceed the host's 8 drive bays")) << e;
  e = error_of([] { system_from_yaml("preset: dgx-h100-256gb-nvme\nnvme_drives: 9\n"); });
  EXPECT_TRUE(has(e, "system.nvme_slots")) << e;
  // A host that does not say what it attaches: the key is named.
  e = error_of([] { system_from_yaml("preset: dgx-h100-256gb-cxl\ncxl_lanes: 0\n"); });
  EXPECT_TRUE(has(e, "system.cxl_lanes: cxl_devices = 8 needs the CPU lanes")) << e;
  e = error_of([] { system_from_yaml("preset: dgx-h100-256gb-nvme\nnvme_slots: 0\n"); });
  EXPECT_TRUE(has(e, "system.nvme_slots: nvme_drives = 8 needs the host's NVMe drive bays")) << e;
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
  // A price per GB typed where a price per byte goes.
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-cxl\ncxl: {preset: samsung-cmm-d-256gb, usd_per_byte: 5}\n");
  });
  EXPECT_TRUE(has(e, "system.cxl.usd_per_byte") && has(e, "per byte")) << e;
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-cxl\nhost_memory: {preset: dgx-h100-host-256gb, usd_per_byte: "
        "4}\n");
  });
  EXPECT_TRUE(has(e, "system.host_memory.usd_per_byte") && has(e, "per byte")) << e;
  // A line code carrying more payload bits than it has.
  e = error_of([] {
    system_from_yaml(
        "preset: dgx-h100-256gb-cxl\ncxl: {preset: samsung-cmm-d-256gb, encoding_data: 130, "
        "encoding_total: 128}\n");
  });
  EXPECT_TRUE(has(e, "system.cxl.encoding_data")) << e;
  // A NIC latency with no NIC.
  e = error_of([] { system_from_yaml("preset: h100\nnic_latency: 2 us\n"); });
  EXPECT_TRUE(has(e, "system.nic_latency: given without nic_bandwidth")) << e;
}

// ---- per-tier κ (models/analytic/tier_kappa) ----------------------------------------------

const TierLoad& tier(const std::vector<TierLoad>& v, const std::string& name) {
  for (const TierLoad& t : v)
    if (t.tier == name) return t;
  ADD_FAILURE() << "no tier " << name;
  return v.front();
}

TEST(TierKappa, Qwen3OnDgxH100ByHand) {
  // docs/memory-tiers.md's worked example. Qwen3-235B-A22B, TP 8, BF16:
  //   F_pf / 8 = 2 × 22,190,763,520 / 8 = 5,547,690,880 FLOP; KV per GPU per token = 94 layers ×
  //   1 KV head × 128 × 2 × 2 B = 48,128 B; κ_M = 115,269.51; C = 989e12 FLOP/s.
  //   dram: 63.0154 GB/s (PCIe 5.0 x16) → κ_crit = 115,269.51 × 63.0154e9 / 989e12 = 7.3445
  //   cxl:  8 devices × 29.6543 GB/s / 8 GPUs = 29.6543 GB/s → κ_crit = 3.4562
  //   nvme: 8 PM1733 × 7 GB/s / 8 GPUs (12.3 MB chunks: sequential) = 7 GB/s → κ_crit =
  //         115,269.51 × 7e9 / 989e12 = 0.81586;
  //         the bounce's DRAM share 2 × 8 × 4.4e9 × 8 × 0.8 / 2 / 8 = 28.16 GB/s does not bind.
  ConfigNode m = ConfigNode::make_scalar("qwen3-235b-a22b");
  const ModelSpec model = read_preset_config<ModelSpec>(m, "model", "model");
  ConfigNode sref = ConfigNode::make_scalar("dgx-h100-256gb-cxl-nvme");
  const SystemSpec sys = read_preset_config<SystemSpec>(sref, "system", "system");
  KappaQuery q;
  q.tp = 8;
  const KappaPoint p = evaluate_kappa(model, sys, q);
  EXPECT_NEAR(p.kappa_m, 115269.51, 0.01);
  ASSERT_EQ(p.tiers.size(), 4u);
  EXPECT_DOUBLE_EQ(p.tier_io_bytes, 256.0 * 48128);
  const double dram = 32e9 * 16 / 8 * 128 / 130, cxl = 32e9 * 8 / 8 * 128 / 130 * 64 / 68;
  EXPECT_NEAR(tier(p.tiers, "dram").load_Bps, dram, 1);
  EXPECT_NEAR(tier(p.tiers, "dram").kappa_crit, 7.3445, 1e-4);
  EXPECT_EQ(tier(p.tiers, "dram").bound, "host link");
  EXPECT_NEAR(tier(p.tiers, "cxl").load_Bps, cxl, 1);
  EXPECT_NEAR(tier(p.tiers, "cxl").kappa_crit, 3.4562, 1e-4);
  EXPECT_EQ(tier(p.tiers, "cxl").bound, "cxl devices");
  EXPECT_DOUBLE_EQ(tier(p.tiers, "nvme").load_Bps, 7e9);
  EXPECT_NEAR(tier(p.tiers, "nvme").kappa_crit, 0.81586, 1e-5);
  EXPECT_EQ(tier(p.tiers, "nvme").bound, "drives");
  EXPECT_DOUBLE_EQ(tier(p.tiers, "nvme-gds").load_Bps, 7e9);
  // The tier-less κ is untouched: DRAM's row is the point's own κ_crit.
  EXPECT_DOUBLE_EQ(tier(p.tiers, "dram").kappa_crit, p.kappa_crit);
  // Capacities: 256 GB DRAM, 8 × 256 GB CXL, 8 × 3.84 TB NVMe.
  EXPECT_DOUBLE_EQ(tier(p.tiers, "cxl").capacity_bytes, 2.048e12);
  EXPECT_DOUBLE_EQ(tier(p.tiers, "nvme").capacity_bytes, 30.72e12);
  // No tiers: nothing added.
  ConfigNode plain = ConfigNode::make_scalar("dgx-h100");
  EXPECT_TRUE(evaluate_kappa(model, read_preset_config<SystemSpec>(plain, "system", "system"), q)
                  .tiers.empty());
}

TEST(TierKappa, BounceIsBoundByDramCrossedTwiceAndSmallReadsByIops) {
  // 32 Gen5 PM1743 drives on 8 GPUs: 32 × 13 GB/s / 8 = 52 GB/s per GPU (under the 63 GB/s host
  // link): GDS gets 52 GB/s. The bounce writes and reads DRAM: 2 sockets × 8 channels × 4.4 GT/s
  // × 8 B × 0.8 = 450.56 GB/s, / 2 / 8 GPUs = 28.16 GB/s per GPU binds.
  const SystemSpec s = system_from_yaml(
      "preset: dgx-h100-256gb-nvme\nnvme: samsung-pm1743-3840gb\nnvme_drives: 32\nnvme_slots: "
      "32\n");
  const double host = s.host_link_bandwidth_per_gpu();
  std::vector<TierLoad> v = tier_loads(s, host, 12e6);
  EXPECT_DOUBLE_EQ(tier(v, "nvme-gds").load_Bps, 52e9);
  EXPECT_EQ(tier(v, "nvme-gds").bound, "drives");
  EXPECT_NEAR(tier(v, "nvme").load_Bps, 28.16e9, 1e3);
  EXPECT_EQ(tier(v, "nvme").bound, "dram");
  // 4 KiB requests: the IOPS bound, 2.5e6 × 4096 = 10.24 GB/s per drive × 32 / 8 = 40.96 GB/s.
  v = tier_loads(s, host, 4096);
  EXPECT_NEAR(tier(v, "nvme-gds").load_Bps, 40.96e9, 1e3);
  // Enough drives to pass the host link: the link binds.
  const SystemSpec many = system_from_yaml(
      "preset: dgx-h100-256gb-nvme\nnvme: samsung-pm1743-3840gb\nnvme_drives: 64\nnvme_slots: "
      "64\n");
  EXPECT_EQ(tier(tier_loads(many, host, 12e6), "nvme-gds").bound, "host link");
}

TEST(TierKappa, CostHelpers) {
  // $4/GB over a 3-year (36-month) life: 4 / 36 = 0.1111 $ per GB-month.
  const double three_years = 3 * 365.25 * 86400;
  EXPECT_NEAR(usd_per_gb_month(4e-9, three_years), 4.0 / 36, 1e-12);
  EXPECT_DOUBLE_EQ(usd_per_gb(4e-9), 4);
  // 1 GB held for an hour: 4 $ × 3600 s / 94,672,800 s = 1.5211e-4 $.
  EXPECT_NEAR(holding_cost_usd(1e9, 3600, 4e-9, three_years), 1.5211e-4, 1e-8);
  // A tier's purchase price: 2.048 TB of CXL at $5/GB = $10,240.
  ConfigNode sref = ConfigNode::make_scalar("dgx-h100-256gb-cxl");
  const SystemSpec s = read_preset_config<SystemSpec>(sref, "system", "system");
  const auto v = tier_loads(s, s.host_link_bandwidth_per_gpu(), 1e6);
  ASSERT_TRUE(tier_capex_usd(tier(v, "cxl")).has_value());
  EXPECT_NEAR(*tier_capex_usd(tier(v, "cxl")), 10240, 1e-6);
  EXPECT_NEAR(*tier_capex_usd(tier(v, "dram")), 1024, 1e-6);  // 256 GB × $4
  EXPECT_TRUE(has(error_of([] { usd_per_gb_month(1e-9, 0); }), "amortization"));
}

TEST(TierKappa, SweepKindReportsTiersOnlyWhenTheSystemHasThem) {
  auto metric = [](const sweep::PointResult& r, const std::string& k) -> std::optional<double> {
    for (const auto& [n, v] : r.metrics)
      if (n == k) return v;
    return std::nullopt;
  };
  const sweep::PointKind* found = sweep::kinds().find("kappa");
  ASSERT_NE(found, nullptr);
  const sweep::PointKind& kind = *found;
  sweep::PointResult r =
      kind.run(parse_yaml("model: qwen3-235b-a22b\nsystem: dgx-h100-256gb-cxl\nserving: {tp: 8}\n",
                          "p.yaml"),
               {});
  // As TierKappa.Qwen3OnDgxH100ByHand: 29.6543 GB/s per GPU from CXL, κ_crit 3.4563; $5/GB.
  ASSERT_TRUE(metric(r, "kappa_crit_cxl").has_value());
  EXPECT_NEAR(*metric(r, "kappa_crit_cxl"), 3.4563, 1e-4);
  EXPECT_NEAR(*metric(r, "tier_cxl_bandwidth_bytes_per_s"), 29.6543e9, 1e5);
  EXPECT_DOUBLE_EQ(*metric(r, "usd_per_gb_cxl"), 5);
  EXPECT_FALSE(metric(r, "kappa_crit_nvme").has_value());
  r = kind.run(parse_yaml("model: qwen3-235b-a22b\nsystem: dgx-h100\nserving: {tp: 8}\n", "p.yaml"),
               {});
  EXPECT_FALSE(metric(r, "kappa_crit_dram").has_value());
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

TEST(TierSpecCli, KappaPrintsTiersOnlyForSystemsWithTiers) {
  test::Result plain = kappasim("kappa -m qwen3-235b-a22b -s dgx-h100 --tp 8 --format csv");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_FALSE(has(plain.out, "tier_")) << plain.out;
  test::Result table = kappasim("kappa -m qwen3-235b-a22b -s dgx-h100 --tp 8");
  EXPECT_FALSE(has(table.out, "per-tier"));
  test::Result t = kappasim("kappa -m qwen3-235b-a22b -s dgx-h100-256gb-cxl --tp 8 --format csv");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "kappa_crit_cxl")) << t.out;
  EXPECT_TRUE(has(t.out, "tier_nvme_gds_bandwidth_bytes_per_s")) << t.out;
  test::Result tt = kappasim("kappa -m qwen3-235b-a22b -s dgx-h100-256gb-cxl-nvme --tp 8");
  ASSERT_EQ(tt.code, 0) << tt.err;
  EXPECT_TRUE(has(tt.out, "per-tier")) << tt.out;
  EXPECT_TRUE(has(tt.out, "nvme-gds")) << tt.out;
  EXPECT_TRUE(has(tt.out, "cxl devices")) << tt.out;
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
}  // namespace tier_spec_test
}  // namespace kappasim
