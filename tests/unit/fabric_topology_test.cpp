// Topology for every TransferRequest::endpoint (issue 14): the resources a system with CXL
// expanders, NVMe drives, NVLink and NICs gets, the path each endpoint crosses, and the rates
// FlowNetwork (pure max-min fairness) gives those paths alone and contended. Device specs are
// hand-written here (round figures, not presets); expectations are computed by hand in comments.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "interconnects/flow_network.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "systems/topology.hpp"

namespace kappasim {
namespace fabric_topology_test {
namespace {

SystemSpec preset(const std::string& name) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar(name));
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

SystemSpec h100() {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar("h100"));
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

// A CXL 2.0 Type-3 expander on PCIe Gen5 x8: 32 GT/s × 8 lanes / 8 = 32 GB/s raw, 68-byte flits
// carrying 64 payload bytes -> 32e9 × 64/68 = 30.118 GB/s per direction. Media 45 GB/s read,
// 22.5 GB/s write (so a byte written costs 2 media units); 250 ns added latency.
CxlExpanderSpec cxl_x8() {
  CxlExpanderSpec c;
  c.name = "hand-cxl";
  c.capacity_bytes = 256e9;
  c.rate_per_lane_Tps = 32e9;
  c.lanes = 8;
  c.flit_bytes = 68;
  c.flit_data_bytes = 64;
  c.media_read_Bps = 45e9;
  c.media_write_Bps = 22.5e9;
  c.added_latency_s = 250e-9;
  return c;
}
constexpr double kCxlLink = 32e9 * 64.0 / 68.0;

// A Gen5 x4 NVMe drive: 14 GB/s seq read, 7 GB/s seq write, 2 M / 0.5 M IOPS at 4 KiB,
// queue depth 512, 80 µs read latency.
NvmeDriveSpec nvme_gen5() {
  NvmeDriveSpec n;
  n.name = "hand-nvme";
  n.capacity_bytes = 7.68e12;
  n.rate_per_lane_Tps = 32e9;
  n.lanes = 4;
  n.seq_read_Bps = 14e9;
  n.seq_write_Bps = 7e9;
  n.read_iops = 2e6;
  n.write_iops = 0.5e6;
  n.io_bytes = 4096;
  n.queue_depth = 512;
  n.read_latency_s = 80e-6;
  return n;
}

SystemSpec with_devices() {
  SystemSpec s = h100();
  s.cxl = cxl_x8();
  s.cxl_devices = 2;
  s.nvme = nvme_gen5();
  s.nvme_drives = 2;
  s.nic_Bps = 50e9;  // 400 Gb/s per GPU (ConnectX-7 class), hand value
  s.nic_latency_s = 5e-6;
  return s;
}

TransferRequest req(int gpu, Endpoint e, int index, Direction d = Direction::H2D) {
  TransferRequest r;
  r.gpu = gpu;
  r.dir = d;
  r.endpoint = e;
  r.endpoint_index = index;
  return r;
}

double cost_on(const std::vector<FlowNetwork::Use>& p, const Topology& t, const std::string& n) {
  double c = 0;
  const int id = t.resource(n);
  for (const auto& u : p)
    if (u.resource == id) c += u.cost;
  return c;
}

std::vector<std::string> names(const Topology& t) {
  std::vector<std::string> out;
  for (const auto& r : t.resources()) out.push_back(r.name);
  return out;
}

// Rates of flows started together on a fresh network (max-min fair).
std::vector<double> rates(const Topology& t, const std::vector<TransferRequest>& rs) {
  FlowNetwork net;
  t.add_to(net);
  std::vector<FlowNetwork::FlowId> ids;
  for (const auto& r : rs) ids.push_back(net.start(0, t.path(r), 1e9, t.rate_cap(r)));
  std::vector<double> out;
  for (auto id : ids) out.push_back(net.rate(id));
  return out;
}

TEST(FabricTopology, WithoutDevicesTheHostResourcesAreUnchanged) {
  // The host-side list of a system without CXL / NVMe / NIC is today's, in today's order; the
  // only addition is NVLink (every simulated GPU has nvlink_bandwidth: require_sim), appended
  // after it, so every resource index of before is unchanged.
  const SystemSpec s = h100();
  const Topology t = build_topology(s);
  std::vector<std::string> want = {"socket0.dram", "socket1.dram", "socket-link.0to1",
                                   "socket-link.1to0"};
  for (int i = 0; i < 8; ++i)
    for (const char* d : {".down", ".up"}) want.push_back("hostlink" + std::to_string(i) + d);
  for (int g = 0; g < 8; ++g) want.push_back("gpu" + std::to_string(g) + ".hbm");
  for (int g = 0; g < 8; ++g) want.push_back("gpu" + std::to_string(g) + ".read-tags");
  for (int g = 0; g < 8; ++g)
    for (const char* d : {".nvlink.out", ".nvlink.in"})
      want.push_back("gpu" + std::to_string(g) + d);
  EXPECT_EQ(names(t), want);
  // The one-argument call is the one-node topology; one GPU: no NVLink resources at all.
  EXPECT_EQ(names(build_topology(s, 1)), want);
  SystemSpec one = s;
  one.gpus = 1;
  one.gpus_per_socket = 0;
  EXPECT_EQ(names(build_topology(one)),
            (std::vector<std::string>{"socket0.dram", "socket1.dram", "socket-link.0to1",
                                      "socket-link.1to0", "hostlink0.down", "hostlink0.up",
                                      "gpu0.hbm", "gpu0.read-tags"}));
}

TEST(FabricTopology, CxlDeviceResourcesAndPath) {
  const Topology t = build_topology(with_devices());
  EXPECT_EQ(t.cxl_devices(), 2);
  EXPECT_NEAR(t.resources()[t.resource("cxl0.link.up")].capacity, kCxlLink, 1);
  EXPECT_NEAR(t.resources()[t.resource("cxl1.link.down")].capacity, kCxlLink, 1);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("cxl1.media")].capacity, 45e9);
  // GPU 0 (socket 0) reads device 0 (socket 0): media, the device's up link, the GPU's host
  // link as a DMA read of host memory, HBM; no DRAM, no socket link.
  const PcieProtocol proto = PcieProtocol::from(with_devices().host_link, "l");
  const WireCost rd = wire_cost(proto, PcieOp::DmaRead);
  const auto p = t.path(req(0, Endpoint::Cxl, 0));
  EXPECT_DOUBLE_EQ(cost_on(p, t, "cxl0.media"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "cxl0.link.up"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "hostlink0.down"), rd.data_dir);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu0.hbm"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket0.dram"), 0.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "socket-link.1to0"), 0.0);
  // The read tags are held for the longer round trip: (1 µs + 250 ns) / 512 B.
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu0.read-tags"), 1.25e-6 / 512);
  // Device 1 sits on socket 1: GPU 0's read crosses socket-link.1to0.
  EXPECT_DOUBLE_EQ(cost_on(t.path(req(0, Endpoint::Cxl, 1)), t, "socket-link.1to0"), 1.0);
  // A write (D2H) rides the device's down link and costs 45 / 22.5 = 2 media units per byte.
  const auto w = t.path(req(0, Endpoint::Cxl, 0, Direction::D2H));
  EXPECT_DOUBLE_EQ(cost_on(w, t, "cxl0.link.down"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(w, t, "cxl0.media"), 2.0);
  // Latency: the host link's (1 µs read, 0.5 µs posted write) + the added 250 ns.
  EXPECT_DOUBLE_EQ(t.latency(req(0, Endpoint::Cxl, 0)), 1.25e-6);
  EXPECT_DOUBLE_EQ(t.latency(req(0, Endpoint::Cxl, 0, Direction::D2H)), 0.75e-6);
  // Alone, the device link binds: 30.118 GB/s (< media 45, < host link ≈ 54).
  EXPECT_NEAR(t.solo_rate(req(0, Endpoint::Cxl, 0)), kCxlLink, 1);
}

TEST(FabricTopology, ZeroCopyFromCxlIsSlowerByTheLongerRoundTrip) {
  // A copy kernel's SM loads of CXL-backed pinned memory: the same bytes in flight, each
  // round trip longer by the added latency (Little's law): a kernel of one one-warp block of
  // 8 B loads per SM keeps 132 SMs × 1 warp × 32 × 8 B = 33,792 B in flight
  // (TransferRequest::sm_inflight_bytes, set by CopyKernel from its shape); DRAM: / 1 µs =
  // 33.79 GB/s; CXL: / 1.25 µs = 27.03 GB/s.
  const Topology t = build_topology(with_devices());
  TransferRequest dram = req(0, Endpoint::HostDram, 0), cxl = req(0, Endpoint::Cxl, 0);
  dram.path = cxl.path = CopyPath::Kernel;
  dram.sm_inflight_bytes = cxl.sm_inflight_bytes = 132 * 32 * 8.0;
  EXPECT_NEAR(t.rate_cap(dram), 33792 / 1e-6, 1);
  EXPECT_NEAR(t.rate_cap(cxl), 33792 / 1.25e-6, 1);
  // Load-bound, so the round trip is inside every window: no separate first-byte latency.
  EXPECT_DOUBLE_EQ(t.latency(cxl), 0.0);
}

TEST(FabricTopology, CxlReadAndWriteShareTheMedia) {
  // GPU 0 reads device 0 while GPU 1 writes it: the link directions are separate, the media is
  // not. Equal rates x rise until x·1 + x·2 = 45 GB/s -> x = 15 GB/s each (media-bound).
  const Topology t = build_topology(with_devices());
  const auto r = rates(t, {req(0, Endpoint::Cxl, 0), req(1, Endpoint::Cxl, 0, Direction::D2H)});
  EXPECT_NEAR(r[0], 15e9, 1e3);
  EXPECT_NEAR(r[1], 15e9, 1e3);
}

TEST(FabricTopology, NvmeBounceAndGdsPaths) {
  const Topology t = build_topology(with_devices());
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("nvme1.read")].capacity, 14e9);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("nvme1.write")].capacity, 7e9);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("nvme1.read-iops")].capacity, 2e6);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("nvme1.write-iops")].capacity, 0.5e6);
  const PcieProtocol proto = PcieProtocol::from(with_devices().host_link, "l");
  // Bounce (GPU 5 on socket 1 from drive 1 on socket 1): drive, socket 1's DRAM twice (written
  // by the drive, read by the GPU's DMA), the host link as a DMA read, the GPU's read tags.
  TransferRequest b = req(5, Endpoint::Nvme, 1);
  b.io_bytes = 1 << 20;
  const auto pb = t.path(b);
  EXPECT_DOUBLE_EQ(cost_on(pb, t, "nvme1.read"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(pb, t, "nvme1.read-iops"), 1.0 / (1 << 20));
  EXPECT_DOUBLE_EQ(cost_on(pb, t, "socket1.dram"), 2.0);
  EXPECT_DOUBLE_EQ(cost_on(pb, t, "hostlink5.down"), wire_cost(proto, PcieOp::DmaRead).data_dir);
  EXPECT_GT(cost_on(pb, t, "gpu5.read-tags"), 0.0);
  // GDS: the drive's posted writes straight into GPU memory: no DRAM, no read tags; the host
  // link's down direction carries write framing.
  TransferRequest d = b;
  d.direct = true;
  const auto pd = t.path(d);
  EXPECT_DOUBLE_EQ(cost_on(pd, t, "socket1.dram"), 0.0);
  EXPECT_DOUBLE_EQ(cost_on(pd, t, "gpu5.read-tags"), 0.0);
  EXPECT_DOUBLE_EQ(cost_on(pd, t, "hostlink5.down"), wire_cost(proto, PcieOp::DmaWrite).data_dir);
  // A drive on the other socket: GDS peer-to-peer crosses the socket link (drive 0 -> GPU 5).
  d.endpoint_index = 0;
  EXPECT_DOUBLE_EQ(cost_on(t.path(d), t, "socket-link.0to1"), 1.0);
  // Latency: the read latency + the GPU-side hop (bounce: a DMA read, 1 µs; GDS: a posted
  // write, 0.5 µs).
  EXPECT_DOUBLE_EQ(t.latency(b), 81e-6);
  EXPECT_DOUBLE_EQ(t.latency(d), 80.5e-6);
  // Stores mirror it with the write figures.
  TransferRequest s = req(5, Endpoint::Nvme, 1, Direction::D2H);
  const auto ps = t.path(s);
  EXPECT_DOUBLE_EQ(cost_on(ps, t, "nvme1.write"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(ps, t, "nvme1.write-iops"), 1.0 / 4096);  // io_bytes 0: io_size
  EXPECT_DOUBLE_EQ(cost_on(ps, t, "socket1.dram"), 2.0);
}

// Issue 20 item 3: a connector that keeps q reads in flight is bound by Little's law over its
// own q (at most the drive's 512), not the drive's; the latency of one read is unchanged (the
// serial waves are the copy stream's: dma_read_waves, tests/sim/serving_stack_test.cpp).
TEST(FabricTopology, NvmeConnectorQueueDepthBoundsTheReadRate) {
  const Topology t = build_topology(with_devices());
  TransferRequest r = req(0, Endpoint::Nvme, 0);
  r.direct = true;  // GDS: no bounce, so only the drive's own bounds
  r.io_bytes = 2e6;
  EXPECT_NEAR(t.rate_cap(r), 512 * 2e6 / 80e-6, 1);  // the drive's depth: 12.8 TB/s
  r.queue_depth = 4;
  EXPECT_NEAR(t.rate_cap(r), 4 * 2e6 / 80e-6, 1e-3);  // 100 GB/s
  r.queue_depth = 1;
  EXPECT_NEAR(t.rate_cap(r), 2e6 / 80e-6, 1e-3);  // 25 GB/s
  r.queue_depth = 1000;                           // more than the drive's 512
  EXPECT_NEAR(t.rate_cap(r), 512 * 2e6 / 80e-6, 1);
  EXPECT_NEAR(t.latency(r), 80e-6 + 0.5e-6, 1e-15);  // one read + GDS's posted write
}

TEST(FabricTopology, NvmeIopsBoundAtFourKibSeqBoundAtOneMib) {
  const Topology t = build_topology(with_devices());
  TransferRequest r = req(0, Endpoint::Nvme, 0);
  r.direct = true;
  // 4 KiB requests: min(14 GB/s, 2e6 × 4096 = 8.192 GB/s) = 8.192 GB/s; the queue-depth cap
  // 512 × 4096 / 80 µs = 26.2 GB/s does not bind.
  r.io_bytes = 4096;
  EXPECT_NEAR(t.rate_cap(r), 512 * 4096 / 80e-6, 1);
  EXPECT_NEAR(t.solo_rate(r), 8.192e9, 1);
  // 1 MiB requests: the sequential figure, 14 GB/s.
  r.io_bytes = 1 << 20;
  EXPECT_NEAR(t.solo_rate(r), 14e9, 1);
  // Queue depth 16 at 4 KiB: Little's law 16 × 4096 / 80 µs = 0.8192 GB/s caps the transfer.
  SystemSpec s = with_devices();
  s.nvme.queue_depth = 16;
  const Topology q = build_topology(s);
  r.io_bytes = 4096;
  EXPECT_NEAR(q.solo_rate(r), 0.8192e9, 1);
  // Writes at 4 KiB: 0.5e6 × 4096 = 2.048 GB/s (< 7 GB/s seq).
  TransferRequest w = req(0, Endpoint::Nvme, 0, Direction::D2H);
  w.direct = true;
  EXPECT_NEAR(t.solo_rate(w), 2.048e9, 1);
}

TEST(FabricTopology, PeerGpuOverNvlinkAndRemoteOverTheNic) {
  const Topology t = build_topology(with_devices());
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("gpu3.nvlink.out")].capacity, 450e9);
  EXPECT_DOUBLE_EQ(t.resources()[t.resource("gpu3.nic.in")].capacity, 50e9);
  // GPU 2 receives from GPU 6 (H2D = endpoint -> gpu): 6's HBM and NVLink out, 2's in and HBM;
  // nothing of the host.
  const auto p = t.path(req(2, Endpoint::PeerGpu, 6));
  EXPECT_EQ(p.size(), 4u);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu6.hbm"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu6.nvlink.out"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu2.nvlink.in"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu2.hbm"), 1.0);
  EXPECT_DOUBLE_EQ(t.latency(req(2, Endpoint::PeerGpu, 6)), 2.8e-6);  // h100 nvlink_latency
  EXPECT_DOUBLE_EQ(t.solo_rate(req(2, Endpoint::PeerGpu, 6)), 450e9);
  // Remote store: the GPU's NIC only (GPUDirect RDMA).
  const auto q = t.path(req(2, Endpoint::Remote, 0, Direction::D2H));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_DOUBLE_EQ(cost_on(q, t, "gpu2.nic.out"), 1.0);
  EXPECT_DOUBLE_EQ(t.latency(req(2, Endpoint::Remote, 0)), 5e-6);
  EXPECT_DOUBLE_EQ(t.solo_rate(req(2, Endpoint::Remote, 0)), 50e9);
}

TEST(FabricTopology, TwoNodesCopyTheNodeAndPeersCrossTheNics) {
  const Topology t = build_topology(with_devices(), 2);
  EXPECT_EQ(t.gpus(), 16);
  EXPECT_EQ(t.nodes(), 2);
  EXPECT_EQ(t.node_of_gpu(8), 1);
  EXPECT_EQ(t.socket_of_gpu(12), 1);
  for (const char* n : {"node1.socket1.dram", "socket-link.node1.0to1", "node1.hostlink7.up",
                        "gpu15.hbm", "gpu15.read-tags", "node1.cxl1.media", "node1.nvme0.read",
                        "gpu15.nvlink.in", "gpu15.nic.out"})
    EXPECT_NO_THROW(t.resource(n)) << n;
  // GPU 12 (node 1, socket 1) reads its local host pool: node 1's resources.
  const auto h = t.path(12, Direction::H2D, CopyPath::Dma, true);
  EXPECT_DOUBLE_EQ(cost_on(h, t, "node1.socket1.dram"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(h, t, "socket1.dram"), 0.0);
  EXPECT_GT(cost_on(h, t, "node1.hostlink4.down"), 1.0);
  // GPU 9 (node 1) receives from GPU 1 (node 0): 1's NIC out, 9's NIC in, both HBMs.
  const auto p = t.path(req(9, Endpoint::PeerGpu, 1));
  EXPECT_EQ(p.size(), 4u);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu1.nic.out"), 1.0);
  EXPECT_DOUBLE_EQ(cost_on(p, t, "gpu9.nic.in"), 1.0);
  EXPECT_DOUBLE_EQ(t.latency(req(9, Endpoint::PeerGpu, 1)), 5e-6);
  // Within node 1: NVLink.
  EXPECT_DOUBLE_EQ(cost_on(t.path(req(9, Endpoint::PeerGpu, 10)), t, "gpu10.nvlink.out"), 1.0);
  // Two receivers on node 1 from GPU 0: GPU 0's NIC out is shared, 25 GB/s each.
  const auto r = rates(t, {req(8, Endpoint::PeerGpu, 0), req(9, Endpoint::PeerGpu, 0)});
  EXPECT_NEAR(r[0], 25e9, 1e3);
  EXPECT_NEAR(r[1], 25e9, 1e3);
}

TEST(FabricTopology, ShippedThreeTierPresetBuildsAndItsTiersRunAtTheirFigures) {
  // dgx-h100-256gb-cxl-nvme (tierspec presets): 8 Samsung CMM-D (Gen5 x8, 128b/130b, 68 B flits
  // of 64 B; media 36 GB/s; +150 ns) and 8 PM1733 (7 GB/s, 1.47 M IOPS at 4 KiB, QD 256, 90 µs).
  const Topology t = build_topology(preset("dgx-h100-256gb-cxl-nvme"));
  EXPECT_EQ(t.cxl_devices(), 8);
  EXPECT_EQ(t.nvme_drives(), 8);
  // CXL alone: the x8 link, 32e9 × 8 / 8 × 128/130 × 64/68 = 29.65 GB/s (< media 36 GB/s);
  // first byte after 1 µs + 150 ns.
  const double cxl = 32e9 * 128.0 / 130.0 * 64.0 / 68.0;
  EXPECT_NEAR(t.solo_rate(req(0, Endpoint::Cxl, 0)), cxl, 1);
  EXPECT_NEAR(t.latency(req(0, Endpoint::Cxl, 0)), 1.15e-6, 1e-15);
  // Device 3 is on socket 1 (3 mod 2): GPU 0's read crosses socket-link.1to0.
  EXPECT_DOUBLE_EQ(cost_on(t.path(req(0, Endpoint::Cxl, 3)), t, "socket-link.1to0"), 1.0);
  // NVMe GDS: 1 MiB requests -> 7 GB/s; 4 KiB -> 1.47e6 × 4096 = 6.021 GB/s (QD cap
  // 256 × 4096 / 90 µs = 11.65 GB/s does not bind).
  TransferRequest n = req(0, Endpoint::Nvme, 0);
  n.direct = true;
  n.io_bytes = 1 << 20;
  EXPECT_NEAR(t.solo_rate(n), 7e9, 1);
  n.io_bytes = 4096;
  EXPECT_NEAR(t.solo_rate(n), 1.47e6 * 4096, 1);
  // The NIC per GPU (50 GB/s): a remote store.
  EXPECT_DOUBLE_EQ(t.solo_rate(req(0, Endpoint::Remote, 0)), 50e9);
}

void expect_input_error(const Topology& t, const TransferRequest& r, const std::string& part) {
  try {
    t.path(r);
    ADD_FAILURE() << "expected InputError containing '" << part << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(FabricTopology, BadEndpointsAreInputErrors) {
  const Topology t = build_topology(with_devices());
  expect_input_error(t, req(0, Endpoint::Cxl, 2), "system.cxl_devices");
  expect_input_error(t, req(0, Endpoint::Nvme, -1), "system.nvme_drives");
  expect_input_error(t, req(0, Endpoint::PeerGpu, 8), "peer GPU out of range");
  expect_input_error(t, req(3, Endpoint::PeerGpu, 3), "not its own peer");
  TransferRequest k = req(0, Endpoint::Nvme, 0);
  k.direct = true;
  k.path = CopyPath::Kernel;
  expect_input_error(t, k, "GPUDirect Storage");
  TransferRequest pg = req(0, Endpoint::Cxl, 0);
  pg.pinned = false;
  expect_input_error(t, pg, "pageable");
  // A system without the devices / NIC: the error names the key.
  const Topology bare = build_topology(h100(), 2);
  expect_input_error(bare, req(0, Endpoint::Cxl, 0), "system.cxl_devices");
  expect_input_error(bare, req(0, Endpoint::Nvme, 0), "system.nvme_drives");
  expect_input_error(bare, req(0, Endpoint::PeerGpu, 8), "system.nic_bandwidth");
  expect_input_error(bare, req(0, Endpoint::Remote, 0), "system.nic_bandwidth");
  EXPECT_THROW(build_topology(h100(), 0), InputError);
}

}  // namespace
}  // namespace fabric_topology_test
}  // namespace kappasim
