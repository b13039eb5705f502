// Built-in presets by name for the unit tests (the embedded presets/, as `-m NAME` reads them).
#pragma once

#include <string>

#include "core/config.hpp"
#include "models/llm/architecture.hpp"
#include "systems/system_spec.hpp"

namespace kappasim::test {

inline ModelSpec model_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<ModelSpec>(ref, "model", "model");
}
inline SystemSpec system_preset(const std::string& name) {
  ConfigNode ref = ConfigNode::make_scalar(name);
  return read_preset_config<SystemSpec>(ref, "system", "system");
}

}  // namespace kappasim::test
