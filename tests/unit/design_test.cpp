// The area/power design model (models/design) and the `design` sweep kind: the baseline split
// reproduces the baseline die, moving area or power between resources changes C, BW and SRAM by
// the coefficients (expected values computed here from the coefficient literals of
// presets/design/h100-4n.yaml), equal-power points stay within the budget, the load rate is the
// PHY capped by the host side (per-socket DRAM bandwidth computed here from the host-memory
// presets' datasheet fields), and a point's κ_crit and TTFT equal evaluate_kappa's on the same C
// and effective BW.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "models/analytic/kappa.hpp"
#include "models/design/area_power.hpp"
#include "models/design/design_spec.hpp"
#include "models/design/host_bound.hpp"
#include "sweeps/point_kind.hpp"
#include "workloads/generators.hpp"
#include "workloads/mix_source.hpp"

namespace kappasim {
namespace design_test {
namespace {

// presets/design/h100-4n.yaml, as written there (SI units).
const double kDie = 814e-6;             // m^2
const double kTdp = 700;                // W
const double kC0 = 989e12;              // FLOP/s
const double kBw0 = 63.015384615e9;     // B/s per direction
const double kRhoC = 2.1978e12 / 1e-6;  // FLOP/s per m^2
const double kEc = 0.56623e-12;         // J per FLOP
const double kRhoL = 8.7521e9 / 1e-6;   // B/s per m^2
const double kEl = 16.25e-12 * 8;       // J per byte (16.25 pJ/bit)
const double kRhoS = 4.1681e6 / 1e-6;   // B per m^2
const double kPs = 20e-3 / 1e6;         // W per byte (20 mW/MB)
const double kSramBw = 3.35e12;         // B/s

// Host DRAM per GPU, by hand from the presets' datasheet fields (all GPUs of the node loading).
// DGX H100 (presets/host-memory/dgx-h100-host.yaml, presets/systems/dgx-h100.yaml): 8 DDR5
// channels x 4400 MT/s x 8 B = 281.6 GB/s per socket, x 0.8 sustained = 225.28 GB/s, shared by
// the 4 GPUs of the socket (KV pool local) = 56.32 GB/s per GPU.
const double kDgxPerGpu = 8 * 4400e6 * 8 * 0.8 / 4;
// Paper testbed (epyc-milan-ddr4-3200-2s, paper-testbed): 8 x 3200 MT/s x 8 B x 0.8 = 163.84 GB/s
// per socket; the pool is interleaved, so each of the 8 GPUs reads half its bytes from each
// socket: 8 x r/2 <= 163.84 per socket, r = 40.96 GB/s (the socket link, 4 x r/2 <= 144 GB/s,
// allows 72).
const double kTestbedPerGpu = 8 * 3200e6 * 8 * 0.8 / 4;

// Movable area and power of the baseline, by hand: the SM array and the x16 PHY (no KV SRAM).
const double kMovArea = kC0 / kRhoC + kBw0 / kRhoL;   // ≈ 457.2 mm^2
const double kMovPower = kC0 * kEc + kBw0 * 2 * kEl;  // ≈ 560.0 + 16.4 W

DesignCoefficients h100() {
  ConfigNode ref = ConfigNode::make_scalar("h100-4n");
  return read_preset_config<DesignCoefficients>(ref, "design", "design.coefficients");
}

void expect_rel(double actual, double expected, double rel) {
  EXPECT_NEAR(actual, expected, rel * std::fabs(expected));
}

TEST(Design, PresetLoadsWithTheCoefficientsAsWritten) {
  const DesignCoefficients c = h100();
  expect_rel(c.die_area_m2, kDie, 1e-12);
  expect_rel(c.compute_density, kRhoC, 1e-12);
  expect_rel(c.compute_energy_per_flop_J, kEc, 1e-12);
  expect_rel(c.link_density, kRhoL, 1e-12);
  expect_rel(c.link_energy_per_byte_J, kEl, 1e-12);
  expect_rel(c.sram_density, kRhoS, 1e-12);
  expect_rel(c.sram_power_per_byte_w, kPs, 1e-12);
  expect_rel(c.sram_bandwidth_Bps, kSramBw, 1e-12);
  // The fixed part is the die less the SM array and PHY: 814 - 457.2 = 356.8 mm^2.
  expect_rel(c.fixed_area(), kDie - kMovArea, 1e-12);
  EXPECT_NEAR(c.fixed_area() * 1e6, 356.8, 0.05);
  expect_rel(c.fixed_power(), kTdp - kMovPower, 1e-12);
}

TEST(Design, BaselineSplitReproducesTheBaselineDie) {
  const DesignCoefficients c = h100();
  for (BudgetMode mode : {BudgetMode::Area, BudgetMode::Power}) {
    const DesignPoint d = design_point(c, baseline_split(c, mode));
    EXPECT_DOUBLE_EQ(d.compute_flops, kC0);
    EXPECT_DOUBLE_EQ(d.link_Bps, kBw0);
    EXPECT_EQ(d.sram_bytes, 0);
    EXPECT_DOUBLE_EQ(d.total_area_m2(), kDie);
    EXPECT_DOUBLE_EQ(d.total_power_w(), kTdp);
  }
  // Hand: compute takes 449.995 / 457.195 = 0.98425 of the movable area.
  const DesignSplit s = baseline_split(c, BudgetMode::Area);
  EXPECT_NEAR(*s.compute_fraction, (989 / 2.1978) / (989 / 2.1978 + 63.015384615 / 8.7521), 1e-12);
  EXPECT_NEAR(*s.compute_fraction, 0.98425, 1e-5);
}

TEST(Design, MovingAreaFromComputeToLinkFollowsTheCoefficients) {
  const DesignCoefficients c = h100();
  DesignSplit base = baseline_split(c, BudgetMode::Area);
  for (double x : {0.01, 0.05, 0.2}) {
    DesignSplit s = base;
    *s.compute_fraction -= x;
    s.link_fraction += x;
    const DesignPoint d = design_point(c, s);
    // x of the movable area leaves the SM array and becomes PHY.
    expect_rel(d.compute_flops, kC0 - x * kMovArea * kRhoC, 1e-12);
    expect_rel(d.link_Bps, kBw0 + x * kMovArea * kRhoL, 1e-12);
    expect_rel(d.total_area_m2(), kDie, 1e-12);
  }
  // 1%: 4.572 mm^2 = -10.05 TFLOP/s and +40.01 GB/s.
  DesignSplit s = base;
  *s.compute_fraction -= 0.01;
  s.link_fraction += 0.01;
  const DesignPoint d = design_point(c, s);
  EXPECT_NEAR((kC0 - d.compute_flops) / 1e12, 10.048, 0.001);
  EXPECT_NEAR((d.link_Bps - kBw0) / 1e9, 40.014, 0.001);
  // Area into SRAM: x of 457.2 mm^2 at 4.1681 MB/mm^2.
  s = base;
  *s.compute_fraction -= 0.1;
  s.sram_fraction = 0.1;
  expect_rel(design_point(c, s).sram_bytes, 0.1 * kMovArea * kRhoS, 1e-12);
}

TEST(Design, EqualPowerPointsSpendTheBudget) {
  const DesignCoefficients c = h100();
  for (double cf : {0.5, 0.8, 0.95}) {
    for (double lf : {0.01, 0.04, 0.05}) {
      DesignSplit s;
      s.mode = BudgetMode::Power;
      s.compute_fraction = cf;
      s.link_fraction = lf;  // the rest powers the SRAM
      const DesignPoint d = design_point(c, s);
      expect_rel(d.total_power_w(), kTdp, 1e-12);
      expect_rel(d.compute_flops, cf * kMovPower / kEc, 1e-12);
      expect_rel(d.link_Bps, lf * kMovPower / (2 * kEl), 1e-12);
      expect_rel(d.sram_bytes, (1 - cf - lf) * kMovPower / kPs, 1e-9);
      s.power_budget_w = 600;
      const DesignPoint e = design_point(c, s);
      expect_rel(e.total_power_w(), 600, 1e-12);
      expect_rel(e.compute_flops, cf * (600 - (kTdp - kMovPower)) / kEc, 1e-12);
    }
  }
  // Fractions adding up to more than 1 would overspend it.
  DesignSplit over;
  over.mode = BudgetMode::Power;
  over.compute_fraction = 0.95;
  over.link_fraction = 0.1;
  EXPECT_THROW(design_point(c, over), InputError);
  // A budget below the fixed power leaves nothing to split.
  DesignSplit s = baseline_split(c, BudgetMode::Power);
  s.power_budget_w = 100;
  EXPECT_THROW(design_point(c, s), InputError);
}

TEST(Design, ComputeGetsTheRestWhenLinkAndSramAreGiven) {
  const DesignCoefficients c = h100();
  DesignSplit s;
  s.link_fraction = 0.05;
  s.sram_fraction = 0.15;
  const DesignPoint d = design_point(c, s);
  EXPECT_DOUBLE_EQ(d.compute_fraction, 0.8);
  expect_rel(d.compute_flops, 0.8 * kMovArea * kRhoC, 1e-12);
  expect_rel(d.sram_bytes, 0.15 * kMovArea * kRhoS, 1e-12);
  EXPECT_TRUE(d.within_area_budget());
  // Equal power: 0.15 of 576.4 W = 86.5 W buys 4.32 GB of SRAM at 20 mW/MB, which needs
  // 4.32e3 / 4.1681 = 1037 mm^2: more than the die.
  s.mode = BudgetMode::Power;
  const DesignPoint p = design_point(c, s);
  expect_rel(p.sram_bytes, 0.15 * kMovPower / kPs, 1e-12);
  EXPECT_NEAR(p.sram_area_m2 * 1e6, 0.15 * kMovPower / kPs / 4.1681e6, 1e-6);
  EXPECT_TRUE(p.within_power_budget());
  EXPECT_FALSE(p.within_area_budget());
}

ConfigNode cfg(const std::string& yaml) { return parse_yaml(yaml, "design-test.yaml"); }

const char* kNqa =
    "design: {mode: area, compute_fraction: 0.9, link_fraction: 0.1, sram_fraction: 0}\n"
    "model: llama-3.1-70b\n"
    "tp: 8\n"
    "workload: {type: narrativeqa, requests: 200}\n";

TEST(DesignHost, BaselinePhyAboveTheDgxShareIsCappedAtIt) {
  // Default host: the coefficients' host_system (DGX H100). The baseline PHY, 63.02 GB/s, is above
  // the 56.32 GB/s DRAM share, and the base die's requester is below both: 768 tags x 64 B SM
  // reads / 1 us round trip = 49.152 GB/s (presets/links/pcie5.yaml) binds.
  const DesignCoefficients c = h100();
  EXPECT_EQ(c.host_system, "dgx-h100");
  const DesignEvalSpec spec = read_design_eval(
      cfg("design: {compute_fraction: 0.98425, link_fraction: 0.01575}\n"
          "model: llama-3.1-70b\ntp: 8\nworkload: {type: narrativeqa, requests: 20}\n"));
  EXPECT_FALSE(spec.host.unlimited);
  EXPECT_EQ(spec.host.system.gpus_per_socket, 4);
  const DesignEvaluation e = evaluate_design(spec, 1);
  EXPECT_NEAR(e.link.phy_Bps / 1e9, 63.015, 0.01);
  EXPECT_NEAR(kDgxPerGpu / 1e9, 56.32, 1e-9);
  const double tags = 768 * 64 / 1e-6;
  expect_rel(e.link.effective_Bps, tags, 1e-12);
  expect_rel(e.link.host_share_Bps, kDgxPerGpu, 1e-12);
  EXPECT_EQ(e.link.binding, LinkBinding::ReadTags);
  EXPECT_EQ(e.link.read_tags, 768);
  // κ_crit follows the effective bandwidth, not the PHY.
  expect_rel(e.kappa.kappa_crit, e.kappa.kappa_m * tags / e.hw.compute_flops, 1e-12);
}

TEST(DesignHost, TheRequesterKeepsTheBaseDiesTagsPerPhyBandwidth) {
  // presets/links/pcie5.yaml: 768 tags, 1 us round trip, 64 B SM reads, 512 B DMA requests;
  // the base PHY of h100-4n: 16 x 32 GT/s x 128/130 / 8 = 63.015 GB/s.
  const double base = 16 * 32e9 * 128 / 130 / 8;
  DesignRequester r = design_requester(base, base);
  EXPECT_EQ(r.tags, 768);
  expect_rel(r.sm_ceiling_Bps, 49.152e9, 1e-12);
  expect_rel(r.dma_ceiling_Bps, 393.216e9, 1e-12);
  // 3.518x the PHY (the GB200 study's power split at 10% link): 768 x 3.518 = 2701.8 -> 2702.
  r = design_requester(221.6867e9, base);
  EXPECT_EQ(r.tags, 2702);
  expect_rel(r.sm_ceiling_Bps, 2702 * 64 / 1e-6, 1e-12);
  // Never fewer than the link's own; at most PCIe 6.0 flit mode's 14-bit tags.
  EXPECT_EQ(design_requester(base / 4, base).tags, 768);
  EXPECT_EQ(design_requester(10 * base, base).tags, 7680);
  EXPECT_EQ(design_requester(30 * base, base).tags, 16384);
  // A PHY below the ceiling is not capped; above it the tags bind.
  HostBound h = unlimited_host(40e9);
  cap_by_requester(h, base);
  EXPECT_EQ(h.effective_Bps, 40e9);
  EXPECT_EQ(h.binding, LinkBinding::Phy);
  h = unlimited_host(30 * base);
  cap_by_requester(h, base);
  expect_rel(h.effective_Bps, 16384 * 64 / 1e-6, 1e-12);
  EXPECT_EQ(h.binding, LinkBinding::ReadTags);
  EXPECT_THROW(design_requester(base, 0), InputError);
}

TEST(DesignHost, PhyBelowTheShareBinds) {
  // Link 1% of the movable area: 4.572 mm^2 x 8.7521 GB/s/mm^2 = 40.01 GB/s < 56.32.
  const DesignEvaluation e =
      evaluate_design(read_design_eval(cfg("design: {compute_fraction: 0.99, link_fraction: 0.01}\n"
                                           "model: llama-3.1-70b\ntp: 8\nhost: h100\n"
                                           "workload: {type: narrativeqa, requests: 20}\n")),
                      1);
  expect_rel(e.link.phy_Bps, 0.01 * kMovArea * kRhoL, 1e-12);
  ASSERT_LT(e.link.phy_Bps, kDgxPerGpu);
  EXPECT_EQ(e.link.effective_Bps, e.link.phy_Bps);
  EXPECT_EQ(e.link.binding, LinkBinding::Phy);
  expect_rel(e.link.host_share_Bps, kDgxPerGpu, 1e-12);
}

TEST(DesignHost, SharesByHandOnOtherHostsAndPools) {
  ConfigNode ref = ConfigNode::make_scalar("dgx-h100");
  SystemSpec dgx = read_preset_config<SystemSpec>(ref, "system", "system");
  const double phy = 1.5e12;  // a re-split die's PHY, far above any host
  HostBound h = host_bound(dgx, 8, phy);
  expect_rel(h.effective_Bps, kDgxPerGpu, 1e-12);
  // TP 1 on the same node: the other 7 GPUs still load, the share is the same.
  expect_rel(host_bound(dgx, 1, phy).effective_Bps, kDgxPerGpu, 1e-12);
  // Pool on socket 0: its DRAM serves all 8 GPUs: 225.28 / 8 = 28.16 GB/s (the socket link,
  // 128 GB/s for 4 remote GPUs = 32 GB/s each, is not the tighter).
  dgx.kv_pool = SystemSpec::KvPool::Socket0;
  h = host_bound(dgx, 8, phy);
  expect_rel(h.effective_Bps, 8 * 4400e6 * 8 * 0.8 / 8, 1e-12);
  EXPECT_EQ(h.binding, LinkBinding::HostDram);
  // A 50 GB/s socket link: the 4 remote GPUs get 12.5 GB/s each (the slowest of the instance);
  // the local ones share the rest of the DRAM.
  *dgx.host_memory.inter_socket_Bps = 50e9;
  h = host_bound(dgx, 8, phy);
  expect_rel(h.effective_Bps, 12.5e9, 1e-12);
  EXPECT_EQ(h.binding, LinkBinding::SocketLink);
  // Root ports: 100 GB/s per socket for its 4 GPUs = 25 GB/s each, below the 56.32 of DRAM.
  dgx = read_preset_config<SystemSpec>(ref, "system", "system");
  h = host_bound(dgx, 8, phy, 100e9);
  expect_rel(h.effective_Bps, 25e9, 1e-12);
  EXPECT_EQ(h.binding, LinkBinding::RootPort);

  // The kappa paper's testbed: interleaved pool on a DDR4-3200 EPYC host.
  const DesignEvaluation t =
      evaluate_design(read_design_eval(cfg("design: {compute_fraction: 0.3, link_fraction: 0.7}\n"
                                           "model: llama-3.1-70b\ntp: 8\nhost: paper-testbed\n"
                                           "workload: {type: narrativeqa, requests: 20}\n")),
                      1);
  EXPECT_NEAR(kTestbedPerGpu / 1e9, 40.96, 1e-9);
  expect_rel(t.link.effective_Bps, kTestbedPerGpu, 1e-12);
  EXPECT_EQ(t.link.binding, LinkBinding::HostDram);
  // GB200: one Grace (512 GB/s LPDDR5X x 0.8) for 2 GPUs = 204.8 GB/s; a TP-8 instance spans
  // 4 superchips, each GPU still shares with one neighbour.
  ConfigNode gb = ConfigNode::make_scalar("gb200");
  const SystemSpec g = read_preset_config<SystemSpec>(gb, "system", "system");
  expect_rel(host_bound(g, 8, phy).effective_Bps, 512e9 * 0.8 / 2, 1e-12);
}

TEST(DesignHost, UnlimitedIsTheDieOnlyView) {
  const DesignEvaluation e =
      evaluate_design(read_design_eval(cfg(std::string(kNqa) + "host: unlimited\n")), 1);
  EXPECT_TRUE(e.link.unlimited);
  // No host bound; the requester keeps the base die's 768 tags per 63.015 GB/s of PHY, so its
  // 64 B zero-copy reads reach 768 x 64 / 1 us / 63.015 GB/s = 78% of the PHY.
  const double phy = 0.1 * kMovArea * kRhoL;
  expect_rel(e.link.phy_Bps, phy, 1e-12);
  const double tags = std::round(768 * phy / (16 * 32e9 * 128 / 130 / 8));
  EXPECT_EQ(e.link.read_tags, tags);
  expect_rel(e.link.effective_Bps, tags * 64 / 1e-6, 1e-12);
  EXPECT_EQ(e.link.binding, LinkBinding::ReadTags);
  EXPECT_THROW(read_design_eval(cfg(std::string(kNqa) + "host: nope\n")), InputError);
  EXPECT_THROW(read_design_eval(cfg(std::string(kNqa) + "host: {unlimitd: true}\n")), InputError);
}

TEST(Design, PointEqualsEvaluateKappaOnTheSameComputeAndBandwidth) {
  const DesignEvalSpec spec = read_design_eval(cfg(kNqa));
  const std::uint64_t seed = 7;
  const DesignEvaluation e = evaluate_design(spec, seed);
  const DesignPoint& d = e.hw;
  expect_rel(d.compute_flops, 0.9 * kMovArea * kRhoC, 1e-12);
  expect_rel(d.link_Bps, 0.1 * kMovArea * kRhoL, 1e-12);
  // The 400 GB/s PHY is capped by the DGX H100 host at 56.32 GB/s.
  const double bw = kDgxPerGpu;
  expect_rel(e.link.effective_Bps, bw, 1e-12);

  // κ_crit by hand (Llama-3.1-70B, 2 N_active, TP 8: F and B_kv both divide by 8).
  const double n70 =
      80 * (8192.0 * 8192 + 2.0 * 8192 * 1024 + 8192.0 * 8192 + 3.0 * 8192 * 28672 + 2.0 * 8192) +
      8192 + 2.0 * 128256 * 8192;
  const double kv70 = 2.0 * 80 * 8 * 128 * 2;
  expect_rel(e.kappa.kappa_crit, (2 * n70 / kv70) * bw / d.compute_flops, 1e-12);

  // The same requests through evaluate_kappa directly.
  ConfigNode ref = ConfigNode::make_scalar("llama-3.1-70b");
  const ModelSpec m = read_preset_config<ModelSpec>(ref, "model", "model");
  SystemSpec sys;
  NarrativeQaSpec shape;
  DocQaGenerator gen("narrativeqa", shape, 200, 10, ArrivalKind::Poisson, 1, seed);
  std::vector<double> ttft;
  double sum = 0, sum_c = 0, sum_l = 0;
  int above = 0;
  Request r;
  while (gen.next(r)) {
    KappaQuery q;
    q.tp = 8;
    q.compute_override = d.compute_flops;
    q.bandwidth_override = bw;
    q.context_k = static_cast<double>(r.prefix_tokens);
    q.new_tokens_t = static_cast<double>(r.new_tokens);
    const KappaPoint p = evaluate_kappa(m, sys, q);
    EXPECT_DOUBLE_EQ(p.kappa_crit, e.kappa.kappa_crit);
    const TtftParts& t = *p.ttft_attention;
    // Layer-wise overlap (serving/request_cost): L = 80 layers, the first layer's load before
    // compute, the last layer's compute after the last load: max(x + c / L, x / L + c).
    const double x = t.t_transfer, c = t.t_compute;
    const double one = std::max(x + c / 80, x / 80 + c);
    ttft.push_back(one);
    sum += one;
    sum_c += t.t_compute;
    sum_l += t.t_transfer;
    if (r.kappa_ratio() > p.kappa_crit) ++above;
  }
  ASSERT_EQ(ttft.size(), 200u);
  EXPECT_EQ(e.requests, 200);
  EXPECT_EQ(e.sram_hit_fraction, 0);
  EXPECT_DOUBLE_EQ(e.ttft_mean_s, sum / 200);
  std::sort(ttft.begin(), ttft.end());
  EXPECT_DOUBLE_EQ(e.ttft_p50_s, ttft[99]);   // nearest rank: ceil(0.5 * 200) = 100th
  EXPECT_DOUBLE_EQ(e.ttft_p99_s, ttft[197]);  // ceil(0.99 * 200) = 198th
  EXPECT_DOUBLE_EQ(e.frac_above_kappa_crit, above / 200.0);
  EXPECT_DOUBLE_EQ(e.throughput_rps, 200 / std::max(sum_c, sum_l));
}

TEST(Design, SramServesTheMostPopularDocumentsThatFit) {
  // 10 documents of exactly 1000 tokens (sigma 0), zipf: Llama-3.1-8B at TP 1 holds
  // 2*32*8*128*2 = 131072 B per token, so a document is 131.07 MB; 5% of the movable area
  // (22.86 mm^2 at 4.1681 MB/mm^2 = 95.3 MB) holds none, 10% (190.6 MB) holds document 1 only.
  const std::string base =
      "model: llama-3.1-8b\n"
      "workload: {type: narrativeqa, requests: 300, narrativeqa: {documents: 10, popularity: "
      "zipf, zipf_s: 1.0, document_tokens_median: 1000, document_tokens_sigma: 0}}\n";
  const DesignEvaluation none = evaluate_design(
      read_design_eval(cfg("design: {compute_fraction: 0.9, link_fraction: 0.05}\n" + base)), 3);
  EXPECT_NEAR(none.hw.sram_bytes / 1e6, 0.05 * kMovArea * kRhoS / 1e6, 1e-6);
  EXPECT_EQ(none.sram_hit_fraction, 0);
  const DesignEvaluation one = evaluate_design(
      read_design_eval(cfg("design: {compute_fraction: 0.85, link_fraction: 0.05}\n" + base)), 3);
  ASSERT_GT(one.hw.sram_bytes, 131072.0 * 1000);
  ASSERT_LT(one.hw.sram_bytes, 2 * 131072.0 * 1000);
  // Count the requests on document 1 in the same stream.
  DocQaSpec shape = NarrativeQaSpec();
  shape.documents = 10;
  shape.popularity = Popularity::Zipf;
  shape.zipf_s = 1.0;
  shape.document_tokens_median = 1000;
  shape.document_tokens_sigma = 0;
  DocQaGenerator gen("narrativeqa", shape, 300, 10, ArrivalKind::Poisson, 1, 3);
  int on_first = 0;
  Request r;
  while (gen.next(r)) on_first += r.sequence_id == 1;
  EXPECT_GT(on_first, 0);
  EXPECT_DOUBLE_EQ(one.sram_hit_fraction, on_first / 300.0);
}

TEST(Design, ChatSharesTheSramAmongWaitingConversations) {
  // rate 1/s x think time 30 s = 30 waiting conversations. With all the movable area in SRAM but
  // 2% (compute 1%, link 1%): 0.98 x 457.2 mm^2 x 4.1681 MB/mm^2 = 1.8675 GB / 30 = 62.25 MB
  // each = 475 tokens of Llama-3.1-8B (131072 B/token): histories up to 475 tokens hit.
  const DesignEvaluation e =
      evaluate_design(read_design_eval(cfg("design: {compute_fraction: 0.01, link_fraction: 0.01}\n"
                                           "model: llama-3.1-8b\n"
                                           "workload: {type: sharegpt, requests: 400, rate: 1}\n")),
                      5);
  const double share_tokens = 0.98 * kMovArea * kRhoS / 30 / 131072;
  EXPECT_NEAR(share_tokens, 475, 1);
  ShareGptGenerator gen(ShareGptSpec{}, 400, 1, ArrivalKind::Poisson, 1, 5);
  int hits = 0;
  Request r;
  while (gen.next(r)) hits += r.prefix_tokens > 0 && r.prefix_tokens <= share_tokens;
  EXPECT_GT(hits, 0);
  EXPECT_DOUBLE_EQ(e.sram_hit_fraction, hits / 400.0);
}

// Half chat, half document QA at 2 req/s over 10 documents of 1000 tokens (zipf): the mix the
// design tests below write as YAML, as a WorkloadSpec for drawing its stream here.
WorkloadSpec chat_and_documents(std::int64_t requests) {
  WorkloadSpec w;
  w.type = WorkloadType::Mix;
  w.requests = requests;
  w.rate = 2;
  w.mix = {{"sharegpt", 0.5}, {"narrativeqa", 0.5}};
  w.narrativeqa.documents = 10;
  w.narrativeqa.popularity = Popularity::Zipf;
  w.narrativeqa.zipf_s = 1.0;
  w.narrativeqa.document_tokens_median = 1000;
  w.narrativeqa.document_tokens_sigma = 0;
  return w;
}

TEST(Design, MixSplitsTheSramByRequestShare) {
  // Half chat, half document QA at 2 req/s; compute 1%, link 1%: 1.8675 GB of SRAM (as above),
  // 0.934 GB per component. Chat at 1 req/s x 30 s = 30 waiting conversations: 31.1 MB = 237.5
  // tokens each (the same share as chat alone at 2 req/s). Documents of 1000 tokens = 131.07 MB:
  // 7 fit in 0.934 GB (917.5 MB), the 7 most popular (zipf: documents 1..7).
  const DesignEvaluation e = evaluate_design(
      read_design_eval(cfg("design: {compute_fraction: 0.01, link_fraction: 0.01}\n"
                           "model: llama-3.1-8b\n"
                           "workload: {type: mix, requests: 400, rate: 2,\n"
                           "  mix: {sharegpt: 0.5, narrativeqa: 0.5},\n"
                           "  narrativeqa: {documents: 10, popularity: zipf, zipf_s: 1.0,\n"
                           "    document_tokens_median: 1000, document_tokens_sigma: 0}}\n")),
      5);
  const double half = 0.5 * 0.98 * kMovArea * kRhoS;
  const double share_tokens = half / 30 / 131072;
  EXPECT_NEAR(share_tokens, 237.5, 0.5);
  EXPECT_EQ(static_cast<int>(half / (1000 * 131072.0)), 7);
  MixSource src(chat_and_documents(400), 5);
  int chat_hits = 0, doc_hits = 0;
  Request r;
  while (src.next(r)) {
    if (r.workload == "sharegpt") {
      chat_hits += r.prefix_tokens > 0 && r.prefix_tokens <= share_tokens;
    } else {
      doc_hits += mix_local_sequence_id(r.sequence_id) <= 7;
    }
  }
  EXPECT_GT(chat_hits, 0);
  EXPECT_GT(doc_hits, 0);
  EXPECT_EQ(e.requests, 400);
  EXPECT_DOUBLE_EQ(e.sram_hit_fraction, (chat_hits + doc_hits) / 400.0);
}

// Issue 24: evaluate_design keeps the last request sample it drew (its workload and seed) for the
// next point. A kept sample gives what a fresh draw gives: the same point again after another
// seed's (which replaced the kept one) has the same metrics, and a point with other hardware on
// the kept sample has the requests' own median κ ratio, counted here from the stream itself.
TEST(Design, AKeptRequestSampleGivesWhatAFreshDrawGives) {
  const std::string workload =
      "model: llama-3.1-8b\n"
      "workload: {type: mix, requests: 300, rate: 2, mix: {sharegpt: 0.5, narrativeqa: 0.5},\n"
      "  narrativeqa: {documents: 10, popularity: zipf, zipf_s: 1.0,\n"
      "    document_tokens_median: 1000, document_tokens_sigma: 0}}\n";
  const DesignEvalSpec a =
      read_design_eval(cfg("design: {compute_fraction: 0.01, link_fraction: 0.01}\n" + workload));
  const DesignEvalSpec b =
      read_design_eval(cfg("design: {compute_fraction: 0.5, link_fraction: 0.2}\n" + workload));
  const auto first = design_metrics(evaluate_design(a, 5));
  const auto other_seed = design_metrics(evaluate_design(a, 6));
  const auto again = design_metrics(evaluate_design(a, 5));
  ASSERT_EQ(first.size(), again.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].first, again[i].first);
    EXPECT_EQ(first[i].second, again[i].second) << first[i].first;
  }
  EXPECT_NE(first, other_seed);
  const DesignEvaluation kept = evaluate_design(b, 5);  // the sample of `again`, kept
  MixSource src(chat_and_documents(300), 5);
  std::vector<double> ratios;
  Request r;
  while (src.next(r)) ratios.push_back(r.kappa_ratio());
  ASSERT_EQ(ratios.size(), 300u);
  std::sort(ratios.begin(), ratios.end());
  // The nearest-rank median of 300 values: the 150th.
  EXPECT_DOUBLE_EQ(kept.kappa_ratio_p50, ratios[149]);
  EXPECT_EQ(kept.requests, 300);
}

TEST(Design, BadInputIsAnInputError) {
  EXPECT_THROW(read_design_eval(cfg("design: {compute_fraction: 0.9, link_fraction: 0.2}\n"
                                    "model: llama-3.1-8b\n")),
               InputError);
  EXPECT_THROW(read_design_eval(cfg("design: {compute_fraction: 0.9, link_fraction: 0}\n"
                                    "model: llama-3.1-8b\n")),
               InputError);
  EXPECT_THROW(read_design_eval(cfg("design: {compute_fraction: 0.9, link_fraktion: 0.1}\n"
                                    "model: llama-3.1-8b\n")),
               InputError);
  EXPECT_THROW(read_design_eval(cfg("design: {compute_fraction: 0.9, link_fraction: 0.1, "
                                    "coefficients: nope}\nmodel: llama-3.1-8b\n")),
               InputError);
  EXPECT_THROW(read_design_eval(cfg("design: {compute_fraction: 0.9, link_fraction: 0.1}\n"
                                    "model: llama-3.1-8b\n"
                                    "workload: {type: trace, trace: {path: x.jsonl}}\n")),
               InputError);
}

TEST(Design, SweepKindIsDeterministicAndReportsTheModel) {
  // registered by models/design/design_kind.cpp itself (static registration)
  const sweep::PointKind* k = sweep::kinds().find("design");
  ASSERT_NE(k, nullptr);
  sweep::PointContext ctx;
  ctx.seed = 11;
  const ConfigNode c = cfg(kNqa);
  const sweep::PointResult a = k->run(c, ctx);
  const sweep::PointResult b = k->run(c, ctx);
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (std::size_t i = 0; i < a.metrics.size(); ++i) {
    EXPECT_EQ(a.metrics[i].first, b.metrics[i].first);
    EXPECT_EQ(a.metrics[i].second, b.metrics[i].second) << a.metrics[i].first;
  }
  const DesignEvaluation e = evaluate_design(read_design_eval(c), 11);
  const auto find = [&](const std::string& n) {
    for (const auto& [name, v] : a.metrics)
      if (name == n) return v;
    ADD_FAILURE() << "no metric " << n;
    return 0.0;
  };
  EXPECT_EQ(find("kappa_crit"), e.kappa.kappa_crit);
  EXPECT_EQ(find("ttft_p50_s"), e.ttft_p50_s);
  EXPECT_EQ(find("area_mm2"), e.hw.total_area_m2() * 1e6);
  EXPECT_EQ(find("link_phy_bandwidth_Bps"), e.hw.link_Bps);
  EXPECT_EQ(find("link_effective_bandwidth_Bps"), kDgxPerGpu);
  EXPECT_EQ(find("link_bound_by"), 1.0);  // host DRAM
  EXPECT_EQ(find("host_unlimited"), 0.0);
  // Another seed draws other requests.
  ctx.seed = 12;
  EXPECT_NE(k->run(c, ctx).metrics, a.metrics);
}

}  // namespace
}  // namespace design_test
}  // namespace kappasim
