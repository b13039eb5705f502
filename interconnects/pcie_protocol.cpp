#include "interconnects/pcie_protocol.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace kappasim {

PcieProtocol PcieProtocol::from(const LinkSpec& link, const std::string& path) {
  if (link.type != LinkType::Pcie)
    throw InputError(path + ": the PCIe protocol model needs a PCIe link, '" + link.name +
                     "' is not one");
  link.require_sim(path);
  PcieProtocol p;
  p.raw_Bps = link.per_direction_bandwidth();
  p.max_payload = *link.max_payload_size_bytes;
  p.read_completion = *link.read_completion_size_bytes;
  p.max_read_request = *link.max_read_request_size_bytes;
  p.sm_access = *link.sm_read_size_bytes;
  p.sm_write = link.sm_write_size_bytes.value_or(p.sm_access);
  p.tlp_3dw = *link.tlp_overhead_3dw_bytes;
  p.tlp_4dw = *link.tlp_overhead_4dw_bytes;
  p.dllp = *link.dllp_bytes;
  p.tlps_per_ack = *link.tlps_per_ack;
  p.skp_interval_blocks = *link.skp_interval_blocks;
  p.skp_bytes = *link.skp_bytes;
  p.round_trip_latency_s = *link.round_trip_latency_s;
  p.max_outstanding_reads = *link.max_outstanding_reads;
  return p;
}

// 128b/130b (and, as an assumption, Gen6 flit mode): every lane sends a SKP ordered set of
// skp_bytes after skp_interval_blocks data blocks of 16 bytes. All lanes do so at once, so the
// fraction is the same per lane and for the link.
double PcieProtocol::usable_fraction() const {
  const double data = skp_interval_blocks * 16.0;
  return data / (data + skp_bytes);
}

PcieOp pcie_op(bool h2d, bool dma) {
  if (h2d) return dma ? PcieOp::DmaRead : PcieOp::SmRead;
  return dma ? PcieOp::DmaWrite : PcieOp::SmWrite;
}

const char* pcie_op_name(PcieOp op) {
  switch (op) {
    case PcieOp::DmaRead:
      return "dma-read";
    case PcieOp::DmaWrite:
      return "dma-write";
    case PcieOp::SmRead:
      return "sm-read";
    case PcieOp::SmWrite:
      return "sm-write";
  }
  return "?";
}

double request_bytes(const PcieProtocol& p, PcieOp op) {
  switch (op) {
    case PcieOp::DmaRead:
      return p.max_read_request;
    case PcieOp::SmRead:
      return p.sm_access;
    case PcieOp::DmaWrite:
      return p.max_payload;
    case PcieOp::SmWrite:
      return std::min(p.sm_write > 0 ? p.sm_write : p.sm_access, p.max_payload);
  }
  return p.max_payload;
}

double completion_bytes(const PcieProtocol& p, PcieOp op) {
  return std::min(request_bytes(p, op), p.read_completion);
}

// Per payload byte, with
//   ack = dllp / tlps_per_ack      (ACK DLLP bytes per TLP received, sent back the other way)
//
// Reads (DmaRead: req = MRRS; SmRead: req = sm_access). The requester sends one MRd per req
// bytes upstream (4-DW header, no payload); the completer returns ncpl = ceil(req / RCB)
// completions downstream, each with a 3-DW header:
//   data_dir    = 1 + ncpl·tlp_3dw / req   (completion headers)
//                   + ack / req            (ACKs for the upstream MRd, sent downstream)
//   reverse_dir = tlp_4dw / req            (the MRd itself)
//                   + ncpl·ack / req       (ACKs for the completions, sent upstream)
//   PCIe 5 DmaRead (req 512, RCB 128, 20/24 B, 8 B DLLP per 4 TLPs):
//     data_dir = 1 + 4·20/512 + 2/512 = 1.16016;  reverse = 24/512 + 4·2/512 = 0.0625
//   PCIe 5 SmRead (req 64): data_dir = 1 + 20/64 + 2/64 = 1.34375; reverse = 26/64 = 0.40625
//
// Writes are posted (no completion): one MWr of pl = MPS (DmaWrite) or sm_access (SmWrite)
// bytes with a 4-DW header upstream, ACKs downstream:
//   data_dir = 1 + tlp_4dw / pl;  reverse_dir = ack / pl
//   PCIe 5 DmaWrite: 1 + 24/256 = 1.09375; reverse = 2/256 = 0.0078
WireCost wire_cost(const PcieProtocol& p, PcieOp op) {
  const double ack = p.dllp / p.tlps_per_ack;
  const double req = request_bytes(p, op);
  WireCost c;
  if (is_read(op)) {
    const double ncpl = std::ceil(req / p.read_completion);
    c.data_dir = 1.0 + ncpl * p.tlp_3dw / req + ack / req;
    c.reverse_dir = p.tlp_4dw / req + ncpl * ack / req;
  } else {
    c.data_dir = 1.0 + p.tlp_4dw / req;
    c.reverse_dir = ack / req;
  }
  return c;
}

double payload_bandwidth(const PcieProtocol& p, PcieOp op) {
  return p.wire_Bps() / wire_cost(p, op).data_dir;
}

double read_tag_limit_Bps(const PcieProtocol& p, PcieOp op) {
  if (!is_read(op) || p.round_trip_latency_s <= 0) return std::numeric_limits<double>::infinity();
  return p.max_outstanding_reads * request_bytes(p, op) / p.round_trip_latency_s;
}

double sm_inflight_bytes(double sms, double loads_per_sm, double load_width_bytes) {
  if (!(sms > 0) || !(loads_per_sm > 0) || !(load_width_bytes > 0)) return 0;
  return sms * loads_per_sm * kWarpThreads * load_width_bytes;
}

double little_rate_Bps(double inflight_bytes, double round_trip_s) {
  if (!(inflight_bytes > 0) || !(round_trip_s > 0)) return std::numeric_limits<double>::infinity();
  return inflight_bytes / round_trip_s;
}

}  // namespace kappasim
