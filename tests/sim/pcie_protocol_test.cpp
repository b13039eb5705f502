// PCIe protocol arithmetic against hand values. Every expectation below is computed here from
// the literals of presets/links/pcieN.yaml (repeated in the comments), never from the code
// under test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "interconnects/link_spec.hpp"
#include "interconnects/pcie_protocol.hpp"

namespace kappasim {
namespace pcie_protocol_test {
namespace {

PcieProtocol preset(const std::string& name) {
  const LinkSpec link = read_preset_config<LinkSpec>(ConfigNode::make_scalar(name), "link", "link");
  return PcieProtocol::from(link, "link");
}

// Hand values per generation. Literals from the presets:
//   Gen3-5: MPS 256, RCB 128, MRRS 512, SM reads 64, 3-DW 20 B, 4-DW 24 B, DLLP 8 B per 4 TLPs
//           (2 B of ACK per TLP), SKP 16 B per 370 blocks of 16 B; SM writes 128 B on Gen4/5
//           (sm_write_size), 64 B (sm_read_size) on Gen3 and Gen6.
//   Gen6 (flit): same sizes, but 3-DW 12 B and 4-DW 16 B (header only).
//   raw (x16) = 16 · rate · data/total / 8.
struct Hand {
  const char* name;
  double raw;  // B/s
  double dma_read_data, dma_read_rev;
  double sm_read_data, sm_read_rev;
  double dma_write_data, dma_write_rev;
  double sm_write_data, sm_write_rev;
};

constexpr double kUsable = 370.0 * 16.0 / (370.0 * 16.0 + 16.0);  // = 370/371

// Reads: data = 1 + ncpl·hdr3/req + 2/req; rev = hdr4/req + ncpl·2/req
// Writes: data = 1 + hdr4/pl; rev = 2/pl
const Hand kHand[] = {
    {"pcie3", 16 * 8e9 * 128.0 / 130.0 / 8, 1 + 4 * 20.0 / 512 + 2.0 / 512,
     24.0 / 512 + 4 * 2.0 / 512,                      // DmaRead 1.16015625, 0.0625
     1 + 20.0 / 64 + 2.0 / 64, 24.0 / 64 + 2.0 / 64,  // SmRead 1.34375, 0.40625
     1 + 24.0 / 256, 2.0 / 256,                       // DmaWrite 1.09375
     1 + 24.0 / 64, 2.0 / 64},                        // SmWrite 1.375
    {"pcie4", 16 * 16e9 * 128.0 / 130.0 / 8, 1 + 4 * 20.0 / 512 + 2.0 / 512,
     24.0 / 512 + 4 * 2.0 / 512, 1 + 20.0 / 64 + 2.0 / 64, 24.0 / 64 + 2.0 / 64, 1 + 24.0 / 256,
     2.0 / 256, 1 + 24.0 / 128, 2.0 / 128},  // SmWrite 1.1875 (128 B)
    {"pcie5", 16 * 32e9 * 128.0 / 130.0 / 8, 1 + 4 * 20.0 / 512 + 2.0 / 512,
     24.0 / 512 + 4 * 2.0 / 512, 1 + 20.0 / 64 + 2.0 / 64, 24.0 / 64 + 2.0 / 64, 1 + 24.0 / 256,
     2.0 / 256, 1 + 24.0 / 128, 2.0 / 128},
    {"pcie6", 16 * 64e9 * 236.0 / 256.0 / 8, 1 + 4 * 12.0 / 512 + 2.0 / 512,
     16.0 / 512 + 4 * 2.0 / 512,                      // 1.09765625, 0.046875
     1 + 12.0 / 64 + 2.0 / 64, 16.0 / 64 + 2.0 / 64,  // 1.21875, 0.28125
     1 + 16.0 / 256, 2.0 / 256,                       // 1.0625
     1 + 16.0 / 64, 2.0 / 64},                        // 1.25
};

TEST(PcieProtocol, ReadsPresetFields) {
  const PcieProtocol p = preset("pcie5");
  EXPECT_DOUBLE_EQ(p.raw_Bps, 63.0153846153846e9);
  EXPECT_DOUBLE_EQ(p.max_payload, 256);
  EXPECT_DOUBLE_EQ(p.read_completion, 128);
  EXPECT_DOUBLE_EQ(p.max_read_request, 512);
  EXPECT_DOUBLE_EQ(p.sm_access, 64);
  EXPECT_DOUBLE_EQ(p.tlp_3dw, 20);
  EXPECT_DOUBLE_EQ(p.tlp_4dw, 24);
  EXPECT_DOUBLE_EQ(p.dllp, 8);
  EXPECT_DOUBLE_EQ(p.tlps_per_ack, 4);
  EXPECT_DOUBLE_EQ(p.skp_interval_blocks, 370);
  EXPECT_DOUBLE_EQ(p.skp_bytes, 16);
  EXPECT_DOUBLE_EQ(p.round_trip_latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(p.max_outstanding_reads, 768);
  EXPECT_DOUBLE_EQ(preset("pcie3").max_outstanding_reads, 256);
  EXPECT_NEAR(p.usable_fraction(), 0.997305, 1e-6);
}

TEST(PcieProtocol, WireCostsAndBandwidthsAllGenerations) {
  for (const Hand& h : kHand) {
    SCOPED_TRACE(h.name);
    const PcieProtocol p = preset(h.name);
    EXPECT_NEAR(p.raw_Bps, h.raw, 1);
    EXPECT_NEAR(p.usable_fraction(), kUsable, 1e-15);
    struct Row {
      PcieOp op;
      double data, rev;
    } rows[] = {{PcieOp::DmaRead, h.dma_read_data, h.dma_read_rev},
                {PcieOp::SmRead, h.sm_read_data, h.sm_read_rev},
                {PcieOp::DmaWrite, h.dma_write_data, h.dma_write_rev},
                {PcieOp::SmWrite, h.sm_write_data, h.sm_write_rev}};
    for (const Row& r : rows) {
      SCOPED_TRACE(pcie_op_name(r.op));
      const WireCost c = wire_cost(p, r.op);
      EXPECT_NEAR(c.data_dir, r.data, 1e-12);
      EXPECT_NEAR(c.reverse_dir, r.rev, 1e-12);
      EXPECT_NEAR(payload_bandwidth(p, r.op), h.raw * kUsable / r.data, 1e-3);
    }
  }
}

TEST(PcieProtocol, Pcie5NumbersByHand) {
  const PcieProtocol p = preset("pcie5");
  // 63.0154 GB/s · 370/371 = 62.8455 GB/s of TLP/DLLP bytes per direction.
  EXPECT_NEAR(p.wire_Bps() / 1e9, 62.8455, 1e-4);
  // DmaRead: 62.8455 / 1.16015625 = 54.170 GB/s; SmRead: / 1.34375 = 46.769 GB/s;
  // DmaWrite: / 1.09375 = 57.459 GB/s; SmWrite (128 B): / 1.1875 = 52.923 GB/s (nvbandwidth's
  // measured H100 SM D2H: 52.77 GB/s, NVIDIA/nvbandwidth issue 24).
  EXPECT_NEAR(payload_bandwidth(p, PcieOp::DmaRead) / 1e9, 54.170, 1e-3);
  EXPECT_NEAR(payload_bandwidth(p, PcieOp::SmRead) / 1e9, 46.769, 1e-3);
  EXPECT_NEAR(payload_bandwidth(p, PcieOp::DmaWrite) / 1e9, 57.459, 1e-3);
  EXPECT_NEAR(payload_bandwidth(p, PcieOp::SmWrite) / 1e9, 52.923, 1e-3);
  // Completion payload efficiency alone: 128/148 = 86.5%, 64/84 = 76.2% (reference-data.md).
  EXPECT_NEAR(128.0 / (128 + p.tlp_3dw), 0.865, 1e-3);
  EXPECT_NEAR(64.0 / (64 + p.tlp_3dw), 0.762, 1e-3);
}

// The measured H100 SXM + Sapphire Rapids curves (vLLM blog, reference-data.md) fit
// B∞ ≈ 51.6 GB/s for cudaMemcpyAsync (DMA) and 47.8 GB/s for the copy kernel (SMs). The model
// must land within ±10% from the protocol parameters alone.
TEST(PcieProtocol, Pcie5WithinTenPercentOfMeasuredH100) {
  const PcieProtocol p = preset("pcie5");
  const double dma = payload_bandwidth(p, PcieOp::DmaRead) / 1e9;
  const double sm = payload_bandwidth(p, PcieOp::SmRead) / 1e9;
  EXPECT_NEAR(dma / 51.6, 1.0, 0.10) << dma;
  EXPECT_NEAR(sm / 47.8, 1.0, 0.10) << sm;
  // And the tag limit does not bind either read path on Gen5 at 1 us:
  // 768 · 512 B / 1 us = 393 GB/s; 768 · 64 B / 1 us = 49.2 GB/s > 46.8 GB/s.
  EXPECT_NEAR(read_tag_limit_Bps(p, PcieOp::DmaRead), 768 * 512 / 1e-6, 1);
  EXPECT_NEAR(read_tag_limit_Bps(p, PcieOp::SmRead), 768 * 64 / 1e-6, 1);
  EXPECT_GT(read_tag_limit_Bps(p, PcieOp::SmRead), payload_bandwidth(p, PcieOp::SmRead));
  EXPECT_TRUE(std::isinf(read_tag_limit_Bps(p, PcieOp::DmaWrite)));
}

TEST(PcieProtocol, OpMapping) {
  EXPECT_EQ(pcie_op(true, true), PcieOp::DmaRead);
  EXPECT_EQ(pcie_op(true, false), PcieOp::SmRead);
  EXPECT_EQ(pcie_op(false, true), PcieOp::DmaWrite);
  EXPECT_EQ(pcie_op(false, false), PcieOp::SmWrite);
}

TEST(PcieProtocol, CompletionSplitRoundsUp) {
  PcieProtocol p = preset("pcie5");
  p.max_read_request = 200;  // 200 B request -> 2 completions (128 + 72)
  const WireCost c = wire_cost(p, PcieOp::DmaRead);
  EXPECT_NEAR(c.data_dir, 1 + 2 * 20.0 / 200 + 2.0 / 200, 1e-12);
  EXPECT_NEAR(c.reverse_dir, 24.0 / 200 + 2 * 2.0 / 200, 1e-12);
}

TEST(PcieProtocol, MissingFieldsAreNamed) {
  const char* text =
      "name: bare\ntype: pcie\ngeneration: 5\nrate_per_lane: 32 GT/s\n"
      "encoding_data: 128\nencoding_total: 130\n";
  const LinkSpec bare = read_config<LinkSpec>(parse_yaml(text, "bare.yaml"), "link");
  try {
    PcieProtocol::from(bare, "system.host_link");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("system.host_link"), std::string::npos) << m;
    for (const char* key :
         {"max_payload_size", "read_completion_size", "max_read_request_size", "sm_read_size",
          "tlp_overhead_3dw", "tlp_overhead_4dw", "dllp_size", "tlps_per_ack",
          "skp_interval_blocks", "skp_size", "round_trip_latency", "max_outstanding_reads"})
      EXPECT_NE(m.find(key), std::string::npos) << key << " not in: " << m;
  }
  // One field missing: only that one is named.
  LinkSpec almost = read_preset_config<LinkSpec>(ConfigNode::make_scalar("pcie4"), "link", "link");
  almost.round_trip_latency_s.reset();
  try {
    PcieProtocol::from(almost, "link");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("round_trip_latency"), std::string::npos) << m;
    EXPECT_EQ(m.find("max_payload_size"), std::string::npos) << m;
  }
}

TEST(PcieProtocol, NonPcieLinkIsRefused) {
  const LinkSpec c2c =
      read_preset_config<LinkSpec>(ConfigNode::make_scalar("nvlink-c2c"), "link", "link");
  EXPECT_THROW(PcieProtocol::from(c2c, "link"), InputError);
}

}  // namespace
}  // namespace pcie_protocol_test
}  // namespace kappasim
