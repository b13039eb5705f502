#include "systems/link_backends.hpp"

namespace kappasim {

LinkBackendRegistry& link_backends() {
  static LinkBackendRegistry registry("link-backend", "link back end", "serving.link_fidelity");
  return registry;
}

namespace {
// The built-ins' names, for every program that reads a config (their factories:
// systems/link_backend.cpp).
const Declaration<LinkBackendRegistry> kFlow(
    link_backends(), "flow",
    "FlowFabric: max-min fair fluid flows over the whole topology (host DRAM, sockets, switches, "
    "host links, CXL, NVMe, NVLink, NIC, HBM); every endpoint, several nodes");
const Declaration<LinkBackendRegistry> kPacket(
    link_backends(), "packet",
    "PacketFabric: one packet-level PCIe link per GPU (TLPs, read tags, credits); PCIe host links "
    "to host DRAM only, one node; slow, for checks");
}  // namespace

const std::vector<std::pair<const char*, LinkFidelity>>& link_fidelity_names() {
  // Rebuilt if a registration came after the last call (all come before main in practice).
  static std::vector<std::pair<const char*, LinkFidelity>> names;
  const auto entries = link_backends().entries();
  if (names.size() != entries.size()) {
    names.clear();
    for (const auto* e : entries)
      names.emplace_back(e->name.c_str(), LinkFidelity{e->name.c_str()});
  }
  return names;
}

}  // namespace kappasim
