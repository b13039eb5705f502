// FlowFabric (SystemC): transfer times against hand formulas. One simulation per TEST (ctest
// runs each TEST in its own process).
#include <gtest/gtest.h>

#include <systemc>

#include <algorithm>
#include <memory>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/pcie_protocol.hpp"
#include "models/gpu/copy_engine.hpp"
#include "systems/flow_fabric.hpp"

namespace kappasim {
namespace flow_fabric_test {
namespace {

SystemSpec load(const std::string& name) {
  ConfigNode root = ConfigNode::make_map();
  root.set("system", ConfigNode::make_scalar(name));
  return read_preset_config<SystemSpec>(*root.find("system"), "system", "system");
}

// Wire bytes/s of one PCIe direction: lanes × rate × 128/130 / 8, less SKP (16 B per 370 × 16 B).
double pcie_wire(double gtps) {
  return gtps * 16 * 128.0 / 130.0 / 8 * (370.0 * 16 / (370.0 * 16 + 16));
}

constexpr double kPs = 1e-12;

TEST(FlowFabric, SingleTransferIsLatencyPlusBytesTimesCostOverCapacity) {
  const SystemSpec s = load("h100");
  const WireCost c = wire_cost(PcieProtocol::from(s.host_link, "l"), PcieOp::DmaRead);
  const double bytes = 1 << 20;
  std::unique_ptr<FlowFabric> fabric;
  TransferRequest r;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    sc_core::sc_spawn([&] {
      r.gpu = 3;
      r.bytes = bytes;
      fabric->transfer(r);
    });
  });
  // Alone, the link's down direction binds (DRAM 225 GB/s, tags 393 GB/s, HBM 3.35 TB/s).
  const double expect = 1e-6 + bytes * c.data_dir / pcie_wire(32e9);
  EXPECT_NEAR(r.end_s, expect, 2 * kPs);
  EXPECT_EQ(r.start_s, 0.0);
  EXPECT_EQ(fabric->transfers(), 1u);
  EXPECT_EQ(fabric->kernel_events(), 3u);  // latency wait, finish event, wake-up
  // Bytes sent == bytes received, on every resource of the path.
  const Topology& t = *fabric->topology();
  EXPECT_NEAR(fabric->network().carried(t.resource("gpu3.hbm")), bytes, 1e-6);
  EXPECT_NEAR(fabric->network().carried(t.resource("socket0.dram")), bytes, 1e-6);
  EXPECT_NEAR(fabric->network().carried(t.resource("hostlink3.down")), bytes * c.data_dir, 1e-3);
  EXPECT_NEAR(fabric->network().carried(t.resource("hostlink3.up")), bytes * c.reverse_dir, 1e-3);
  for (const auto& st : fabric->stats()) {
    if (st.name == "hostlink3.down") {
      EXPECT_NEAR(st.busy_s, expect - 1e-6, 2 * kPs);
    }
  }
}

TEST(FlowFabric, TwoA100GpusBehindOneSwitchUplinkEachGetHalf) {
  const SystemSpec s = load("a100");
  const WireCost c = wire_cost(PcieProtocol::from(s.host_link, "l"), PcieOp::DmaRead);
  const double bytes = 16 << 20;
  std::unique_ptr<FlowFabric> fabric;
  TransferRequest r0, r1, r2;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    for (auto* r : {&r0, &r1, &r2}) {
      sc_core::sc_spawn([&, r] {
        r->gpu = r == &r0 ? 0 : r == &r1 ? 1 : 2;
        r->bytes = bytes;
        fabric->transfer(*r);
      });
    }
  });
  const double wire = pcie_wire(16e9);
  // GPUs 0 and 1 share switch uplink 0: each moves at half its payload rate.
  const double shared = 1e-6 + bytes * c.data_dir / (wire / 2);
  EXPECT_NEAR(r0.end_s, shared, 2 * kPs);
  EXPECT_NEAR(r1.end_s, shared, 2 * kPs);
  // GPU 2 is alone behind uplink 1.
  EXPECT_NEAR(r2.end_s, 1e-6 + bytes * c.data_dir / wire, 2 * kPs);
}

TEST(FlowFabric, H2dAndD2hOnOneLinkSlowEachOtherOnlyByReverseCost) {
  const SystemSpec s = load("h100");
  const PcieProtocol p = PcieProtocol::from(s.host_link, "l");
  const WireCost rd = wire_cost(p, PcieOp::DmaRead), wr = wire_cost(p, PcieOp::DmaWrite);
  const double bytes = 16 << 20;
  std::unique_ptr<FlowFabric> fabric;
  TransferRequest h, d;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    sc_core::sc_spawn([&] {
      h.dir = Direction::H2D;
      h.bytes = bytes;
      fabric->transfer(h);  // joins after the 1 µs read round trip
    });
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_core::sc_time(0.5, sc_core::SC_US));
      d.dir = Direction::D2H;
      d.bytes = bytes;
      fabric->transfer(d);  // joins after half a round trip: both start at 1 µs
    });
  });
  // Equal payload rate x on both: down carries rd.data·x + wr.reverse·x, up carries
  // wr.data·x + rd.reverse·x; the fuller direction saturates first.
  const double wire = pcie_wire(32e9);
  const double x =
      std::min(wire / (rd.data_dir + wr.reverse_dir), wire / (wr.data_dir + rd.reverse_dir));
  EXPECT_LT(x, wire / rd.data_dir);
  EXPECT_NEAR(h.end_s, 1e-6 + bytes / x, 2 * kPs);
  EXPECT_NEAR(d.end_s, 1e-6 + bytes / x, 2 * kPs);
}

TEST(FlowFabric, CopyEngineStreamPaysOverheadAndLatencyPerCopy) {
  const SystemSpec s = load("h100");
  const WireCost c = wire_cost(PcieProtocol::from(s.host_link, "l"), PcieOp::DmaRead);
  const double bytes = 64 * 1024;
  std::unique_ptr<FlowFabric> fabric;
  std::unique_ptr<CopyEngine> ce;
  double end = 0;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    ce = std::make_unique<CopyEngine>("ce", s.gpu, 0);
    ce->out.bind(fabric->in);
    sc_core::sc_spawn([&] {
      for (int i = 0; i < 10; ++i) {
        TransferRequest r;
        r.bytes = bytes;
        ce->copy(r);
        end = r.end_s;
      }
    });
  });
  const double per = *s.gpu.dma_copy_overhead_s + 1e-6 + bytes * c.data_dir / pcie_wire(32e9);
  EXPECT_NEAR(end, 10 * per, 30 * kPs);
  EXPECT_EQ(ce->engines(), 3);
  EXPECT_EQ(ce->copies(), 10u);
}

TEST(FlowFabric, CopyEnginesAreFifoAndLimited) {
  // 4 copies at once on a GPU with 3 engines: the 4th waits for the first to finish.
  const SystemSpec s = load("h100");
  std::unique_ptr<FlowFabric> fabric;
  std::unique_ptr<CopyEngine> ce;
  std::vector<double> ends(4);
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    ce = std::make_unique<CopyEngine>("ce", s.gpu, 0);
    ce->out.bind(fabric->in);
    for (int i = 0; i < 4; ++i)
      sc_core::sc_spawn([&, i] {
        TransferRequest r;
        r.bytes = 1 << 20;
        ce->copy(r);
        ends[static_cast<std::size_t>(i)] = r.end_s;
      });
  });
  EXPECT_NEAR(ends[0], ends[2], 1e-12);  // three share the link and end together
  EXPECT_GT(ends[3], ends[0] + *s.gpu.dma_copy_overhead_s);
}

TEST(FlowFabric, CopyKernelMovesBlocksBackToBack) {
  const SystemSpec s = load("h100");
  const PcieProtocol p = PcieProtocol::from(s.host_link, "l");
  const WireCost c = wire_cost(p, PcieOp::SmRead);
  const double block = 64 * 1024;
  std::unique_ptr<FlowFabric> fabric;
  std::unique_ptr<CopyKernel> ck;
  SmPool pool(s.gpu.sm_count);
  int free_during = -1;
  double end = 0;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    CopyKernelShape one_warp;  // 8 B loads, one-warp blocks, one resident per SM
    one_warp.load_width = 8;
    one_warp.threads_per_block = 32;
    one_warp.blocks_per_sm = 1;
    ck = std::make_unique<CopyKernel>("ck", s.gpu, one_warp);
    ck->out.bind(fabric->in);
    sc_core::sc_spawn([&] {
      ck->copy_blocks(0, Direction::H2D, block, 10, &pool, 16);
      end = sc_core::sc_time_stamp().to_seconds();
    });
    sc_core::sc_spawn([&] {
      sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
      free_during = pool.free();
    });
  });
  // The blocks' fixed costs (serial), then all the bytes at the slowest of the link, the
  // read-tag limit (768 tags × 64 B per 1 µs round trip) and the kernel's own loads in flight:
  // 16 SMs × 1 warp × 1 load × 32 threads × 8 B = 4096 B per 1 µs = 4.096 GB/s (Little's law on
  // the kernel's shape: one one-warp block of 8 B loads per SM). Load-bound, so no separate
  // first round trip: every 4096 B window takes one.
  const double rate = std::min({pcie_wire(32e9) / c.data_dir, 768 * 64 / 1e-6, 4.096e9});
  EXPECT_DOUBLE_EQ(rate, 4.096e9);
  const double expect = 10 * *s.gpu.copy_kernel_block_overhead_s + 10 * block / rate;
  EXPECT_NEAR(end, expect, 30 * kPs);
  EXPECT_EQ(free_during, s.gpu.sm_count - 16);
  EXPECT_EQ(pool.free(), s.gpu.sm_count);
  EXPECT_EQ(ck->blocks(), 10u);
}

}  // namespace
}  // namespace flow_fabric_test
}  // namespace kappasim

namespace kappasim {
namespace flow_fabric_test {
namespace {

// n copies on one stream, aggregated, take what n single copies take when alone.
TEST(FlowFabric, CopyManyEqualsBackToBackCopiesWhenAlone) {
  const SystemSpec s = load("h100");
  std::unique_ptr<FlowFabric> fabric;
  std::unique_ptr<CopyEngine> one, many;
  double t_one = 0, t_many = 0;
  const int n = 50;
  const double bytes = 256 * 1024;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    one = std::make_unique<CopyEngine>("one", s.gpu, 0);
    many = std::make_unique<CopyEngine>("many", s.gpu, 0);
    one->out.bind(fabric->in);
    many->out.bind(fabric->in);
    sc_core::sc_spawn([&] {
      for (int i = 0; i < n; ++i) {
        TransferRequest r;
        r.bytes = bytes;
        one->copy(r);
      }
      t_one = sc_core::sc_time_stamp().to_seconds();
      TransferRequest r;
      r.bytes = n * bytes;
      many->copy_many(r, n, fabric->topology()->latency(0, Direction::H2D, CopyPath::Dma, true));
      t_many = sc_core::sc_time_stamp().to_seconds() - t_one;
    });
  });
  EXPECT_NEAR(t_many, t_one, 1e-9);
  EXPECT_EQ(many->copies(), static_cast<std::uint64_t>(n));
}

}  // namespace
}  // namespace flow_fabric_test
}  // namespace kappasim

namespace kappasim {
namespace flow_fabric_test {
namespace {

// The conservation invariant is not vacuous: a transfer cut off by the end of the simulation
// is reported; a finished run passes.
TEST(FlowFabric, ConservationCheckCatchesATransferThatNeverFinished) {
  const SystemSpec s = load("h100");
  std::unique_ptr<FlowFabric> fabric;
  std::vector<TransferRequest> rs(2);
  FlowFabric::Group g;
  run_simulation(
      [&] {
        fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
        rs[0].gpu = 0;
        rs[0].bytes = 1e6;  // ≈ 20 µs: finishes
        rs[1].gpu = 1;
        rs[1].bytes = 1e9;  // ≈ 20 ms: cut off at 1 ms
        sc_core::sc_spawn([&] { fabric->start_group(rs, g); });
      },
      1e-3);
  try {
    fabric->check_conservation();
    FAIL() << "an unfinished transfer passed the conservation check";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("never finished"), std::string::npos) << e.what();
  }
}

TEST(FlowFabric, ConservationCheckPassesWhenEveryTransferFinished) {
  const SystemSpec s = load("a100");  // shared switch uplinks: several resources per path
  std::unique_ptr<FlowFabric> fabric;
  std::vector<TransferRequest> rs(4);
  FlowFabric::Group g;
  run_simulation([&] {
    fabric = std::make_unique<FlowFabric>("fabric", build_topology(s));
    for (int i = 0; i < 4; ++i) {
      rs[static_cast<std::size_t>(i)].gpu = i;
      rs[static_cast<std::size_t>(i)].bytes = 3e6 * (i + 1);
      rs[static_cast<std::size_t>(i)].dir = i % 2 ? Direction::D2H : Direction::H2D;
    }
    sc_core::sc_spawn([&] { fabric->start_group(rs, g); });
  });
  EXPECT_TRUE(g.finished);
  EXPECT_NO_THROW(fabric->check_conservation());
}

}  // namespace
}  // namespace flow_fabric_test
}  // namespace kappasim
