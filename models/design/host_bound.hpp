// The host side of a design's host link: the KV load rate a GPU reaches is the smaller of its
// link PHY bandwidth and its share of the host that feeds it (docs/design-model.md, "Host bound").
//
// The host is a system preset's (systems/system_spec): its host memory (sockets, per-socket DRAM
// bandwidth = socket_bandwidth() x dram_efficiency), gpus_per_socket, kv_pool placement and the
// inter-socket links, taken from the same topology the simulator uses
// (systems/topology: build_topology, path). Every GPU of the system loads KV at once (a
// serving node at full load; an instance with more GPUs than the system spans copies of it, so
// each GPU still shares its socket with the same neighbours); each gets its max-min fair share
// (interconnects/flow_network) of the host resources on its path (its pool socket's DRAM, and
// the socket link when the pool is remote or interleaved), capped by its own PHY. Optionally a
// per-socket root-port budget (PCIe lanes x lane rate) that the socket's GPUs share. The system's
// own host link, read tags and the GPU's HBM are not used: the design replaces the GPU's end.
// Pure C++, no SystemC.
#pragma once

#include <limits>
#include <optional>

#include "systems/system_spec.hpp"

namespace kappasim {

// Which resource limits the load rate (the sweep metric link_bound_by carries the number).
enum class LinkBinding { Phy = 0, HostDram = 1, SocketLink = 2, RootPort = 3 };

struct HostBound {
  double phy_Bps = 0;        // the design's link PHY, per direction
  double effective_Bps = 0;  // min(PHY, host share) with every GPU of the system loading
  // The host side alone (PHY unbounded): the most any PHY could get. +inf when the host has no
  // DRAM on the path (unified-HBM tier) or the host is unlimited.
  double host_share_Bps = std::numeric_limits<double>::infinity();
  LinkBinding binding = LinkBinding::Phy;
  bool unlimited = false;  // the die-only view (host: unlimited)
};

// The load rate of the slowest GPU of a TP instance of `tp` GPUs on `host`. InputError when the
// system cannot be built (build_topology's checks) or phy_Bps is not positive.
HostBound host_bound(const SystemSpec& host, int tp, double phy_Bps,
                     std::optional<double> root_port_Bps = std::nullopt);

// The die-only view: the PHY is the load rate.
HostBound unlimited_host(double phy_Bps);

}  // namespace kappasim
