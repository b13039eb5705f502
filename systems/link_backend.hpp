// The link back ends' factories: a name ("flow", "packet", ...) → the LinkModule carrying a
// system's host<->GPU (and on-GPU Local, CXL, NVMe, peer, remote) transfers. serving.link_fidelity
// names one. The registry and the built-in names' declarations: systems/link_backends.hpp
// (core/registry.hpp). Adding a back end: one file with the class and a LinkBackendRegistrar
// (or its line in link_backend.cpp beside the built-ins); `kappasim list link-backend` lists it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "interconnects/link_model.hpp"
#include "systems/link_backends.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

using LinkBackendFactory = LinkBackendRegistry::Factory;

// Builds the back end `fidelity` for `nodes` copies of system `s` (issue 14, multi-node: GPU g
// on node g / s.gpus; call during elaboration). Unknown name → the registry's InputError naming
// serving.link_fidelity; a system or node count the back end cannot carry → its refusal
// (LinkModel::refusal: packet models one PCIe node).
std::unique_ptr<LinkModule> make_link_backend(const std::string& fidelity,
                                              const sc_core::sc_module_name& name,
                                              const SystemSpec& s, int nodes = 1);
// Registers a back end by name at run time (tests); std::logic_error for a name already
// implemented.
void register_link_backend(const std::string& fidelity, LinkBackendFactory factory);
// Registered names, sorted.
std::vector<std::string> link_backend_names();

}  // namespace kappasim
