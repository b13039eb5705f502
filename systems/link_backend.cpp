#include "systems/link_backend.hpp"

#include <map>

#include "core/error.hpp"
#include "systems/flow_fabric.hpp"
#include "systems/packet_fabric.hpp"
#include "systems/topology.hpp"

namespace kappasim {

namespace {
// Built-ins are added on first use (no static-initialisation order or dropped object files).
std::map<std::string, LinkBackendFactory>& registry() {
  static std::map<std::string, LinkBackendFactory> r = {
      {"flow",
       [](const sc_core::sc_module_name& n, const SystemSpec& s) -> std::unique_ptr<LinkModule> {
         return std::make_unique<FlowFabric>(n, build_topology(s));
       }},
      {"packet",
       [](const sc_core::sc_module_name& n, const SystemSpec& s) -> std::unique_ptr<LinkModule> {
         return std::make_unique<PacketFabric>(n, s);
       }},
  };
  return r;
}
}  // namespace

void register_link_backend(const std::string& fidelity, LinkBackendFactory factory) {
  registry()[fidelity] = std::move(factory);
}

std::vector<std::string> link_backend_names() {
  std::vector<std::string> out;
  for (const auto& kv : registry()) out.push_back(kv.first);
  return out;
}

std::unique_ptr<LinkModule> make_link_backend(const std::string& fidelity,
                                              const sc_core::sc_module_name& name,
                                              const SystemSpec& s) {
  auto it = registry().find(fidelity);
  if (it == registry().end()) {
    std::string valid;
    for (const auto& n : link_backend_names()) valid += (valid.empty() ? "" : ", ") + n;
    throw InputError("serving.link_fidelity: unknown link back end '" + fidelity +
                     "' (valid: " + valid + ")");
  }
  return it->second(name, s);
}

// issue 14: multi-node replicas
std::unique_ptr<LinkModule> make_link_backend(const std::string& fidelity,
                                              const sc_core::sc_module_name& name,
                                              const SystemSpec& s, int nodes) {
  if (nodes == 1) return make_link_backend(fidelity, name, s);
  if (nodes < 1) throw InputError("nodes: a replica needs at least one node");
  if (fidelity != "flow")
    throw InputError("serving.link_fidelity: '" + fidelity + "' models one node; a replica of " +
                     std::to_string(nodes) + " nodes needs link_fidelity: flow");
  return std::make_unique<FlowFabric>(name, build_topology(s, nodes));
}

}  // namespace kappasim
