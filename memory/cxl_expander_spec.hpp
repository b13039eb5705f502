// A CXL Type-3 memory expander (CXL.mem device) as its datasheet describes it: capacity, the
// PCIe-PHY link it attaches through (generation rate, lanes, CXL flit framing), the device's
// media (DRAM controller) bandwidth, the latency it adds over local DRAM, energy per bit and an
// assumed price. A KV tier below host DRAM (issue 14, docs/memory-tiers.md). The topology
// (systems/) makes its link and media into flow resources; the analytic κ reads its bandwidth.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"

namespace kappasim {

struct CxlExpanderSpec {
  std::string name;
  std::string display_name;
  double capacity_bytes = 0;  // per device
  // Link (CXL rides the PCIe 5/6 PHY): per-lane rate, lanes, and the flit framing: a flit of
  // flit_bytes carries flit_data_bytes of payload slots (CXL 2.0 68-byte flit on Gen5; CXL 3.x
  // 256-byte flit on Gen6).
  double rate_per_lane_Tps = 0;
  int lanes = 0;
  double flit_bytes = 0;
  double flit_data_bytes = 0;
  // Line code under the flits: CXL 1.1/2.0 (68 B flits at 8-32 GT/s) keeps PCIe's 128b/130b;
  // CXL 3.x 256 B flits on the PCIe 6 PHY have none (1/1, the default).
  double encoding_data = 1;
  double encoding_total = 1;
  // The device's own memory (DRAM behind the CXL controller): sustained read / write bandwidth;
  // absent: the link is the only limit.
  std::optional<double> media_read_Bps;
  std::optional<double> media_write_Bps;
  double added_latency_s = 0;  // load-to-use latency over a local-DRAM access
  std::optional<double> energy_per_byte_J;
  std::optional<double> usd_per_byte;  // assumption: price, for cost per request studies

  // Payload bytes/s per direction of the link:
  // rate × lanes / 8 × encoding_data / encoding_total × flit_data / flit.
  double link_Bps() const;
  // What one device delivers per direction: min(link, media) (reads: H2D; writes: D2H).
  double read_Bps() const;
  double write_Bps() const;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.quantity("capacity", capacity_bytes, dim::bytes, req("memory capacity per device"));
    v.quantity("rate_per_lane", rate_per_lane_Tps, dim::transfer_rate,
               req("PCIe PHY transfers per second per lane (32 GT/s: Gen5)"));
    v.integer("lanes", lanes, req("link lanes (x8, x16)", Range::AtLeastOne));
    v.quantity("flit_bytes", flit_bytes, dim::bytes, req("bytes of one CXL flit on the wire"));
    v.quantity("flit_data_bytes", flit_data_bytes, dim::bytes,
               req("payload bytes one flit carries"));
    v.number("encoding_data", encoding_data,
             opt("payload bits per line-code block (128 of 128b/130b; 1: no line code)"));
    v.number("encoding_total", encoding_total,
             opt("total bits per line-code block (130 of 128b/130b; 1: no line code)"));
    v.quantity("media_read_bandwidth", media_read_Bps, dim::bandwidth,
               opt("device memory sustained read bandwidth"));
    v.quantity("media_write_bandwidth", media_write_Bps, dim::bandwidth,
               opt("device memory sustained write bandwidth"));
    v.quantity("added_latency", added_latency_s, dim::time,
               opt("latency added over a local DRAM access", Range::NonNegative));
    v.quantity("energy_per_bit", energy_per_byte_J, dim::energy_per_byte,
               opt("energy per bit read or written", Range::NonNegative));
    v.quantity("usd_per_byte", usd_per_byte, dim::none,
               opt("price per byte (assumption; studies sweep it)", Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

}  // namespace kappasim
