// Packet-level PCIe model against hand-computed expectations (one simulation per TEST; ctest
// runs each TEST in its own process). Literals of presets/links/pcie5.yaml used by hand:
//   raw 16 · 32 GT/s · 128/130 / 8 = 63.0154 GB/s; SKP: 370 blocks of 16 B per 16 B SKP OS
//   -> wire W = 63.0154 · 370/371 = 62.8455 GB/s per direction;
//   MRRS 512, RCB 128, MPS 256, SM 64, 3-DW 20 B, 4-DW 24 B, 8 B DLLP per 4 TLPs, RTT 1 us,
//   768 tags.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <systemc>
#include <tlm>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/sim_runner.hpp"
#include "interconnects/link_spec.hpp"
#include "interconnects/pcie_packet.hpp"

namespace kappasim {
namespace pcie_packet_test {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kRaw = 16 * 32e9 * 128.0 / 130.0 / 8;
constexpr double kW = kRaw * 370.0 / 371.0;  // wire bytes/s per direction
constexpr double kRtt = 1e-6;
// Wire bytes per payload byte (see pcie_protocol.cpp comments), by hand:
constexpr double kDmaReadData = 1 + 4 * 20.0 / 512 + 2.0 / 512;  // 1.16015625
constexpr double kDmaReadRev = 24.0 / 512 + 4 * 2.0 / 512;       // 0.0625
constexpr double kSmReadData = 1 + 20.0 / 64 + 2.0 / 64;         // 1.34375
constexpr double kDmaWriteData = 1 + 24.0 / 256;                 // 1.09375
constexpr double kDmaWriteRev = 2.0 / 256;                       // 0.0078125

PcieProtocol pcie5() {
  return PcieProtocol::from(
      read_preset_config<LinkSpec>(ConfigNode::make_scalar("pcie5"), "link", "link"), "link");
}

TransferRequest req(Direction dir, CopyPath path, double bytes) {
  TransferRequest r;
  r.dir = dir;
  r.path = path;
  r.bytes = bytes;
  return r;
}

double dur(const TransferRequest& r) { return r.end_s - r.start_s; }

// A TLM initiator: the LinkModule's target socket must be bound, and one path of the tests
// goes through b_transport as a copy engine would.
struct Driver : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Driver> out;
  explicit Driver(const sc_core::sc_module_name& n) : sc_core::sc_module(n), out("out") {}
  void through_socket(TransferRequest& r) {
    TransferExtension ext;
    ext.request = r;
    tlm::tlm_generic_payload gp;
    gp.set_extension(&ext);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    out->b_transport(gp, delay);
    gp.clear_extension(&ext);
    r = ext.request;
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
  }
};

struct Bench {
  std::unique_ptr<PciePacketLink> link;
  std::unique_ptr<Driver> driver;
  void build(const PciePacketOptions& opts = {}) {
    link = std::make_unique<PciePacketLink>("pcie", pcie5(), opts);
    driver = std::make_unique<Driver>("driver");
    driver->out.bind(link->in);
  }
};

// Runs the given transfers, each from its own SC_THREAD starting at t = 0.
Bench run_concurrent(std::vector<TransferRequest*> rs, const PciePacketOptions& opts = {}) {
  Bench b;
  run_simulation([&] {
    b.build(opts);
    PciePacketLink* l = b.link.get();
    for (TransferRequest* r : rs) sc_core::sc_spawn([l, r] { l->transfer(*r); });
  });
  return b;
}

TEST(PciePacket, OneMiBDmaReadIsLatencyPlusWireTime) {
  TransferRequest r = req(Direction::H2D, CopyPath::Dma, kMiB);
  Bench b;
  run_simulation([&] {
    b.build();
    Driver* d = b.driver.get();
    sc_core::sc_spawn([d, &r] { d->through_socket(r); });  // via TLM b_transport
  });
  const PciePacketLink* link = b.link.get();
  // First MRd (24 B) + 1 us round trip + every completion and downstream ACK on the wire.
  const double expected = 24.0 / kW + kRtt + kMiB * kDmaReadData / kW;  // ≈ 20.36 us
  EXPECT_NEAR(dur(r) / expected, 1.0, 0.01) << dur(r) << " vs " << expected;
  EXPECT_DOUBLE_EQ(r.start_s, 0.0);
  // TLP counts and wire bytes by hand: 2048 MRd, 8192 CplD, ACKs one per 4 TLPs.
  const PciePacketStats& s = link->stats();
  EXPECT_EQ(s.up.mrd_tlps, 2048u);
  EXPECT_EQ(s.down.cpl_tlps, 8192u);
  EXPECT_EQ(s.down.dllps, 512u);  // ACKs for 2048 MRd
  EXPECT_EQ(s.up.dllps, 2048u);   // ACKs for 8192 CplD
  EXPECT_DOUBLE_EQ(s.down.payload_bytes, kMiB);
  EXPECT_DOUBLE_EQ(s.down.wire_bytes, 8192 * (128 + 20) + 512 * 8);
  EXPECT_DOUBLE_EQ(s.up.wire_bytes, 2048 * 24 + 2048 * 8);
}

TEST(PciePacket, LongDmaReadReachesPayloadBandwidth) {
  TransferRequest r = req(Direction::H2D, CopyPath::Dma, 16 * kMiB);
  run_concurrent({&r});
  const double bw = 16 * kMiB / dur(r);
  EXPECT_NEAR(bw / (kW / kDmaReadData), 1.0, 0.01) << bw;  // 54.17 GB/s
  EXPECT_NEAR(bw / payload_bandwidth(pcie5(), PcieOp::DmaRead), 1.0, 0.01);
}

TEST(PciePacket, LongDmaWriteReachesPayloadBandwidth) {
  TransferRequest r = req(Direction::D2H, CopyPath::Dma, 16 * kMiB);
  run_concurrent({&r});
  const double bw = 16 * kMiB / dur(r);
  EXPECT_NEAR(bw / (kW / kDmaWriteData), 1.0, 0.01) << bw;  // 57.46 GB/s
}

TEST(PciePacket, TwoConcurrentReadsShareEqually) {
  TransferRequest a = req(Direction::H2D, CopyPath::Dma, 8 * kMiB);
  TransferRequest b = req(Direction::H2D, CopyPath::Dma, 8 * kMiB);
  run_concurrent({&a, &b});
  // Round robin: both finish together after 16 MiB at the solo rate (+ one round trip).
  const double expected = kRtt + 16 * kMiB * kDmaReadData / kW;
  EXPECT_NEAR(dur(a) / expected, 1.0, 0.01);
  EXPECT_NEAR(dur(b) / expected, 1.0, 0.01);
  const double half = kW / kDmaReadData / 2;
  EXPECT_NEAR(8 * kMiB / dur(a) / half, 1.0, 0.01);
  EXPECT_NEAR(8 * kMiB / dur(b) / half, 1.0, 0.01);
}

TEST(PciePacket, ReadAndWriteAtOncePayOnlyReverseOverhead) {
  const double S = 16 * kMiB;
  TransferRequest h2d = req(Direction::H2D, CopyPath::Dma, S);
  TransferRequest d2h = req(Direction::D2H, CopyPath::Dma, S);
  run_concurrent({&h2d, &d2h});
  // While both run, each wire is full:
  //   down: x·1.16015625 + y·0.0078125 = W      up: y·1.09375 + x·0.0625 = W
  const double a = kDmaReadData, rA = kDmaReadRev, d = kDmaWriteData, rD = kDmaWriteRev;
  const double det = a * d - rD * rA;
  const double x = kW * (d - rD) / det;  // ≈ 53.80 GB/s (solo 54.17)
  const double y = kW * (a - rA) / det;  // ≈ 54.38 GB/s (solo 57.46)
  const double x0 = kW / a, y0 = kW / d;
  // The first round trip the write runs alone; the write ends first, then the read runs solo.
  const double t_d2h = kRtt + (S - y0 * kRtt) / y;
  const double t_h2d = t_d2h + (S - x * (t_d2h - kRtt)) / x0;
  EXPECT_NEAR(dur(d2h) / t_d2h, 1.0, 0.01) << dur(d2h) << " vs " << t_d2h;
  EXPECT_NEAR(dur(h2d) / t_h2d, 1.0, 0.01) << dur(h2d) << " vs " << t_h2d;
  // Each keeps > 90% of its solo bandwidth.
  EXPECT_GT(S / dur(h2d), 0.9 * x0);
  EXPECT_GT(S / dur(d2h), 0.9 * y0);
}

TEST(PciePacket, SmReadSlowerByCompletionSize) {
  TransferRequest dma = req(Direction::H2D, CopyPath::Dma, 8 * kMiB);
  TransferRequest sm = req(Direction::H2D, CopyPath::Kernel, 8 * kMiB);
  Bench b;
  run_simulation([&] {
    b.build();
    PciePacketLink* l = b.link.get();
    sc_core::sc_spawn([l, &dma, &sm] {
      l->transfer(dma);
      l->transfer(sm);
    });
  });
  EXPECT_NEAR(sm.start_s, dma.end_s, 1e-12);
  // Beyond the round trip, time scales with wire bytes per payload byte:
  // 1.34375 / 1.16015625 = 1.158 (64 B completions + 20 B vs 128 B + 20 B).
  const double ratio = (dur(sm) - kRtt) / (dur(dma) - kRtt);
  EXPECT_NEAR(ratio / (kSmReadData / kDmaReadData), 1.0, 0.01) << ratio;
  EXPECT_NEAR(8 * kMiB / dur(sm) / (kW / kSmReadData), 1.0, 0.01);  // 46.77 GB/s
  EXPECT_EQ(b.link->stats().up.mrd_tlps, 16384u + 131072u);         // 8 MiB / 512 + 8 MiB / 64
}

TEST(PciePacket, PostedCreditLimitsWrites) {
  // 4 KiB of credit, returned 1 us after each MWr arrives: 16 MWr of 256 B per
  // (1 us + one MWr serialisation) -> 4096 / (1 us + 280 B / W) ≈ 4.078 GB/s.
  PciePacketOptions o;
  o.posted_credit_bytes = 4096;
  TransferRequest r = req(Direction::D2H, CopyPath::Dma, kMiB);
  run_concurrent({&r}, o);
  const double expected = 4096 / (kRtt + 280 / kW);
  EXPECT_NEAR(kMiB / dur(r) / expected, 1.0, 0.01) << kMiB / dur(r);
}

TEST(PciePacket, EventsPerMiB) {
  TransferRequest r = req(Direction::H2D, CopyPath::Dma, 4 * kMiB);
  Bench b = run_concurrent({&r});
  const PciePacketStats& s = b.link->stats();
  const double per_mib = static_cast<double>(s.down.activations + s.up.activations) / 4;
  // Packets per MiB by hand: 8192 CplD + 2048 MRd + 512 + 2048 ACKs = 12,800; each costs one
  // activation of its direction's thread, plus wake-ups of the idle upstream thread.
  const double packets =
      static_cast<double>(s.down.cpl_tlps + s.down.dllps + s.up.mrd_tlps + s.up.dllps) / 4;
  EXPECT_DOUBLE_EQ(packets, 12800);
  EXPECT_GE(per_mib, packets);
  EXPECT_LT(per_mib, 2 * packets);
  RecordProperty("activations_per_MiB", std::to_string(per_mib));
  std::printf("packet model: %.0f thread activations per MiB (DMA read)\n", per_mib);
}

TEST(PciePacket, ZeroBytesReturnsAtOnce) {
  TransferRequest r = req(Direction::H2D, CopyPath::Dma, 0);
  run_concurrent({&r});
  EXPECT_EQ(r.start_s, r.end_s);
}

}  // namespace
}  // namespace pcie_packet_test
}  // namespace kappasim
