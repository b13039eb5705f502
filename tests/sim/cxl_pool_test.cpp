// A pooled CXL tier behind a switch, shared by several hosts (issue 25; memory/cxl_pool_spec,
// serving/cxl_pool_share): the pool's arithmetic against the preset's sources, the device
// bandwidth divided among the hosts loading at once (two flow fabrics, one per node, in one
// simulation), the switch's latency, a prefix stored by one node of a cluster found in the pool
// by another, and the bad inputs. Hand formulas in the comments; the devices and switch of the
// fabric tests are this file's round figures, not a preset's. One simulation per TEST.
#include <gtest/gtest.h>

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/sim_runner.hpp"
#include "models/analytic/tier_kappa.hpp"
#include "serving/cluster.hpp"
#include "serving/cxl_pool_share.hpp"
#include "systems/flow_fabric.hpp"
#include "tests/sim/serving_test_util.hpp"
#include "tests/unit/preset_util.hpp"

namespace kappasim {
namespace cxl_pool_test {
namespace {

using namespace kappasim::testing;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kPs = 1e-12;

// ---- the preset: every figure from its sources (presets/cxl-pools/h3-falcon-c5022-cz120.yaml)

CxlPoolSpec preset_pool(const std::string& name) {
  ConfigNode root = ConfigNode::make_map();
  root.set("cxl_pool", ConfigNode::make_scalar(name));
  return read_preset_config<CxlPoolSpec>(*root.find("cxl_pool"), "cxl-pool", "cxl_pool");
}

TEST(CxlPool, FalconPresetIsItsSourcesArithmetic) {
  const CxlPoolSpec p = preset_pool("h3-falcon-c5022-cz120");
  // A host's x16 Gen5 port: 32 GT/s × 16 / 8 × 128/130 × 64/68 = 59.31 GB/s per direction.
  EXPECT_NEAR(p.port_Bps(16), 32e9 * 16 / 8 * 128.0 / 130 * 64 / 68, 1);
  EXPECT_NEAR(p.port_Bps(16), 59.31e9, 0.01e9);
  // 22 CZ120s, each min(its x8 link 29.65 GB/s, media 36 GB/s) = 29.65: 652.4 GB/s together.
  EXPECT_NEAR(p.read_Bps(), 22 * 32e9 * 8 / 8 * 128.0 / 130 * 64 / 68, 1);
  EXPECT_NEAR(p.capacity_bytes(), 22 * 256e9, 1);
  // Load latency: the device's 150 ns + the switch twice (2 × 70 ns); a write crosses it once.
  EXPECT_NEAR(p.read_latency_s(), 290e-9, 1e-15);
  EXPECT_NEAR(p.write_latency_s(), 220e-9, 1e-15);
  // The CXL 3.x variant: 64 GT/s × 16 / 8 × 240/256 = 120 GB/s per host port.
  EXPECT_NEAR(preset_pool("cxl3-gen6-pool-cz120").port_Bps(16), 120e9, 1);
}

TEST(CxlPool, PortSharesAreMaxMinFairCappedByEachHostsDemand) {
  // Two hosts wanting 80 of a pool of 100: 50 each. One wanting 30: it gets 30, the other the
  // remaining 70. One alone: min(its demand, the pool).
  EXPECT_EQ(pool_port_shares(100, {80, 80}), (std::vector<double>{50, 50}));
  EXPECT_EQ(pool_port_shares(100, {80, 30}), (std::vector<double>{70, 30}));
  EXPECT_EQ(pool_port_shares(100, {80}), (std::vector<double>{80}));
  EXPECT_EQ(pool_port_shares(50, {80}), (std::vector<double>{50}));
  EXPECT_EQ(pool_port_shares(90, {60, 60, 20}), (std::vector<double>{35, 35, 20}));
}

// ---- the mechanism on flow fabrics ----------------------------------------------------------

// The device: CXL Gen5 x8 with no line code, 32 GT/s × 8 / 8 × 64/68 = 30.118 GB/s, no media
// figure (the link is its bandwidth), 250 ns. The switch: x16 host ports at 32 GT/s, 68 B flits,
// no line code: 60.235 GB/s per host; 100 ns per traversal.
constexpr double kDevice = 32e9 * 64.0 / 68.0;
constexpr double kPort = 2 * kDevice;
// A load's first byte: the host link's read round trip (pcie5: 1 µs) + the device's 250 ns + the
// switch twice (200 ns).
constexpr double kReadLat = 1e-6 + 250e-9 + 200e-9;

SystemSpec pooled(int devices) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar("h100"));
  SystemSpec s = read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
  CxlPoolSpec& p = s.cxl_pool;
  p.name = "hand-pool";
  p.device.name = "hand-cxl";
  p.device.capacity_bytes = 256e9;
  p.device.rate_per_lane_Tps = 32e9;
  p.device.lanes = 8;
  p.device.flit_bytes = 68;
  p.device.flit_data_bytes = 64;
  p.device.added_latency_s = 250e-9;
  p.devices = devices;
  p.host_ports = 4;
  p.port_lanes = 16;
  p.switch_lanes = 256;
  p.rate_per_lane_Tps = 32e9;
  p.flit_bytes = 68;
  p.flit_data_bytes = 64;
  p.switch_latency_s = 100e-9;
  s.cxl_pool_lanes = 16;
  s.validate("system");
  return s;
}

TransferRequest pool_read(int gpu, double bytes, Direction dir = Direction::H2D) {
  TransferRequest r;
  r.gpu = gpu;
  r.dir = dir;
  r.endpoint = Endpoint::Cxl;
  r.endpoint_index = 0;
  r.bytes = bytes;
  return r;
}

// Two nodes' fabrics sharing one pool; node n runs the transfers reqs[n] at t = 0.
void run_hosts(int devices, std::vector<std::vector<TransferRequest>>& reqs) {
  std::vector<std::unique_ptr<FlowFabric>> fabrics;
  CxlPoolShare share(pooled(devices).cxl_pool, 1e12);
  run_simulation([&] {
    for (std::size_t n = 0; n < reqs.size(); ++n) {
      fabrics.push_back(std::make_unique<FlowFabric>(("node" + std::to_string(n)).c_str(),
                                                     build_topology(pooled(devices))));
      share.attach(*fabrics.back(), "node" + std::to_string(n));
      for (auto& r : reqs[n]) sc_core::sc_spawn([f = fabrics.back().get(), &r] { f->transfer(r); });
    }
  });
  for (const auto& f : fabrics) f->check_conservation();
}

TEST(CxlPool, OneHostAloneGetsThePoolsDevicesWhenTheyAreBelowItsLink) {
  // One device (30.118 GB/s) below the host's port (60.235): the device binds.
  std::vector<std::vector<TransferRequest>> one = {{pool_read(0, kGiB)}};
  run_hosts(1, one);
  EXPECT_NEAR(one[0][0].end_s, kReadLat + kGiB / kDevice, 4 * kPs);
}

TEST(CxlPool, OneHostAloneGetsItsLinkWhenThePoolsDevicesAreAbove) {
  // Three devices (90.35 GB/s) above the port: two GPUs of the host split its port, 30.118 each.
  std::vector<std::vector<TransferRequest>> port = {{pool_read(0, kGiB), pool_read(1, kGiB)}};
  run_hosts(3, port);
  for (const auto& r : port[0]) EXPECT_NEAR(r.end_s, kReadLat + kGiB / (kPort / 2), 4 * kPs);
}

TEST(CxlPool, TwoHostsLoadingAtOnceEachGetHalfThePoolWhenItBinds) {
  // One device: each host 30.118 / 2 = 15.06 GB/s, so 1 GiB each takes twice as long.
  std::vector<std::vector<TransferRequest>> two = {{pool_read(0, kGiB)}, {pool_read(0, kGiB)}};
  run_hosts(1, two);
  for (const auto& h : two) EXPECT_NEAR(h[0].end_s, kReadLat + 2 * kGiB / kDevice, 4 * kPs);
}

TEST(CxlPool, ThreeDevicesSplitBetweenTwoHostsBelowTheirPorts) {
  // 90.353 GB/s for two hosts whose ports would take 60.235 each: 45.18 per host, 22.59 per GPU
  // (two GPUs each): 1 GiB takes 2^30 / (3 × 30.118e9 / 4).
  std::vector<std::vector<TransferRequest>> two = {{pool_read(0, kGiB), pool_read(1, kGiB)},
                                                   {pool_read(0, kGiB), pool_read(1, kGiB)}};
  run_hosts(3, two);
  for (const auto& h : two)
    for (const auto& r : h) EXPECT_NEAR(r.end_s, kReadLat + kGiB / (3 * kDevice / 4), 4 * kPs);
}

TEST(CxlPool, AHostThatStopsLoadingGivesItsShareBack) {
  // One device. Host 0 reads 2 GiB, host 1 reads 1 GiB, both at 15.06 GB/s until host 1 ends
  // at 2 GiB / 30.118 GB/s; host 0 then has 1 GiB left at the whole 30.118: it ends at
  // 3 GiB / 30.118 GB/s (after the latency).
  std::vector<std::vector<TransferRequest>> two = {{pool_read(0, 2 * kGiB)}, {pool_read(0, kGiB)}};
  run_hosts(1, two);
  EXPECT_NEAR(two[1][0].end_s, kReadLat + 2 * kGiB / kDevice, 4 * kPs);
  EXPECT_NEAR(two[0][0].end_s, kReadLat + 3 * kGiB / kDevice, 8 * kPs);
}

TEST(CxlPool, LatencyIsTheDevicesPlusTheSwitchTraversals) {
  // Empty transfers end at their latency: a read the round trip (1 µs) + 250 ns + 2 × 100 ns;
  // a posted write half the round trip + 250 ns + one traversal.
  std::vector<std::vector<TransferRequest>> rw = {
      {pool_read(0, 0), pool_read(1, 0, Direction::D2H)}};
  run_hosts(1, rw);
  EXPECT_NEAR(rw[0][0].end_s, 1.45e-6, kPs);
  EXPECT_NEAR(rw[0][1].end_s, 0.5e-6 + 250e-9 + 100e-9, kPs);
}

TEST(CxlPool, AnalyticTierIsTheNodeAloneOnItsPortOrThePoolsDevices) {
  // h100: 8 GPUs. One device (30.118 GB/s) below the port (60.235): 30.118 / 8 = 3.765 GB/s per
  // GPU, the devices bind; with three (90.35) the port does: 60.235 / 8 = 7.53 GB/s.
  const double host = 50e9;  // any host-link figure above both
  const auto one = tier_loads(pooled(1), host, 1e6);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1].tier, "cxl");
  EXPECT_NEAR(one[1].load_Bps, kDevice / 8, 1);
  EXPECT_EQ(one[1].bound, "cxl pool devices");
  EXPECT_NEAR(one[1].capacity_bytes, 256e9, 1);
  const auto three = tier_loads(pooled(3), host, 1e6);
  EXPECT_NEAR(three[1].load_Bps, kPort / 8, 1);
  EXPECT_EQ(three[1].bound, "cxl pool port");
}

// ---- the pooled KV level in a cluster ---------------------------------------------------------

// Two Llama-3.1-8B nodes (one H100 each, TP 1), round robin, a DRAM tier of 4 chunks and a
// 256 MiB CXL level (8 chunks of 256 × 131,072 B = 32 MiB), written through. `cxl`: the nodes'
// CXL tier, a shared pool or an expander each.
std::string cluster_yaml(const std::string& cxl) {
  return "cluster:\n"
         "  router: round_robin\n"
         "  nodes:\n"
         "    - name: a\n"
         "      count: 2\n"
         "      system: {preset: h100, " +
         cxl +
         "}\n"
         "      serving: {" KAPPASIM_TEST_STACK
         "tp: 1, load_path: kernel, store: blocking, warm_tier: false,\n"
         "        tier_capacity: 134217728 B,\n"
         "        tiers: {cxl_capacity: 268435456 B, write: write_through}}\n"
         "model: llama-3.1-8b\n"
         "workload: {type: narrativeqa}\n";
}
const char* const kPool =
    "cxl_pool_lanes: 16, cxl_pool: {devices: 2, host_ports: 4, port_lanes: 16, "
    "switch_lanes: 256, rate_per_lane: 32 GT/s, flit_bytes: 68 B, flit_data_bytes: 64 B, "
    "switch_latency: 100 ns, device: {capacity: 256 GB, rate_per_lane: 32 GT/s, lanes: 8, "
    "flit_bytes: 68 B, flit_data_bytes: 64 B, added_latency: 250 ns}}";
const char* const kExpander =
    "cxl_devices: 1, cxl: {capacity: 256 GB, rate_per_lane: 32 GT/s, lanes: 8, "
    "flit_bytes: 68 B, flit_data_bytes: 64 B, added_latency: 250 ns}";

ClusterRunSpec cluster(const std::string& cxl) {
  return read_config<ClusterRunSpec>(parse_yaml(cluster_yaml(cxl), "<test>"), "");
}

Request doc(std::uint64_t id, double at) {
  Request r;
  r.id = id;
  r.arrival_s = at;
  r.sequence_id = 7;  // both requests read document 7
  r.prefix_tokens = 1024;
  r.new_tokens = 128;
  r.workload = "test";
  return r;
}

// Request 1 on node 0 (nothing cached: it stores its 4 whole chunks, 1152 / 256 = 4.5, into its
// DRAM and the CXL level); request 2, one second later, same document, on node 1.
std::vector<RequestRecord> serve_pair(const ClusterRunSpec& spec) {
  VectorSource src({doc(1, 0), doc(2, 1.0)});
  std::vector<RequestRecord> recs(2);
  ClusterSinks sinks;
  sinks.on_finish = [&](const RequestRecord& r, std::size_t node) {
    EXPECT_EQ(node, r.id - 1);  // round robin: request 1 on node 0, 2 on node 1
    recs.at(r.id - 1) = r;
  };
  run_cluster(spec, src, sinks);
  return recs;
}

TEST(CxlPool, APrefixStoredByOneNodeIsAHitForAnother) {
  // The pool is one level for both nodes: request 2 finds the 4 chunks node 0 wrote, 1024
  // tokens, and loads them from the pool: 1024 × 131,072 B.
  const std::vector<RequestRecord> r = serve_pair(cluster(kPool));
  EXPECT_EQ(r[0].cached_tokens, 0);
  EXPECT_EQ(r[1].cached_tokens, 1024);
  EXPECT_DOUBLE_EQ(r[1].bytes_loaded, 1024 * kBkv8b);
}

TEST(CxlPool, PerNodeExpandersDoNotShareAPrefix) {
  // The same cluster with an expander per node: node 1's tiers never saw document 7.
  const std::vector<RequestRecord> r = serve_pair(cluster(kExpander));
  EXPECT_EQ(r[1].cached_tokens, 0);
}

// ---- bad input ------------------------------------------------------------------------------

using test::error_of;

TEST(CxlPool, BadPoolsNameTheKey) {
  SystemSpec s = pooled(2);
  s.cxl_pool_lanes = 32;  // wider than the switch's x16 host ports
  EXPECT_NE(error_of([&] { s.validate("system"); }).find("system.cxl_pool_lanes: x32 is wider"),
            std::string::npos);
  s = pooled(2);
  s.cxl_lanes = 8;  // the host gives CXL only 8 lanes
  EXPECT_NE(error_of([&] { s.validate("system"); })
                .find("system.cxl_pool_lanes: an x16 link to the CXL pool needs more lanes than "
                      "the host's 8"),
            std::string::npos);
  s = pooled(2);
  s.cxl_pool.devices = 30;  // 4 × 16 + 30 × 8 = 304 lanes on a 256-lane switch
  EXPECT_NE(error_of([&] { s.validate("system"); }).find("need 304 lanes"), std::string::npos);
  s = pooled(2);
  s.cxl_devices = 1;
  s.cxl = s.cxl_pool.device;
  EXPECT_NE(error_of([&] { s.validate("system"); }).find("system.cxl_pool: a system has one CXL"),
            std::string::npos);
  // 2 devices × 256 GB hold 512 GB; 600 GB of tier is more.
  TiersSpec t;
  t.cxl_capacity_bytes = 600e9;
  EXPECT_NE(error_of([&] {
              t.validate_against(pooled(2), "serving.tiers");
            }).find("serving.tiers.cxl_capacity: 600 GB exceeds the system's CXL pool's memory"),
            std::string::npos);
}

TEST(CxlPool, ClusterNodesMustFitTheSwitchAndShareOnePool) {
  std::string five = cluster_yaml(kPool);
  five.replace(five.find("count: 2"), 8, "count: 5");  // 5 hosts on 4 host ports
  std::string msg = error_of([&] { read_config<ClusterRunSpec>(parse_yaml(five, "<test>"), ""); });
  EXPECT_NE(msg.find("cluster.nodes: 5 hosts share CXL pool"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 host ports"), std::string::npos) << msg;
  // A second group naming another pool.
  std::string two = cluster_yaml(kPool);
  const std::string other = std::string("    - {name: b, system: {preset: h100, ") + kPool + "}}\n";
  two.insert(two.find("model:"), other);
  two.replace(two.rfind("cxl_pool: {"), 11, "cxl_pool: {name: other, ");
  msg = error_of([&] { read_config<ClusterRunSpec>(parse_yaml(two, "<test>"), ""); });
  EXPECT_NE(msg.find("cluster.nodes.1.system.cxl_pool: the nodes of a cluster share one CXL pool"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace cxl_pool_test
}  // namespace kappasim
