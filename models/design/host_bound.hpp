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
// own host link and the GPU's HBM are not used: the design replaces the GPU's end, its PCIe
// requester included (design_requester, cap_by_requester below, applied by the design model).
// Pure C++, no SystemC.
#pragma once

#include <limits>
#include <optional>

#include "systems/system_spec.hpp"

namespace kappasim {

// Which resource limits the load rate (the sweep metric link_bound_by carries the number).
enum class LinkBinding { Phy = 0, HostDram = 1, SocketLink = 2, RootPort = 3, ReadTags = 4 };

struct HostBound {
  double phy_Bps = 0;        // the design's link PHY, per direction
  double effective_Bps = 0;  // min(PHY, host share) with every GPU of the system loading
  // The host side alone (PHY unbounded): the most any PHY could get. +inf when the host has no
  // DRAM on the path (unified-HBM tier) or the host is unlimited.
  double host_share_Bps = std::numeric_limits<double>::infinity();
  LinkBinding binding = LinkBinding::Phy;
  bool unlimited = false;  // the die-only view (host: unlimited)
  double read_tags = 0;    // the design's requester (design_requester)
};

// The design's PCIe requester (docs/design-model.md, "The requester's read tags"). Reads hold a
// tag for a round trip each, so a requester moves at most tags x request size / round trip
// (Little's law; the simulator's `read_tags` bound, systems/topology). A re-split die keeps its
// base die's tags per byte/s of PHY [A]: tags = the emitted link's (presets/links/pcie5.yaml:
// 768) x PHY / the base die's PHY, rounded, never fewer than the link's own and at most
// kMaxReadTags. Round trip and request sizes are the emitted link's. The emitted system carries
// the same tags (design_emit), so the design model and the simulated check load through the same
// requester; the base split is the base die unchanged.
constexpr double kMaxReadTags = 16384;  // PCIe 6.0 flit mode's 14-bit tags
struct DesignRequester {
  double tags = 0;
  double sm_ceiling_Bps = 0;   // zero-copy SM reads: tags x sm_read_size / round trip
  double dma_ceiling_Bps = 0;  // copy-engine reads: tags x max_read_request_size / round trip
};
DesignRequester design_requester(double phy_Bps, double base_phy_Bps);
// Caps `h` at its requester's zero-copy ceiling (the design model's load path is LMCache's
// default zero-copy kernel, as the simulated check's): binding ReadTags where it is lower.
void cap_by_requester(HostBound& h, double base_phy_Bps);

// The load rate of the slowest GPU of a TP instance of `tp` GPUs on `host`. InputError when the
// system cannot be built (build_topology's checks) or phy_Bps is not positive.
HostBound host_bound(const SystemSpec& host, int tp, double phy_Bps,
                     std::optional<double> root_port_Bps = std::nullopt);

// The die-only view: the PHY is the load rate.
HostBound unlimited_host(double phy_Bps);

}  // namespace kappasim
