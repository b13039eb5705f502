// A kind of pluggable profile kept as preset files rather than code (serving stacks:
// presets/stacks/; P/D transfer engines: presets/transfer-engines/) shown to the one registry
// listing (core/registry.hpp: `kappasim list ID`), one row per preset with its display_name. The
// config key resolves a name through the preset registry, whose unknown-name error names the key
// and suggests the nearest preset, like every registry.
#pragma once

#include <string>
#include <vector>

#include "core/registry.hpp"

namespace kappasim {

class PresetListing : public RegistryBase {
 public:
  // `kind`: the preset kind (PresetRegistry); the rest as RegistryBase's.
  PresetListing(const char* kind, const char* id, const char* what, const char* key)
      : RegistryBase(id, what, key), m_kind(kind) {}
  std::vector<Item> listing() const override;

 private:
  const char* m_kind;
};

}  // namespace kappasim
