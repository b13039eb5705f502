#include "systems/link_backend.hpp"

#include "core/error.hpp"
#include "systems/flow_fabric.hpp"
#include "systems/packet_fabric.hpp"
#include "systems/topology.hpp"

namespace kappasim {

namespace {
std::unique_ptr<LinkModule> make_flow(const sc_core::sc_module_name& n, const SystemSpec& s,
                                      int nodes) {
  if (nodes < 1) throw InputError("nodes: a replica needs at least one node");
  return std::make_unique<FlowFabric>(n, build_topology(s, nodes));
}
std::unique_ptr<LinkModule> make_packet(const sc_core::sc_module_name& n, const SystemSpec& s,
                                        int nodes) {
  return std::make_unique<PacketFabric>(n, s, nodes);
}
// The built-ins' implementations (their names and summaries are declared in the pure
// systems/link_backends.cpp, which every config reader links). This file is linked wherever
// make_link_backend is, so these registrations are never dropped.
const LinkBackendRegistrar kFlow(link_backends(), "flow", "", make_flow);
const LinkBackendRegistrar kPacket(link_backends(), "packet", "", make_packet);
}  // namespace

void register_link_backend(const std::string& fidelity, LinkBackendFactory factory) {
  link_backends().add(fidelity, "", factory);
}

std::vector<std::string> link_backend_names() { return link_backends().names(); }

std::unique_ptr<LinkModule> make_link_backend(const std::string& fidelity,
                                              const sc_core::sc_module_name& name,
                                              const SystemSpec& s, int nodes) {
  return link_backends().make(fidelity, name, s, nodes);
}

}  // namespace kappasim
