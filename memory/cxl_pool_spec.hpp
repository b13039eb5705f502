// A pooled CXL memory tier (issue 25): CXL Type-3 memory devices behind a CXL switch, shared by
// several hosts. Each host reaches the switch over its own CXL link (a host port of the switch:
// its lanes at the switch's per-lane rate, with the CXL flit framing); the switch forwards to the
// devices, each on a link of its own (the device preset's). What the hosts share: the devices'
// bandwidth (each device delivers min(its link, its media), the pool the sum) and their capacity.
// A load crosses the switch twice (the request down, the data back up), a posted write once.
// Pure data and arithmetic; the topology (systems/) makes the host port and the pool's devices
// into flow resources, a cluster shares them between its nodes (docs/memory-tiers.md "Pooled").
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "memory/cxl_expander_spec.hpp"

namespace kappasim {

struct CxlPoolSpec {
  std::string name;
  std::string display_name;
  CxlExpanderSpec device;  // the pool's memory devices (preset kind cxl)
  int devices = 0;         // how many, each on a downstream port of the switch
  int host_ports = 0;      // the switch's upstream ports: at most this many hosts share the pool
  int port_lanes = 0;      // the widest host port, lanes
  int switch_lanes = 0;    // the switch's lanes, host and device ports together
  // The host<->switch link (CXL rides the PCIe PHY): per-lane rate and the flit framing, as for
  // an expander (CxlExpanderSpec): 68 B flits with 128b/130b on CXL 2.0, 256 B flits on 3.x.
  double rate_per_lane_Tps = 0;
  double flit_bytes = 0;
  double flit_data_bytes = 0;
  double encoding_data = 1;
  double encoding_total = 1;
  double switch_latency_s = 0;  // one traversal of the switch (port to port)

  // Payload bytes/s per direction of a host link of `lanes` lanes to the switch.
  double port_Bps(int lanes) const;
  // The pool's devices together, per direction: devices × the device's min(link, media).
  double read_Bps() const { return devices * device.read_Bps(); }
  double write_Bps() const { return devices * device.write_Bps(); }
  double capacity_bytes() const { return devices * device.capacity_bytes; }
  // Latency added over a local-DRAM access: the device's, plus the switch crossed twice by a
  // load (request and data) and once by a posted write.
  double read_latency_s() const { return device.added_latency_s + 2 * switch_latency_s; }
  double write_latency_s() const { return device.added_latency_s + switch_latency_s; }

  template <class V>
  void visit(V& v) {
    v.text("name", name, opt("preset name"));
    v.text("display_name", display_name, opt("human-readable name"));
    v.object("device", device, req("the pool's CXL memory device (preset kind cxl)"), "cxl");
    v.integer("devices", devices, req("memory devices behind the switch", Range::AtLeastOne));
    v.integer("host_ports", host_ports,
              req("the switch's host ports (hosts that can share the pool)", Range::AtLeastOne));
    v.integer("port_lanes", port_lanes, req("lanes of one host port", Range::AtLeastOne));
    v.integer("switch_lanes", switch_lanes,
              req("the switch's lanes, host and device ports together", Range::AtLeastOne));
    v.quantity("rate_per_lane", rate_per_lane_Tps, dim::transfer_rate,
               req("host link transfers per second per lane (32 GT/s: CXL 2.0 on Gen5)"));
    v.quantity("flit_bytes", flit_bytes, dim::bytes, req("bytes of one CXL flit on the wire"));
    v.quantity("flit_data_bytes", flit_data_bytes, dim::bytes,
               req("payload bytes one flit carries"));
    v.number("encoding_data", encoding_data,
             opt("payload bits per line-code block (128 of 128b/130b; 1: no line code)"));
    v.number("encoding_total", encoding_total,
             opt("total bits per line-code block (130 of 128b/130b; 1: no line code)"));
    v.quantity("switch_latency", switch_latency_s, dim::time,
               req("latency of one switch traversal, port to port", Range::NonNegative));
  }
  void validate(const std::string& path) const;
};

// How a pool's device bandwidth `capacity` is divided among the hosts loading from it at once:
// max-min fair over the hosts (the switch arbitrates between its ports), a host never getting
// more than its own demand (its port link). demands: one per active host (> 0).
std::vector<double> pool_port_shares(double capacity, const std::vector<double>& demands);

}  // namespace kappasim
