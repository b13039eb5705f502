// PCIe protocol efficiency as pure arithmetic: how many wire bytes a payload byte costs on the
// direction it travels and on the opposite one, for the four ways a GPU moves data over PCIe.
// Every number comes from a LinkSpec protocol field (presets/links/pcieN.yaml, each sourced);
// there is no efficiency or correction factor anywhere. The flow-level fabric uses these costs
// directly; the packet-level model (interconnects/pcie_packet) sends the same TLPs and DLLPs one
// at a time and must agree with them. No SystemC here.
#pragma once

#include <string>

#include "interconnects/link_spec.hpp"

namespace kappasim {

// One PCIe link's protocol parameters, in SI base units (bytes, seconds, B/s).
struct PcieProtocol {
  double raw_Bps = 0;  // per direction after line encoding = LinkSpec::per_direction_bandwidth()
  double max_payload = 0;       // MPS: payload of a write TLP (DMA write)
  double read_completion = 0;   // payload of one completion of a DMA read (RCB-sized)
  double max_read_request = 0;  // MRRS: payload asked for by one DMA read request
  double sm_access = 0;         // payload of one read that an SM issues (zero-copy)
  double sm_write = 0;      // payload of one posted write SMs issue (sm_write_size, else sm_access)
  double tlp_3dw = 0;       // wire bytes of a TLP beyond its payload, 3-DW header
  double tlp_4dw = 0;       // same, 4-DW header (64-bit address)
  double dllp = 0;          // wire bytes of one ACK DLLP
  double tlps_per_ack = 1;  // TLPs acknowledged per ACK DLLP
  double skp_interval_blocks = 1;    // 16 B data blocks (per lane) between SKP ordered sets
  double skp_bytes = 0;              // bytes (per lane) of one SKP ordered set
  double round_trip_latency_s = 0;   // read request arrival at the root -> first completion
  double max_outstanding_reads = 1;  // read tags per requester

  // Reads the protocol fields of a PCIe link; calls link.require_sim(path), so a missing field
  // is an InputError naming every field the link lacks. A non-PCIe link is an InputError too.
  static PcieProtocol from(const LinkSpec& link, const std::string& path);

  // Fraction of the encoded line rate left for TLPs and DLLPs after SKP ordered sets:
  //   interval·16 / (interval·16 + skp)    e.g. 370·16 / (370·16 + 16) = 370/371 = 0.99730
  double usable_fraction() const;
  // raw_Bps · usable_fraction(): the rate at which a direction serialises TLP/DLLP bytes.
  double wire_Bps() const { return raw_Bps * usable_fraction(); }
};

// The device's view: DmaRead = a copy engine reads host memory (H2D), SmRead = SMs of a copy
// kernel read pinned host memory (zero-copy H2D); DmaWrite / SmWrite write host memory (D2H).
enum class PcieOp { DmaRead, DmaWrite, SmRead, SmWrite };

// h2d: host -> device; dma: copy engine (else SMs of a copy kernel).
PcieOp pcie_op(bool h2d, bool dma);
const char* pcie_op_name(PcieOp op);
inline bool is_read(PcieOp op) { return op == PcieOp::DmaRead || op == PcieOp::SmRead; }

// Wire bytes per payload byte: on the direction the payload flows (data_dir, >= 1) and on the
// opposite direction (reverse_dir: read requests and ACK DLLPs).
struct WireCost {
  double data_dir = 1;
  double reverse_dir = 0;
};
WireCost wire_cost(const PcieProtocol& p, PcieOp op);

// Payload bandwidth of one operation alone on an idle link, limited by the wire of the direction
// the payload flows: raw_Bps · usable_fraction / data_dir.
double payload_bandwidth(const PcieProtocol& p, PcieOp op);

// Little's law bound on reads: at most max_outstanding_reads requests of request_size bytes are
// in flight, each for at least round_trip_latency:  tags · request / latency. Infinite for writes
// (posted) and for a zero latency. The packet model reproduces this limit by itself.
double read_tag_limit_Bps(const PcieProtocol& p, PcieOp op);

// Payload bytes per request for reads (MRRS or the SM access size), per TLP for writes (MPS or
// the SM access size); and payload bytes per completion for reads.
double request_bytes(const PcieProtocol& p, PcieOp op);
double completion_bytes(const PcieProtocol& p, PcieOp op);

// ---- Zero-copy SM reads by mechanism (docs/pcie-model.md "SM reads of host memory") --------
// A copy kernel reading pinned host memory keeps `loads_per_sm` warp-wide loads in flight on
// each of its `sms` SMs (its resident warps × loads per thread: models/gpu/copy_kernel_shape);
// one warp-wide load moves 32 threads × load_width bytes (LMCache 0.3.5's multi_layer_kv_transfer:
// 8 B per thread; a vectorised copy kernel: 16 B). Each load waits a round trip, so by Little's
// law the kernel reads at most
//   sm_inflight_bytes / round_trip = sms · loads_per_sm · 32 · load_width / round_trip
// e.g. H100, 132 SMs, 1 warp-wide load per SM, 8 B, 1 µs: 132·256 B / 1 µs = 33.8 GB/s.
constexpr double kWarpThreads = 32;
double sm_inflight_bytes(double sms, double loads_per_sm, double load_width_bytes);
// inflight / round_trip; +inf when either is not positive (no bound).
double little_rate_Bps(double inflight_bytes, double round_trip_s);

}  // namespace kappasim
