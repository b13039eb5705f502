// An NVMe SSD as its datasheet describes it: capacity, PCIe link (generation rate, lanes,
// 128b/130b), sequential read / write bandwidth, random 4 KiB read / write IOPS at the queue
// depth the datasheet states, read latency, power and an assumed price. A KV tier below host
// DRAM (issue 14, docs/memory-tiers.md): reads go drive -> host DRAM bounce buffer -> GPU, or
// drive -> GPU with GPUDirect Storage. The topology (systems/) makes the drive a flow resource.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"

namespace kappasim {

struct NvmeDriveSpec {
  std::string name;
  std::string display_name;
  double capacity_bytes = 0;
  double rate_per_lane_Tps = 0;  // PCIe PHY rate per lane (16 GT/s Gen4, 32 GT/s Gen5)
  int lanes = 4;
  double seq_read_Bps = 0;               // datasheet sequential read (128 KiB, high queue depth)
  double seq_write_Bps = 0;              // datasheet sequential write
  double read_iops = 0;                  // datasheet random read IOPS (io_bytes each)
  double write_iops = 0;                 // datasheet random write IOPS
  double io_bytes = 4096;                // the IOPS figures' request size
  int queue_depth = 0;                   // the queue depth the IOPS figures were measured at
  double read_latency_s = 0;             // one read's device latency (datasheet typical)
  std::optional<double> active_power_W;  // average active power (energy = power x time)
  std::optional<double> usd_per_byte;    // assumption: price, for cost per request studies

  // Payload bytes/s of the PCIe link per direction (rate × lanes / 8 × 128/130).
  double link_Bps() const;
  // Read / write bandwidth for requests of `request_bytes`: min(sequential figure, IOPS ×
  // request size, link) (large chunks: the sequential figure; 4 KiB: the IOPS bound).
  double read_Bps(double request_bytes) const;
  double write_Bps(double request_bytes) const;

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.quantity("capacity", capacity_bytes, dim::bytes, req("drive capacity"));
    v.quantity("rate_per_lane", rate_per_lane_Tps, dim::transfer_rate,
               req("PCIe transfers per second per lane"));
    v.integer("lanes", lanes, opt("PCIe lanes", Range::AtLeastOne));
    v.quantity("seq_read_bandwidth", seq_read_Bps, dim::bandwidth, req("sequential read"));
    v.quantity("seq_write_bandwidth", seq_write_Bps, dim::bandwidth, req("sequential write"));
    v.quantity("read_iops", read_iops, dim::none, req("random read IOPS"));
    v.quantity("write_iops", write_iops, dim::none, req("random write IOPS"));
    v.quantity("io_size", io_bytes, dim::bytes, opt("request size of the IOPS figures"));
    v.integer("queue_depth", queue_depth,
              req("queue depth of the IOPS figures", Range::AtLeastOne));
    v.quantity("read_latency", read_latency_s, dim::time, req("one read's latency"));
    v.quantity("active_power", active_power_W, dim::power, opt("average active power"));
    v.quantity("usd_per_byte", usd_per_byte, dim::none,
               opt("price per byte (assumption; studies sweep it)", Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

}  // namespace kappasim
