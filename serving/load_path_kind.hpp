// serving.load_path's names: the load-path registry (core/registry.hpp) and the value the config
// holds. Load paths are SystemC strategies (serving/load_paths/, serving_sim layer), but their
// names are read with the config in every layer above serving: so this pure file *declares* the
// built-in names with their summaries (load_path_kind.cpp) and serving/load_paths/registry.cpp
// gives each its factory. A new path is one file in serving/load_paths/ whose Registrar both
// declares and implements it: serving.load_path then accepts its name, with no enum to edit.
// The pure cost model (serving/stack_profile: which stack supports a path and its software
// costs; serving/request_cost) knows the three built-ins by name; a stack of family `ideal`
// supports any registered path.
#pragma once

#include <cstring>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "core/registry.hpp"

namespace kappasim {

class LoadPathStrategy;  // serving/load_paths/load_path.hpp (SystemC)

using LoadPathRegistry = Registry<LoadPathStrategy>;
LoadPathRegistry& load_paths();  // id "load-path", key serving.load_path
using LoadPathRegistrar = Registrar<LoadPathRegistry>;

// A registered load path's name: the value of serving.load_path. A value type compared by name
// (like Policy, serving/scheduler_policy.hpp): code keeps writing `sv.load_path =
// LoadPath::Layerwise`; any other registered name works the same way (`LoadPath{"my_path"}`).
// `name` must outlive the config (a string literal or a registry entry's name).
struct LoadPath {
  const char* name = "kernel";

  static const LoadPath Kernel;     // LMCache default: SM copy kernel reading pinned host memory
  static const LoadPath Layerwise;  // LMCache use_layerwise: per layer per chunk a DMA
  static const LoadPath BlockDma;   // vLLM native OffloadingConnector: DMA per 16-token block

  friend bool operator==(const LoadPath& a, const LoadPath& b) {
    return std::strcmp(a.name, b.name) == 0;
  }
  friend bool operator!=(const LoadPath& a, const LoadPath& b) { return !(a == b); }
  friend std::ostream& operator<<(std::ostream& os, const LoadPath& p) { return os << p.name; }
};
inline constexpr LoadPath LoadPath::Kernel{"kernel"};
inline constexpr LoadPath LoadPath::Layerwise{"layerwise"};
inline constexpr LoadPath LoadPath::BlockDma{"block_dma"};

// Every registered load path as (name, LoadPath), ordered by name: the choices of
// serving.load_path.
const std::vector<std::pair<const char*, LoadPath>>& load_path_names();

}  // namespace kappasim
