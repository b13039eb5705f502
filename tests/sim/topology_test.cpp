// Topology: resources and paths of preset systems. Capacities by hand from the preset values.
#include <gtest/gtest.h>

#include <cmath>

#include "core/config.hpp"
#include "interconnects/link_model.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "systems/topology.hpp"

namespace kappasim {
namespace topology_test {
namespace {

SystemSpec load(const std::string& name, const std::vector<std::string>& sets = {}) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar(name));
  for (const auto& s : sets) apply_set(root, s);
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

double cost_on(const std::vector<FlowNetwork::Use>& path, const Topology& t,
               const std::string& name) {
  double c = 0;
  const int id = t.resource(name);
  for (const auto& u : path)
    if (u.resource == id) c += u.cost;
  return c;
}

bool crosses(const std::vector<FlowNetwork::Use>& path, const Topology& t,
             const std::string& name) {
  return cost_on(path, t, name) > 0;
}

TEST(Topology, H100ResourcesAndLocalPath) {
  const Topology t = build_topology(load("h100"));
  EXPECT_EQ(t.gpus(), 8);
  EXPECT_EQ(t.sockets(), 2);
  EXPECT_EQ(t.host_link_instances(), 8);
  // DDR5-4400, 8 channels × 8 B, × dram_efficiency 0.8.
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("socket1.dram")].capacity, 4400e6 * 8 * 8 * 0.8);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("socket-link.0to1")].capacity, 128e9);
  // Gen5 x16: 32 GT/s × 16 × 128/130 / 8 B, after SKP ordered sets (16 B every 370 blocks of 16 B).
  const double wire = 32e9 * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));
  EXPECT_NEAR(t.resources()[t.resource("hostlink5.down")].capacity, wire, 1e-6 * wire);
  EXPECT_THROW(t.resource("gpu5.link.down"), std::out_of_range);  // no switch sharing
  EXPECT_EQ(t.gpu_link(5, Direction::H2D), -1);

  // GPU 5 sits on socket 1; its local pool is socket 1: no socket link.
  EXPECT_EQ(t.socket_of_gpu(5), 1);
  const auto p = t.path(5, Direction::H2D, CopyPath::Dma, true);
  const PcieProtocol proto = PcieProtocol::from(load("h100").host_link, "l");
  const WireCost wc = wire_cost(proto, PcieOp::DmaRead);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket1.dram"), 1.0);
  EXPECT_FALSE(crosses(p, t, "socket0.dram"));
  EXPECT_FALSE(crosses(p, t, "socket-link.0to1"));
  EXPECT_DOUBLE_EQ(cost_on(p, t, "hostlink5.down"), wc.data_dir);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "hostlink5.up"), wc.reverse_dir);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu5.hbm"), 1.0);
  // One read tag per 512 B request for a 1 µs round trip.
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu5.read-tags"), 1e-6 / 512);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("gpu5.read-tags")].capacity, 768);
  // D2H: the data rides the up direction, writes hold no read tag.
  const auto q = t.path(5, Direction::D2H, CopyPath::Dma, true);
  const WireCost ww = wire_cost(proto, PcieOp::DmaWrite);
  EXPECT_DOUBLE_EQ(cost_on(q, t, "hostlink5.up"), ww.data_dir);
  EXPECT_DOUBLE_EQ(cost_on(q, t, "hostlink5.down"), ww.reverse_dir);
  EXPECT_FALSE(crosses(q, t, "gpu5.read-tags"));
  // Latency: one read round trip per H2D transfer (DMA or SMs), half of it for posted writes.
  EXPECT_DOUBLE_EQ(t.latency(5, Direction::H2D, CopyPath::Dma, true), 1e-6);
  EXPECT_DOUBLE_EQ(t.latency(5, Direction::D2H, CopyPath::Dma, true), 0.5e-6);
  // A copy kernel whose reads are load-bound (132 SMs × one warp of 8 B loads = 33,792 B in
  // flight: 33.8 GB/s < the 46.8 GB/s SmRead wire bound) pays its round trips inside its
  // Little's-law rate: no separate first one; a link-bound one (132·512 B in flight, or a kernel
  // of no given shape) pays one.
  EXPECT_DOUBLE_EQ(t.latency(5, Direction::H2D, CopyPath::Kernel, true, 132 * 256.0), 0.0);
  EXPECT_DOUBLE_EQ(t.latency(5, Direction::H2D, CopyPath::Kernel, true, 132 * 512.0), 1e-6);
  EXPECT_DOUBLE_EQ(t.latency(5, Direction::H2D, CopyPath::Kernel, true), 1e-6);
  EXPECT_DOUBLE_EQ(t.latency(5, Direction::D2H, CopyPath::Kernel, true), 0.5e-6);
  EXPECT_TRUE(std::isinf(t.rate_cap(5, Direction::H2D, CopyPath::Dma, true)));
  EXPECT_NEAR(t.solo_rate(5, Direction::H2D, CopyPath::Dma, true), wire / wc.data_dir, 1e-6 * wire);
}

TEST(Topology, KvPoolOnSocket0SendsGpu5AcrossTheSocketLink) {
  const Topology t = build_topology(load("h100", {"system.kv_pool=socket0"}));
  const auto p = t.path(5, Direction::H2D, CopyPath::Dma, true);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket0.dram"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket-link.0to1"), 1.0);
  EXPECT_FALSE(crosses(p, t, "socket1.dram"));
  const auto q = t.path(5, Direction::D2H, CopyPath::Dma, true);
  EXPECT_DOUBLE_EQ(cost_on(q, t, "socket-link.1to0"), 1.0);
  // GPU 2 is on socket 0: local either way.
  EXPECT_FALSE(crosses(t.path(2, Direction::H2D, CopyPath::Dma, true), t, "socket-link.0to1"));
}

TEST(Topology, InterleavedPoolSplitsTheBytes) {
  const Topology t = build_topology(load("h100", {"system.kv_pool=interleave"}));
  const auto p = t.path(5, Direction::H2D, CopyPath::Dma, true);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket0.dram"), 0.5);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket1.dram"), 0.5);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket-link.0to1"), 0.5);
  EXPECT_FALSE(crosses(p, t, "socket-link.1to0"));
}

TEST(Topology, A100TwoGpusShareOneSwitchUplink) {
  const Topology t = build_topology(load("a100"));
  EXPECT_EQ(t.host_link_instances(), 4);
  const auto p0 = t.path(0, Direction::H2D, CopyPath::Dma, true);
  const auto p1 = t.path(1, Direction::H2D, CopyPath::Dma, true);
  const auto p2 = t.path(2, Direction::H2D, CopyPath::Dma, true);
  EXPECT_TRUE(crosses(p0, t, "hostlink0.down"));
  EXPECT_TRUE(crosses(p1, t, "hostlink0.down"));
  EXPECT_FALSE(crosses(p2, t, "hostlink0.down"));
  EXPECT_TRUE(crosses(p2, t, "hostlink1.down"));
  EXPECT_TRUE(crosses(p0, t, "gpu0.link.down"));
  EXPECT_TRUE(crosses(p1, t, "gpu1.link.down"));
  EXPECT_FALSE(crosses(p1, t, "gpu0.link.down"));
  // Gen4 x16 after encoding and SKP.
  const double wire = 16e9 * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));
  EXPECT_NEAR(t.resources()[t.resource("hostlink0.down")].capacity, wire, 1e-6 * wire);
  EXPECT_NEAR(t.resources()[t.resource("gpu1.link.down")].capacity, wire, 1e-6 * wire);
}

TEST(Topology, Gb200EachGpuOnItsOwnC2cShare) {
  const Topology t = build_topology(load("gb200"));
  EXPECT_EQ(t.gpus(), 2);
  EXPECT_EQ(t.sockets(), 1);
  // links: one C2C share per B200: 900 GB/s bidirectional per superchip / 2 directions / 2 GPUs.
  EXPECT_EQ(t.host_link_instances(), 2);
  for (int g = 0; g < 2; ++g) {
    const std::string down = "hostlink" + std::to_string(g) + ".down";
    EXPECT_DOUBLE_EQ(t.resources()[t.resource(down)].capacity, 225e9);
    const auto p = t.path(g, Direction::H2D, CopyPath::Kernel, true);
    EXPECT_DOUBLE_EQ(cost_on(p, t, down), 1.0);
    EXPECT_FALSE(crosses(p, t, "hostlink" + std::to_string(g) + ".up"));  // no C2C framing
    EXPECT_DOUBLE_EQ(cost_on(p, t, "socket0.dram"), 1.0);
    EXPECT_DOUBLE_EQ(t.latency(g, Direction::H2D, CopyPath::Dma, true), 0.0);
  }
  EXPECT_EQ(t.read_tags(0), -1);
  // Alone, a GPU gets its 225 GB/s share (the 409.6 GB/s of LPDDR5X × 0.8 does not bind).
  EXPECT_DOUBLE_EQ(t.solo_rate(0, Direction::H2D, CopyPath::Dma, true), 225e9);
}

TEST(Topology, PageableMemoryIsStagedByOneCpuThread) {
  const Topology t = build_topology(load("h100"));
  const auto p = t.path(0, Direction::H2D, CopyPath::Dma, false);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket0.dram"), 3.0);
  EXPECT_DOUBLE_EQ(t.rate_cap(0, Direction::H2D, CopyPath::Dma, false), 15e9);
  EXPECT_DOUBLE_EQ(t.solo_rate(0, Direction::H2D, CopyPath::Dma, false), 15e9);
  EXPECT_THROW(t.path(0, Direction::H2D, CopyPath::Kernel, false), InputError);
}

TEST(Topology, UnifiedHbmTierSkipsHostDram) {
  const Topology t = build_topology(load("unified-hbm"));
  const auto p = t.path(3, Direction::H2D, CopyPath::Dma, true);
  EXPECT_FALSE(crosses(p, t, "socket0.dram"));
  EXPECT_DOUBLE_EQ(cost_on(p, t, "hostlink3.down"), 1.0);
  EXPECT_TRUE(crosses(p, t, "gpu3.hbm"));
}

TEST(Topology, MissingFieldsAreNamed) {
  SystemSpec s = load("h100");
  s.host_memory.memcpy_thread_Bps.reset();
  try {
    build_topology(s);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("memcpy_thread_bandwidth"), std::string::npos);
  }
  s = load("h100");
  s.host_memory.dram_efficiency.reset();
  EXPECT_THROW(build_topology(s), InputError);
  s = load("h100");
  s.host_memory.inter_socket_Bps.reset();
  try {
    build_topology(s);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("inter_socket_bandwidth"), std::string::npos);
  }
  s = load("h100");
  s.gpu.copy_engines.reset();
  EXPECT_THROW(build_topology(s), InputError);
  s = load("h100");
  s.host_link.round_trip_latency_s.reset();
  EXPECT_THROW(build_topology(s), InputError);
  // 8 GPUs at 2 per socket need 4 sockets; the host has 2.
  EXPECT_THROW(build_topology(load("h100", {"system.gpus_per_socket=2"})), InputError);
}

}  // namespace
}  // namespace topology_test
}  // namespace kappasim
