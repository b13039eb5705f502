// The link back-end registry: a name ("flow", "packet", ...) → a factory that builds the
// LinkModule carrying a system's host<->GPU (and on-GPU Local) transfers. serving.link_fidelity
// names one. Adding a back end: one file with the class and one register_link_backend() call
// (or a line in link_backend.cpp's built-ins).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "interconnects/link_model.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {

using LinkBackendFactory =
    std::function<std::unique_ptr<LinkModule>(const sc_core::sc_module_name&, const SystemSpec&)>;

// Builds the back end `fidelity` for system `s` (call during elaboration). Unknown name →
// InputError listing the registered ones; a system the back end cannot represent → its own
// InputError.
std::unique_ptr<LinkModule> make_link_backend(const std::string& fidelity,
                                              const sc_core::sc_module_name& name,
                                              const SystemSpec& s);
// A replica of `nodes` copies of system `s` (issue 14, multi-node: GPU g on node g / s.gpus).
// nodes == 1: the call above. More: the flow back end over build_topology(s, nodes); any other
// back end → InputError naming serving.link_fidelity (they model one node).
std::unique_ptr<LinkModule> make_link_backend(const std::string& fidelity,
                                              const sc_core::sc_module_name& name,
                                              const SystemSpec& s, int nodes);
// Registers (or replaces) a back end by name.
void register_link_backend(const std::string& fidelity, LinkBackendFactory factory);
// Registered names, sorted.
std::vector<std::string> link_backend_names();

}  // namespace kappasim
