// Link mechanisms (issue 10 item 2): zero-copy SM reads bounded by Little's law on the loads in
// flight, per-rank NUMA placement of the pinned pools with the step waiting for the slowest
// rank, the PCIe 4.0 paper-testbed variant, GB200's per-GPU C2C share and GH200's measured
// per-direction C2C rates. Every expectation is computed by hand from preset values in comments.
#include <gtest/gtest.h>

#include <systemc>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/flow_network.hpp"
#include "interconnects/pcie_packet.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "models/gpu/copy_engine.hpp"
#include "models/gpu/copy_kernel_shape.hpp"
#include "systems/flow_fabric.hpp"
#include "systems/topology.hpp"

namespace kappasim {
namespace links_test {
namespace {

SystemSpec load(const std::string& name, const std::vector<std::string>& sets = {}) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar(name));
  for (const auto& s : sets) apply_set(root, s);
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

// PCIe 5 x16 after line encoding and SKP ordered sets, in wire bytes/s.
const double kGen5Wire = 32e9 * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));

// ---- Zero-copy SM reads: Little's law -------------------------------------------------------

TEST(LinksSmRead, LittlesLawByHand) {
  // 132 SMs × 1 warp-wide load × 32 threads × 8 B = 33,792 B in flight; / 1 µs = 33.792 GB/s.
  EXPECT_DOUBLE_EQ(sm_inflight_bytes(132, 1, 8), 33792.0);
  EXPECT_DOUBLE_EQ(little_rate_Bps(33792.0, 1e-6), 33.792e9);
  // 16 B loads double the bytes in flight; 2 loads per SM double them again.
  EXPECT_DOUBLE_EQ(sm_inflight_bytes(132, 2, 16), 4 * 33792.0);
  EXPECT_TRUE(std::isinf(little_rate_Bps(0, 1e-6)));
  EXPECT_TRUE(std::isinf(little_rate_Bps(1000, 0)));
}

// The launch shapes of docs/pcie-model.md, each from its source.
CopyKernelShape shape(double width, double threads, double blocks_per_sm, double loads = 1) {
  CopyKernelShape k;
  k.load_width = width;
  k.threads_per_block = threads;
  k.blocks_per_sm = blocks_per_sm;
  k.loads_per_thread = loads;
  return k;
}

TEST(LinksSmRead, OccupancyLimitsClampTheResidentWarps) {
  const GpuSpec h100 = load("h100").gpu;  // max_warps_per_sm 64, max_blocks_per_sm 32
  // LMCache 0.3.5 at TP 8: one-warp blocks, a grid of 40,960 blocks (277 per SM offered):
  // min(277, 32 blocks, floor(64 / 1) = 64) = 32 blocks × 1 warp = 32 warps; per SM
  // 32 warps × 1 load × 32 threads × 8 B = 8,192 B.
  const CopyKernelShape lmcache = shape(8, 32, 277);
  EXPECT_DOUBLE_EQ(copy_kernel_resident_warps_per_sm(lmcache, h100), 32.0);
  EXPECT_DOUBLE_EQ(copy_kernel_inflight_per_sm_bytes(lmcache, h100), 8192.0);
  // nvbandwidth's stridingMemcpyKernel: one 512-thread block per SM (16 warps), 12 uint4 loads
  // per thread before its stores: 16 × 12 × 32 × 16 B = 98,304 B per SM.
  const CopyKernelShape nvb = shape(16, 512, 1, 12);
  EXPECT_DOUBLE_EQ(copy_kernel_resident_warps_per_sm(nvb, h100), 16.0);
  EXPECT_DOUBLE_EQ(copy_kernel_inflight_per_sm_bytes(nvb, h100), 98304.0);
  // 512-thread blocks, 8 offered per SM: 64 warps / 16 per block = 4 blocks resident → 64 warps.
  EXPECT_DOUBLE_EQ(copy_kernel_resident_warps_per_sm(shape(16, 512, 8), h100), 64.0);
  // A 48-thread block takes 2 warps (a partial warp is a warp).
  EXPECT_DOUBLE_EQ(copy_kernel_resident_warps_per_sm(shape(4, 48, 3), h100), 6.0);
  // On 16 SMs the kernel keeps 16 × 8,192 B in flight.
  EXPECT_DOUBLE_EQ(copy_kernel_inflight_bytes(lmcache, h100, 16), 131072.0);
  // No shape: no bound of its own.
  EXPECT_DOUBLE_EQ(copy_kernel_inflight_bytes(CopyKernelShape{}, h100, 132), 0.0);
}

TEST(LinksSmRead, ShapeInputsAreChecked) {
  EXPECT_THROW(shape(12, 32, 1).validate("stack.copy_kernel"), InputError);
  CopyKernelShape partial;
  partial.load_width = 8;
  EXPECT_THROW(partial.validate("stack.copy_kernel"), InputError);
  EXPECT_NO_THROW(shape(16, 512, 1, 12).validate("stack.copy_kernel"));
  EXPECT_NO_THROW(CopyKernelShape{}.validate("stack.copy_kernel"));
}

// The zero-copy read of one GPU alone on the idle flow network: its rate and the bound that set
// it (-1: its own rate cap, Little's law on its loads in flight; else a resource).
struct SoloRead {
  double rate = 0;
  std::string bound;
};
SoloRead solo_kernel_read(const Topology& t, double inflight) {
  FlowNetwork net;
  t.add_to(net);
  const auto f = net.start(0, t.path(0, Direction::H2D, CopyPath::Kernel, true), 1e18,
                           t.rate_cap(0, Direction::H2D, CopyPath::Kernel, true, inflight));
  const int b = net.bottleneck(f);
  return {net.rate(f), b < 0 ? "cap" : t.resources().at(static_cast<std::size_t>(b)).name};
}

TEST(LinksSmRead, BandwidthRisesWithResidentWarpsUntilTagsOrWireCap) {
  // A one-warp-block kernel of 8 B loads (LMCache's) squeezed onto 16 SMs, b blocks resident
  // per SM: 16 × b × 256 B in flight per 1 µs round trip = 4.096·b GB/s (Little's law), until
  // the GPU's read tags bind: 768 tags × 64 B / 1 µs = 49.152 GB/s (PCIe 6: the wire,
  // 117.7 GB/s / (1 + 12/64 + 2/64) = 96.6 GB/s, is above it), or on PCIe 5 the wire:
  // 62.85 / 1.34375 = 46.77 GB/s (below the tags).
  const Topology gen6 = build_topology(load("h100", {"system.host_link=pcie6"}));
  const Topology gen5 = build_topology(load("h100"));
  const GpuSpec h100 = load("h100").gpu;
  const double tags = 768 * 64 / 1e-6;
  const double wire5 = kGen5Wire / 1.34375;
  for (int b : {1, 2, 4, 8, 11}) {  // 4.1 ... 45.1 GB/s: below both: linear in b
    const double inflight = copy_kernel_inflight_bytes(shape(8, 32, b), h100, 16);
    const SoloRead r6 = solo_kernel_read(gen6, inflight);
    EXPECT_NEAR(r6.rate, 4.096e9 * b, 1e-3) << b;
    EXPECT_EQ(r6.bound, "cap") << b;  // sm_inflight
  }
  for (int b : {13, 16, 32, 100}) {  // 53.2 GB/s and up: the tags (Gen6), the wire (Gen5)
    const double inflight = copy_kernel_inflight_bytes(shape(8, 32, b), h100, 16);
    const SoloRead r6 = solo_kernel_read(gen6, inflight);
    EXPECT_NEAR(r6.rate, tags, 1e-6 * tags) << b;
    EXPECT_EQ(r6.bound, "gpu0.read-tags") << b;
    const SoloRead r5 = solo_kernel_read(gen5, inflight);
    EXPECT_NEAR(r5.rate, wire5, 1e-6 * wire5) << b;
    EXPECT_EQ(r5.bound, "hostlink0.down") << b;
  }
  // Past the occupancy limit (32 blocks) more blocks add nothing: 100 offered = 32 resident.
  EXPECT_DOUBLE_EQ(copy_kernel_inflight_bytes(shape(8, 32, 100), h100, 16), 16 * 32 * 256.0);
}

TEST(LinksSmRead, LmcacheKernelOnTheWholeGpuIsLinkBound) {
  // LMCache 0.3.5's kernel on all 132 SMs: 132 × 8,192 B = 1.08 MB in flight, 1,081 GB/s at
  // 1 µs, far above the PCIe 5 SmRead wire bound 46.77 GB/s (and the tags' 49.15): link-bound,
  // not 33.8 GB/s as with the old one-load-per-SM assumption.
  const Topology t = build_topology(load("h100"));
  const GpuSpec h100 = load("h100").gpu;
  const double inflight = copy_kernel_inflight_bytes(shape(8, 32, 277), h100, 132);
  EXPECT_DOUBLE_EQ(inflight, 132 * 8192.0);
  EXPECT_DOUBLE_EQ(t.rate_cap(0, Direction::H2D, CopyPath::Kernel, true, inflight),
                   132 * 8192.0 / 1e-6);
  const SoloRead r = solo_kernel_read(t, inflight);
  EXPECT_NEAR(r.rate, kGen5Wire / 1.34375, 1e-6 * kGen5Wire);
  // Without a shape the kernel's own loads bound nothing; DMA and SM writes never have one.
  EXPECT_TRUE(std::isinf(t.rate_cap(0, Direction::H2D, CopyPath::Kernel, true)));
  EXPECT_TRUE(std::isinf(t.rate_cap(0, Direction::H2D, CopyPath::Dma, true)));
  EXPECT_TRUE(std::isinf(t.rate_cap(0, Direction::D2H, CopyPath::Kernel, true, inflight)));
  // An explicit in-flight figure (a kernel on 16 SMs, one warp of 8 B loads each): 4.096 GB/s.
  EXPECT_DOUBLE_EQ(t.rate_cap(0, Direction::H2D, CopyPath::Kernel, true, 16 * 256.0), 4.096e9);
}

TEST(LinksSmRead, NvbandwidthKernelIsLinkBoundOnItsShape) {
  // nvbandwidth's SM H2D kernel keeps 132 × 98,304 B = 13 MB in flight (12,976 GB/s at 1 µs):
  // the wire (46.77 GB/s) binds. Its measured 35.2 GB/s (#24) needs a downstream limit: the
  // 768 tags × 64 B give it at a 1.40 µs round trip (docs/pcie-model.md: a host property).
  const Topology t = build_topology(load("h100"));
  const GpuSpec h100 = load("h100").gpu;
  const double inflight = copy_kernel_inflight_bytes(shape(16, 512, 1, 12), h100, 132);
  EXPECT_DOUBLE_EQ(inflight, 132 * 98304.0);
  EXPECT_NEAR(solo_kernel_read(t, inflight).rate, kGen5Wire / 1.34375, 1e-6 * kGen5Wire);
  EXPECT_NEAR(768 * 64 / 1.3963e-6, 35.2e9, 0.001 * 35.2e9);
}

TEST(LinksSmRead, SmWritesAre128ByteLines) {
  // pcie5 sm_write_size 128 B: 1 + 24/128 = 1.1875 wire B per byte → 62.85 / 1.1875 = 52.93
  // GB/s, the measured device_to_host_memcpy_sm 52.77 GB/s (nvbandwidth #24) within 0.3%.
  const Topology t = build_topology(load("h100"));
  const double r = t.solo_rate(0, Direction::D2H, CopyPath::Kernel, true);
  EXPECT_NEAR(r, kGen5Wire / 1.1875, 1e-6 * kGen5Wire);
  EXPECT_NEAR(r / 52.77e9, 1.0, 0.005);
}

// A copy kernel holding few SMs reads slower, in both fidelities: 8 SMs × 256 B / 1 µs =
// 2.048 GB/s, so 1 MiB takes one round trip + 1 MiB / 2.048 GB/s = 1 µs + 512 µs.
TEST(LinksSmRead, KernelOnFewSmsIsLoadBoundInBothFidelities) {
  const SystemSpec s = load("h100");
  const double bytes = 1024.0 * 1024;
  const double want = 1e-6 + bytes / 2.048e9;
  double t_flow = 0, t_packet = 0;
  std::unique_ptr<FlowFabric> flow;
  std::unique_ptr<PciePacketLink> packet;
  std::unique_ptr<CopyKernel> k_flow, k_packet;
  std::unique_ptr<SmPool> pool;
  run_simulation([&] {
    flow = std::make_unique<FlowFabric>("flow", build_topology(s));
    packet = std::make_unique<PciePacketLink>("packet",
                                              PcieProtocol::from(s.host_link, "system.host_link"));
    // One one-warp block of 8 B loads per SM: on 8 SMs 8 × 256 B in flight per 1 µs.
    k_flow = std::make_unique<CopyKernel>("kf", s.gpu, shape(8, 32, 1));
    k_packet = std::make_unique<CopyKernel>("kp", s.gpu, shape(8, 32, 1));
    k_flow->out.bind(flow->in);
    k_packet->out.bind(packet->in);
    pool = std::make_unique<SmPool>(s.gpu.sm_count);
    sc_core::sc_spawn([&] {
      // One block of 1 MiB: the block overhead (0.24 µs) is paid first, then the transfer.
      sc_core::sc_time t0 = sc_core::sc_time_stamp();
      k_flow->copy_blocks(0, Direction::H2D, bytes, 1, pool.get(), 8);
      t_flow = (sc_core::sc_time_stamp() - t0).to_seconds() - 0.24e-6;
      t0 = sc_core::sc_time_stamp();
      k_packet->copy_blocks(0, Direction::H2D, bytes, 1, pool.get(), 8);
      t_packet = (sc_core::sc_time_stamp() - t0).to_seconds() - 0.24e-6;
    });
  });
  EXPECT_NEAR(t_flow / want, 1.0, 0.002);
  EXPECT_NEAR(t_packet / want, 1.0, 0.02);
}

// ---- Per-rank NUMA placement; the step waits for the slowest rank ---------------------------

TEST(LinksNuma, PerRankPlacementResolves) {
  const SystemSpec s = load("h100", {"system.kv_pool_per_gpu=local,local,local,local,"
                                     "local,first-touch,interleave,remote"});
  const Topology t = build_topology(s);
  EXPECT_EQ(t.pool_socket(0), 0);
  EXPECT_EQ(t.pool_socket(5), 1);   // first-touch: modelled as the rank's own socket
  EXPECT_EQ(t.pool_socket(6), -1);  // interleaved
  EXPECT_EQ(t.pool_socket(7), 0);   // remote: GPU 7 sits on socket 1, its pool on socket 0
  const auto p = t.path(7, Direction::H2D, CopyPath::Dma, true);
  bool crosses = false;
  for (const auto& u : p) crosses |= u.resource == t.resource("socket-link.0to1");
  EXPECT_TRUE(crosses);
}

// h100 (DDR5-4400, 8 ch × 8 B × 0.8 = 225.28 GB/s per socket; UPI 128 GB/s), GPU 7's pool on
// socket 0, all 8 ranks load at once by DMA (link bound 62.85 / 1.16016 = 54.17 GB/s each):
//   socket 0 DRAM carries GPUs 0-3 and 7: 5 × 54.17 = 270.9 > 225.28 → 225.28 / 5 = 45.056 each
//   socket 1 DRAM carries GPUs 4-6: 3 × 54.17 = 162.5 < 225.28 → link-bound, 54.17 each
// The remote rank (and the local ranks it shares DRAM with) run at 45.056 GB/s; the group ends
// when they do: RTT + fixed + bytes / 45.056 GB/s.
TEST(LinksNuma, RemoteRankIsSlowerAndTheGroupWaitsForIt) {
  const SystemSpec s = load("h100", {"system.kv_pool_per_gpu=local,local,local,local,"
                                     "local,local,local,remote"});
  const Topology topo = build_topology(s);
  FlowNetwork net;
  topo.add_to(net);
  std::vector<FlowNetwork::FlowId> f;
  for (int g = 0; g < 8; ++g)
    f.push_back(net.start(0, topo.path(g, Direction::H2D, CopyPath::Dma, true), 1e12,
                          topo.rate_cap(g, Direction::H2D, CopyPath::Dma, true)));
  const double link = kGen5Wire / (1 + 4 * 20.0 / 512 + 2.0 / 512);
  EXPECT_NEAR(net.rate(f[7]), 225.28e9 / 5, 1e3);
  EXPECT_NEAR(net.rate(f[0]), 225.28e9 / 5, 1e3);
  EXPECT_NEAR(net.rate(f[6]), link, 1e-6 * link);
  EXPECT_LT(net.rate(f[7]), net.rate(f[6]));

  // The same as a SystemC group: it finishes when the slowest rank does.
  const double bytes = 256.0 * 1024 * 1024;
  FlowFabric::Group group;
  std::vector<TransferRequest> rs(8);
  std::unique_ptr<FlowFabric> fabric;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    for (int g = 0; g < 8; ++g) {
      rs[static_cast<std::size_t>(g)].gpu = g;
      rs[static_cast<std::size_t>(g)].bytes = bytes;
    }
    sc_core::sc_spawn([&] { fabric->start_group(rs, group); });
  });
  ASSERT_TRUE(group.finished);
  EXPECT_NEAR(group.end_s / (1e-6 + bytes / (225.28e9 / 5)), 1.0, 1e-6);
  // GPU 6 (local, socket 1) was done earlier: 1 µs + bytes / 54.17 GB/s.
  EXPECT_NEAR(rs[6].end_s / (1e-6 + bytes / link), 1.0, 1e-6);
}

TEST(LinksNuma, BadPerRankListsAreInputErrors) {
  try {
    load("h100", {"system.kv_pool_per_gpu=local,remote"});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("kv_pool_per_gpu: expected one placement per GPU (8), got 2"),
        std::string::npos)
        << e.what();
  }
  try {
    load("h100", {"system.kv_pool_per_gpu=local,local,local,local,local,local,local,far"});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 7: unknown placement 'far' (valid: local, socket0, "
                                         "interleave, remote, first-touch)"),
              std::string::npos)
        << e.what();
  }
  // The old GPU-wide copy-kernel keys are gone: the shape is the kernel's (stack, probe).
  EXPECT_THROW(load("h100", {"system.gpu.copy_kernel_load_width=16 B"}), InputError);
}

// ---- PCIe 4.0 paper-testbed variant ---------------------------------------------------------

TEST(LinksPresets, PaperTestbedGen4HasGen4RootPorts) {
  const SystemSpec s = load("paper-testbed-gen4");
  EXPECT_EQ(s.host_link.generation, 4);
  EXPECT_EQ(s.host_link.lanes, 16);
  const Topology t = build_topology(s);
  // Gen4 x16: 16 GT/s × 16 × 128/130 / 8 = 31.51 GB/s, × 370/371 SKP; DmaRead / 1.16016.
  const double wire = 16e9 * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));
  EXPECT_NEAR(t.solo_rate(0, Direction::H2D, CopyPath::Dma, true),
              wire / (1 + 4 * 20.0 / 512 + 2.0 / 512), 1e-6 * wire);
  // The SM-read Little bound (33.8 GB/s) is above the Gen4 SmRead wire bound (23.38 GB/s).
  EXPECT_NEAR(t.solo_rate(0, Direction::H2D, CopyPath::Kernel, true), wire / 1.34375, 1e-6 * wire);
  // Same host as paper-testbed.
  EXPECT_EQ(s.host_memory.name, load("paper-testbed").host_memory.name);
}

// ---- C2C: GB200 per-GPU share, GH200 per-direction rates ------------------------------------

TEST(LinksC2c, Gb200LoneGpuGetsItsShare) {
  const Topology t = build_topology(load("gb200"));
  // 900 GB/s bidirectional per superchip → 450 per direction → 225 GB/s per GPU per direction.
  EXPECT_DOUBLE_EQ(t.solo_rate(0, Direction::H2D, CopyPath::Dma, true), 225e9);
  EXPECT_DOUBLE_EQ(t.solo_rate(1, Direction::D2H, CopyPath::Dma, true), 225e9);
  EXPECT_EQ(t.host_link_instances(), 2);
  // Both GPUs at once: 2 × 225 = 450 > Grace DRAM 512 × 0.8 = 409.6 GB/s → 204.8 each.
  FlowNetwork net;
  t.add_to(net);
  const auto a = net.start(0, t.path(0, Direction::H2D, CopyPath::Dma, true), 1e12);
  const auto b = net.start(0, t.path(1, Direction::H2D, CopyPath::Dma, true), 1e12);
  EXPECT_NEAR(net.rate(a), 204.8e9, 1e3);
  EXPECT_NEAR(net.rate(b), 204.8e9, 1e3);
}

TEST(LinksC2c, Gh200PerDirectionRates) {
  const Topology t = build_topology(load("gh200"));
  // nvbandwidth on GH200 (NVIDIA/nvbandwidth #23): H2D 346 GB/s; D2H 15% lower = 301 GB/s.
  EXPECT_DOUBLE_EQ(t.solo_rate(0, Direction::H2D, CopyPath::Dma, true), 346e9);
  EXPECT_DOUBLE_EQ(t.solo_rate(0, Direction::D2H, CopyPath::Dma, true), 301e9);
  // A measured rate above the published per-direction figure is an input error.
  EXPECT_THROW(load("gh200", {"system.host_link.bandwidth_h2d=500 GB/s"}), InputError);
}

// ---- Validation rows held here (experiments/validation/links.yaml) ---------------------------

TEST(LinksValidation, A100SmReadIsWireBoundNearNvbandwidth) {
  // nvbandwidth host_to_device_memcpy_sm, A100 Gen4, 512 MiB: 25.13 GB/s (NVIDIA/nvbandwidth #42),
  // nvbandwidth's kernel (16 warps × 12 loads × 512 B per SM): 108 × 98,304 B / 1 µs = 10.6 TB/s
  // in flight; read tags 768 × 64 B / 1 µs = 49.2 GB/s; the Gen4 SmRead wire bound
  // 31.51 · 370/371 / 1.34375 = 23.38 GB/s binds: ratio 0.93, inside the row's band [0.85, 1.15].
  const Topology t = build_topology(load("a100"));
  const GpuSpec a100 = load("a100").gpu;
  const double wire = 16e9 * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));
  const double r =
      solo_kernel_read(t, copy_kernel_inflight_bytes(shape(16, 512, 1, 12), a100, 108)).rate;
  EXPECT_NEAR(r, wire / 1.34375, 1e-6 * wire);
  EXPECT_GT(r / 25.13e9, 0.85);
  EXPECT_LT(r / 25.13e9, 1.15);
}

TEST(LinksValidation, Gh200SmReadMatchesItsCopyEngine) {
  // nvbandwidth on GH200 (#23): SM H2D 342 GB/s vs CE 346 GB/s. C2C has no sourced round trip,
  // so no Little bound: the SM read gets the link's 346 GB/s, 1.2% above 342.
  const Topology t = build_topology(load("gh200"));
  EXPECT_TRUE(std::isinf(t.rate_cap(0, Direction::H2D, CopyPath::Kernel, true)));
  EXPECT_NEAR(t.solo_rate(0, Direction::H2D, CopyPath::Kernel, true) / 342e9, 1.0, 0.05);
}

}  // namespace
}  // namespace links_test
}  // namespace kappasim
