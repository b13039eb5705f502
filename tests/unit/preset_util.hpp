// Built-in presets by name for the unit tests (the embedded presets/, as `-m NAME` reads them).
#pragma once

#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
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

// A model from inline YAML (read as a `model:` section), and the InputError text it raises ("" when
// none): the layer-pattern and model-variant tests' bad-input checks.
inline ModelSpec inline_model(const std::string& yaml) {
  ConfigNode n = parse_yaml(yaml, "inline-model");
  return read_config<ModelSpec>(n, "model");
}
inline std::string model_error_of(const std::string& yaml) {
  try {
    inline_model(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
// The InputError text `f` raises ("" when none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
inline bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// A tiny 4-layer GQA model: 4 q / 2 kv heads of 8, hidden 32.
inline constexpr const char* kTinyModel = R"(
name: tiny
num_layers: 4
hidden_size: 32
vocab_size: 100
attention: {type: gqa, num_q_heads: 4, num_kv_heads: 2, head_dim: 8}
mlp: {type: dense, intermediate_size: 64}
)";

}  // namespace kappasim::test
