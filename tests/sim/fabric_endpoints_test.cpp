// FlowFabric carrying every TransferRequest::endpoint (issue 14): transfer times alone and
// contended, against hand formulas in the comments. One simulation per TEST (ctest runs each
// TEST in its own process). Device specs are hand-written round figures, not presets.
#include <gtest/gtest.h>

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "models/gpu/copy_engine.hpp"
#include "systems/flow_fabric.hpp"
#include "systems/link_backend.hpp"

namespace kappasim {
namespace fabric_endpoints_test {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiB = 1024.0 * 1024;
constexpr double kPs = 1e-12;

SystemSpec h100() {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar("h100"));
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

// CXL 2.0 expander, PCIe Gen5 x8: 32 GT/s × 8 / 8 × 64/68 = 30.118 GB/s per direction; no media
// figures (the link is the limit); 250 ns added latency.
constexpr double kCxlLink = 32e9 * 64.0 / 68.0;
// NVMe Gen5 x4: 14 GB/s seq read, 7 GB/s write, 2 M / 0.5 M IOPS at 4 KiB, QD 512, 80 µs.
SystemSpec with_devices() {
  SystemSpec s = h100();
  s.cxl.name = "hand-cxl";
  s.cxl.capacity_bytes = 256e9;
  s.cxl.rate_per_lane_Tps = 32e9;
  s.cxl.lanes = 8;
  s.cxl.flit_bytes = 68;
  s.cxl.flit_data_bytes = 64;
  s.cxl.added_latency_s = 250e-9;
  s.cxl_devices = 2;
  s.nvme.name = "hand-nvme";
  s.nvme.capacity_bytes = 7.68e12;
  s.nvme.rate_per_lane_Tps = 32e9;
  s.nvme.lanes = 4;
  s.nvme.seq_read_Bps = 14e9;
  s.nvme.seq_write_Bps = 7e9;
  s.nvme.read_iops = 2e6;
  s.nvme.write_iops = 0.5e6;
  s.nvme.io_bytes = 4096;
  s.nvme.queue_depth = 512;
  s.nvme.read_latency_s = 80e-6;
  s.nvme_drives = 2;
  s.nic_Bps = 50e9;  // 400 Gb/s per GPU, hand value
  s.nic_latency_s = 5e-6;
  return s;
}

TransferRequest req(int gpu, Endpoint e, int index, double bytes) {
  TransferRequest r;
  r.gpu = gpu;
  r.endpoint = e;
  r.endpoint_index = index;
  r.bytes = bytes;
  return r;
}

// Runs the requests at once on a FlowFabric over `topo` (each in its own thread).
std::unique_ptr<FlowFabric> run(Topology topo, std::vector<TransferRequest>& rs) {
  std::unique_ptr<FlowFabric> fabric;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", std::move(topo));
    for (auto& r : rs) sc_core::sc_spawn([&fabric, &r] { fabric->transfer(r); });
  });
  fabric->check_conservation();
  return fabric;
}

double carried(const FlowFabric& f, const std::string& name) {
  return f.network().carried(f.topology()->resource(name));
}

TEST(FabricEndpoints, OneGpuReadsOneGibFromOneCxlDevice) {
  // Alone the device link binds (30.118 GB/s < host link ≈ 54 GB/s of payload); first byte
  // after the host link's read round trip (1 µs) + the device's 250 ns:
  // t = 1.25 µs + 2^30 / 30.118e9 = 1.25e-6 + 0.035651 s.
  std::vector<TransferRequest> rs = {req(0, Endpoint::Cxl, 0, kGiB)};
  auto f = run(build_topology(with_devices()), rs);
  EXPECT_NEAR(rs[0].end_s, 1.25e-6 + kGiB / kCxlLink, 2 * kPs);
  EXPECT_NEAR(carried(*f, "cxl0.link.up"), kGiB, 1e-3);
  EXPECT_NEAR(carried(*f, "socket0.dram"), 0, 1e-9);  // host DRAM untouched
  // The bottleneck accounting names the device link for the whole transfer.
  ASSERT_EQ(rs[0].bottleneck_s.size(), 1u);
  EXPECT_EQ(f->topology()->resources()[rs[0].bottleneck_s[0].first].name, "cxl0.link.up");
}

TEST(FabricEndpoints, TwoGpusReadingOneCxlDeviceGetHalfEach) {
  // GPUs 0 and 1 read 1 GiB each from device 0: 15.06 GB/s each, both end at
  // 1.25 µs + 2 × 2^30 / 30.118e9 = 0.071303 s (twice the time alone).
  std::vector<TransferRequest> rs = {req(0, Endpoint::Cxl, 0, kGiB),
                                     req(1, Endpoint::Cxl, 0, kGiB)};
  run(build_topology(with_devices()), rs);
  for (const auto& r : rs) EXPECT_NEAR(r.end_s, 1.25e-6 + 2 * kGiB / kCxlLink, 2 * kPs);
}

// 8 GPUs, GPU g reading 1 GiB from drive g / 4 (the drive on its own socket), 1 MiB requests,
// on a host with 20 GB/s of DRAM per socket (dram_efficiency set by hand).
std::vector<TransferRequest> eight_from_two(bool direct) {
  std::vector<TransferRequest> rs;
  for (int g = 0; g < 8; ++g) {
    rs.push_back(req(g, Endpoint::Nvme, g / 4, kGiB));
    rs.back().io_bytes = kMiB;
    rs.back().direct = direct;
  }
  return rs;
}
SystemSpec slow_dram() {
  SystemSpec s = with_devices();
  s.host_memory.dram_efficiency = 20e9 / s.host_memory.socket_bandwidth();
  return s;
}

TEST(FabricEndpoints, EightGpusFromTwoNvmeDrivesBounceCostsDramTwice) {
  // Bounce: each socket's DRAM carries 4 flows × cost 2 (written by the drive, read by the
  // GPU's DMA): 8x = 20 GB/s -> 2.5 GB/s each, below the drive's 14 / 4 = 3.5 GB/s share.
  // t = (80 µs + 1 µs) + 2^30 / 2.5e9 = 0.429578 s.
  std::vector<TransferRequest> rs = eight_from_two(false);
  auto f = run(build_topology(slow_dram()), rs);
  for (const auto& r : rs) EXPECT_NEAR(r.end_s, 81e-6 + kGiB / 2.5e9, 4 * kPs);
  EXPECT_NEAR(carried(*f, "socket0.dram"), 2 * 4 * kGiB, 1);  // DRAM twice per byte
  EXPECT_NEAR(carried(*f, "nvme1.read"), 4 * kGiB, 1);
}

TEST(FabricEndpoints, EightGpusFromTwoNvmeDrivesWithGdsAreDriveBound) {
  // GDS: no DRAM; each drive's 14 GB/s shared by 4 GPUs -> 3.5 GB/s each.
  // t = (80 µs + 0.5 µs posted write) + 2^30 / 3.5e9 = 0.306865 s.
  std::vector<TransferRequest> rs = eight_from_two(true);
  auto f = run(build_topology(slow_dram()), rs);
  for (const auto& r : rs) EXPECT_NEAR(r.end_s, 80.5e-6 + kGiB / 3.5e9, 4 * kPs);
  EXPECT_NEAR(carried(*f, "socket0.dram"), 0, 1e-9);
  EXPECT_NEAR(carried(*f, "socket1.dram"), 0, 1e-9);
}

TEST(FabricEndpoints, NvmeReadIsIopsBoundAtFourKibAndSeqBoundAtOneMib) {
  // Two GDS reads from drive 0, one after the other on the same drive (GPU 0 then GPU 1):
  // 4 KiB requests: 2e6 IOPS × 4096 B = 8.192 GB/s (QD cap 512 × 4096 / 80 µs = 26.2 GB/s
  // does not bind): t = 80.5 µs + 256 MiB / 8.192e9 = 0.032848 s.
  // 1 MiB requests: 14 GB/s seq: t = 80.5 µs + 256 MiB / 14e9 = 0.019255 s.
  std::vector<TransferRequest> rs = {req(0, Endpoint::Nvme, 0, 256 * kMiB),
                                     req(1, Endpoint::Nvme, 1, 256 * kMiB)};
  rs[0].direct = rs[1].direct = true;
  rs[0].io_bytes = 4096;
  rs[1].io_bytes = kMiB;
  rs[1].gpu = 4;  // drive 1 on socket 1, GPU 4 on socket 1: independent of the first
  auto f = run(build_topology(with_devices()), rs);
  EXPECT_NEAR(rs[0].end_s, 80.5e-6 + 256 * kMiB / 8.192e9, 2 * kPs);
  EXPECT_NEAR(rs[1].end_s, 80.5e-6 + 256 * kMiB / 14e9, 2 * kPs);
  const Topology& t = *f->topology();
  EXPECT_EQ(t.resources()[rs[0].bottleneck_s.at(0).first].name, "nvme0.read-iops");
  EXPECT_EQ(t.resources()[rs[1].bottleneck_s.at(0).first].name, "nvme1.read");
}

TEST(FabricEndpoints, PeerGpuOverNvlinkAlone) {
  // GPU 1 receives 1 GiB from GPU 0: 450 GB/s NVLink (HBM 3.08 TB/s does not bind), first byte
  // after nvlink_latency 2.8 µs: t = 2.8e-6 + 2^30 / 450e9 = 0.0023889 s.
  std::vector<TransferRequest> rs = {req(1, Endpoint::PeerGpu, 0, kGiB)};
  auto f = run(build_topology(with_devices()), rs);
  EXPECT_NEAR(rs[0].end_s, 2.8e-6 + kGiB / 450e9, 2 * kPs);
  EXPECT_NEAR(carried(*f, "gpu0.nvlink.out"), kGiB, 1e-3);
  EXPECT_NEAR(carried(*f, "gpu1.nvlink.in"), kGiB, 1e-3);
  EXPECT_NEAR(carried(*f, "hostlink0.down"), 0, 1e-9);
}

TEST(FabricEndpoints, PeerGpuBetweenNodesOverTheNicsContended) {
  // Two nodes. GPU 8 (node 1) receives 1 GiB from GPU 0 (node 0): 50 GB/s NIC, 5 µs:
  // alone t = 5e-6 + 2^30 / 50e9. With GPU 9 receiving 1 GiB from GPU 0 at the same time,
  // GPU 0's NIC out is shared: 25 GB/s each, t = 5e-6 + 2^30 / 25e9 = 0.042955 s.
  std::vector<TransferRequest> rs = {req(8, Endpoint::PeerGpu, 0, kGiB),
                                     req(9, Endpoint::PeerGpu, 0, kGiB)};
  auto f = run(build_topology(with_devices(), 2), rs);
  for (const auto& r : rs) EXPECT_NEAR(r.end_s, 5e-6 + kGiB / 25e9, 2 * kPs);
  EXPECT_NEAR(carried(*f, "gpu0.nic.out"), 2 * kGiB, 1e-3);
  EXPECT_NEAR(carried(*f, "gpu8.nic.in"), kGiB, 1e-3);
}

TEST(FabricEndpoints, NvlinkPeerFlowDoesNotSlowAHostLinkFlow) {
  // GPU 0 DMA-reads 1 GiB of host DRAM while receiving 1 GiB from GPU 1 over NVLink: they share
  // only GPU 0's HBM (54 + 450 GB/s << 3.08 TB/s), so each ends at its time alone:
  // host: 1 µs + 2^30 × data_dir / wire; NVLink: 2.8 µs + 2^30 / 450e9.
  const SystemSpec s = with_devices();
  const WireCost c = wire_cost(PcieProtocol::from(s.host_link, "l"), PcieOp::DmaRead);
  const double wire = 32e9 * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));
  std::vector<TransferRequest> rs = {req(0, Endpoint::HostDram, 0, kGiB),
                                     req(0, Endpoint::PeerGpu, 1, kGiB)};
  run(build_topology(s), rs);
  EXPECT_NEAR(rs[0].end_s, 1e-6 + kGiB * c.data_dir / wire, 2 * kPs);
  EXPECT_NEAR(rs[1].end_s, 2.8e-6 + kGiB / 450e9, 2 * kPs);
}

TEST(FabricEndpoints, CopyEngineCarriesTheEndpointAndItsLatency) {
  // A CopyEngine copy from CXL device 0 (blocking, through the TLM socket) and a started
  // 2-copy stream from CXL device 1 on GPU 4 (device 1 is on socket 1, GPU 4 too):
  //   copy:  dma_copy_overhead + 1.25 µs + 64 MiB / 30.118e9
  //   start: 2 × dma_copy_overhead + 1 × 1.25 µs (the CXL latency, not the DRAM one) + 1.25 µs
  //          + 64 MiB / 30.118e9
  const SystemSpec s = with_devices();
  const double ovh = *s.gpu.dma_copy_overhead_s;
  std::unique_ptr<FlowFabric> fabric;
  std::unique_ptr<CopyEngine> ce0, ce4;
  TransferRequest a = req(0, Endpoint::Cxl, 0, 64 * kMiB), b = req(4, Endpoint::Cxl, 1, 64 * kMiB);
  TransferGroup g;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    ce0 = std::make_unique<CopyEngine>("ce0", s.gpu, 0);
    ce4 = std::make_unique<CopyEngine>("ce4", s.gpu, 4);
    ce0->connect(*fabric);
    ce4->connect(*fabric);
    sc_core::sc_spawn([&] { ce0->copy(a); });
    sc_core::sc_spawn([&] { ce4->start(b, 2, g); });
  });
  fabric->check_conservation();
  EXPECT_NEAR(a.end_s, ovh + 1.25e-6 + 64 * kMiB / kCxlLink, 2 * kPs);
  EXPECT_NEAR(b.end_s, 2 * ovh + 2 * 1.25e-6 + 64 * kMiB / kCxlLink, 2 * kPs);
  EXPECT_NEAR(carried(*fabric, "cxl0.link.up"), 64 * kMiB, 1e-3);
  EXPECT_NEAR(carried(*fabric, "cxl1.link.up"), 64 * kMiB, 1e-3);
}

TEST(FabricEndpoints, ZeroCopyKernelFromCxlIsLoadBound) {
  // A copy kernel on all 132 SMs of an H100 (shape: one one-warp block of 8 B loads per SM, so
  // 1 load of 32 × 8 B per SM in flight: 33,792 B)
  // reading 64 MiB of CXL-backed pinned memory: each load waits 1 µs + 250 ns, so
  // 33,792 / 1.25 µs = 27.03 GB/s (below the 30.1 GB/s device link); load-bound, no separate
  // first-byte latency: t = 1000 blocks × copy_kernel_block_overhead + 64 MiB / 27.03e9.
  // (The same kernel over DRAM: 33.79 GB/s.) A second kernel copies 64 MiB of host DRAM on
  // GPU 4 by copy_blocks: 1000 × overhead + 64 MiB / 33.79e9.
  const SystemSpec s = with_devices();
  const double t0 = *s.gpu.copy_kernel_block_overhead_s;
  std::unique_ptr<FlowFabric> fabric;
  std::unique_ptr<CopyKernel> k0, k4;
  TransferRequest a = req(0, Endpoint::Cxl, 0, 64 * kMiB);
  a.dir = Direction::H2D;
  TransferGroup g;
  double b_end = 0;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    CopyKernelShape one_warp;
    one_warp.load_width = 8;
    one_warp.threads_per_block = 32;
    one_warp.blocks_per_sm = 1;
    k0 = std::make_unique<CopyKernel>("k0", s.gpu, one_warp);
    k4 = std::make_unique<CopyKernel>("k4", s.gpu, one_warp);
    k0->connect(*fabric);
    k4->connect(*fabric);
    sc_core::sc_spawn([&] { k0->start(a, 1000, g); });
    sc_core::sc_spawn([&] {
      k4->copy_blocks(4, Direction::H2D, 64 * kMiB / 1000, 1000);
      b_end = sc_core::sc_time_stamp().to_seconds();
    });
  });
  fabric->check_conservation();
  EXPECT_NEAR(a.end_s, 1000 * t0 + 64 * kMiB / (33792 / 1.25e-6), 2 * kPs);
  EXPECT_NEAR(b_end, 1000 * t0 + 64 * kMiB / (33792 / 1e-6), 2 * kPs);
  EXPECT_NEAR(carried(*fabric, "cxl0.link.up"), 64 * kMiB, 1e-3);
}

TEST(FabricEndpoints, PacketBackEndRejectsOtherEndpoints) {
  std::unique_ptr<LinkModule> link;
  TransferRequest r = req(0, Endpoint::Cxl, 0, 1024);
  TransferGroup g;
  try {
    run_simulation([&] {
      link = make_link_backend("packet", "link", with_devices());
      link->start(r, g);
    });
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("serving.link_fidelity"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'cxl'"), std::string::npos) << e.what();
  }
}

TEST(FabricEndpoints, MultiNodeBackEndIsFlowOnly) {
  std::unique_ptr<LinkModule> link;
  EXPECT_THROW(run_simulation([&] { link = make_link_backend("packet", "l", with_devices(), 2); }),
               InputError);
}

}  // namespace
}  // namespace fabric_endpoints_test
}  // namespace kappasim
