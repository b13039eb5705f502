// Host DRAM as a datasheet describes it: sockets, channels per socket, transfer rate and bus
// width (bandwidth per socket derived from them), or a published per-socket bandwidth where
// that is what the vendor gives (Grace LPDDR5X); capacity; the inter-socket link. The host
// memory timing model (NUMA placement, socket-link contention) reads this struct.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"

namespace kappasim {

struct HostMemorySpec {
  std::string name;
  std::string display_name;
  int sockets = 1;
  std::optional<double> channels_per_socket;
  std::optional<double> transfer_rate_Tps;  // MT/s per channel
  std::optional<double> bus_width_bytes;    // bytes per transfer per channel
  std::optional<double> bandwidth_per_socket_Bps;
  double capacity_bytes = 0;
  std::optional<double> inter_socket_Bps;   // per direction
  std::optional<double> memcpy_thread_Bps;  // one CPU thread's memcpy bandwidth (pageable staging)
  std::optional<double> dram_efficiency;    // sustained fraction of peak DRAM bandwidth, all cores
  std::optional<double> usd_per_byte;  // issue 14: assumed DRAM price, for cost per tier studies

  // Peak DRAM bandwidth of one socket: channels × rate × width, or the published figure.
  double socket_bandwidth() const;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.integer("sockets", sockets, opt("CPU sockets (NUMA nodes)"));
    v.quantity("channels_per_socket", channels_per_socket, dim::none,
               opt("memory channels per socket"));
    v.quantity("transfer_rate", transfer_rate_Tps, dim::transfer_rate,
               opt("transfers per second per channel (MT/s)"));
    v.quantity("bus_width", bus_width_bytes, dim::bytes, opt("bytes per transfer per channel"));
    v.quantity("bandwidth_per_socket", bandwidth_per_socket_Bps, dim::bandwidth,
               opt("published peak DRAM bandwidth per socket"));
    v.quantity("capacity", capacity_bytes, dim::bytes, req("total DRAM capacity"));
    v.quantity("inter_socket_bandwidth", inter_socket_Bps, dim::bandwidth,
               opt("socket-to-socket link bandwidth per direction"));
    v.quantity("memcpy_thread_bandwidth", memcpy_thread_Bps, dim::bandwidth,
               opt("memcpy bandwidth of one CPU thread (pageable-memory staging)"));
    v.quantity("dram_efficiency", dram_efficiency, dim::none,
               opt("sustained fraction of peak DRAM bandwidth with all cores", Range::Fraction));
    v.quantity("usd_per_byte", usd_per_byte, dim::none,
               opt("price per byte (assumption; studies sweep it)", Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

}  // namespace kappasim
