// serving.link_fidelity's names: the link back-end registry (core/registry.hpp) and the value
// the config holds. Back ends are SystemC modules (systems/link_backend, systems_sim layer), but
// their names are read with the config in every layer above systems: so this pure file
// *declares* the built-in names with their summaries (link_backends.cpp) and
// systems/link_backend.cpp gives each its factory. A new back end is one file with its class and
// a LinkBackendRegistrar (declares and implements it); serving.link_fidelity then accepts its
// name, with no enum to edit.
#pragma once

#include <cstring>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "core/registry.hpp"

namespace sc_core {
class sc_module_name;
}

namespace kappasim {

class LinkModule;  // interconnects/link_model.hpp (SystemC)
struct SystemSpec;

// A factory builds the back end for `nodes` copies of the system (issue 14 multi-node: GPU g
// on node g / s.gpus); a system or node count it cannot carry is its InputError
// (LinkModel::refuse, the one text).
using LinkBackendRegistry =
    Registry<LinkModule, const sc_core::sc_module_name&, const SystemSpec&, int>;
LinkBackendRegistry& link_backends();  // id "link-backend", key serving.link_fidelity
using LinkBackendRegistrar = Registrar<LinkBackendRegistry>;

// A registered back end's name: the value of serving.link_fidelity, compared by name (like
// Policy, serving/scheduler_policy.hpp). `name` must outlive the config (a string literal or a
// registry entry's name).
struct LinkFidelity {
  const char* name = "flow";

  static const LinkFidelity Flow;    // FlowFabric: max-min fair fluid over the whole topology
  static const LinkFidelity Packet;  // PacketFabric: one PciePacketLink per GPU (TLPs, credits)

  friend bool operator==(const LinkFidelity& a, const LinkFidelity& b) {
    return std::strcmp(a.name, b.name) == 0;
  }
  friend bool operator!=(const LinkFidelity& a, const LinkFidelity& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const LinkFidelity& f) { return os << f.name; }
};
inline constexpr LinkFidelity LinkFidelity::Flow{"flow"};
inline constexpr LinkFidelity LinkFidelity::Packet{"packet"};

// Every registered back end as (name, LinkFidelity), ordered by name: the choices of
// serving.link_fidelity.
const std::vector<std::pair<const char*, LinkFidelity>>& link_fidelity_names();

}  // namespace kappasim
