// serving.load_path's names: the load-path registry (core/registry.hpp) and the value the config
// holds. Load paths are SystemC strategies (serving/load_paths/, serving_sim layer), but their
// names are read with the config in every layer above serving: so this pure file *declares* the
// built-in names with their summaries (load_path_kind.cpp) and serving/load_paths/registry.cpp
// gives each its factory. A new path is one file in serving/load_paths/ whose Registrar both
// declares and implements it: serving.load_path then accepts its name, with no enum to edit.
// A path's costs are its entry's traits (LoadPathCosts, declared with its name): which stacks
// support it, how its copies move KV, and its software costs on a stack profile. The pure cost
// model (serving/stack_profile, serving/request_cost, the cluster's estimator) reads them by
// name, so a newly registered path carries its own; a stack of family `ideal` supports any
// registered path.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "core/registry.hpp"
#include "interconnects/transfer.hpp"

namespace kappasim {

class LoadPathStrategy;  // serving/load_paths/load_path.hpp (SystemC)
struct StackProfile;     // serving/stack_profile.hpp
struct RetrieveCost;     // serving/stack_profile.hpp
enum class StackFamily;  // serving/stack_profile.hpp

// What a load path declares with its name (its registry entry's traits): what the pure cost
// model charges for it. A path registered without them has none of its own: only an `ideal`
// stack supports it, its copies are DMA copies, and its retrieve costs the stack's fixed
// per-request CPU alone.
struct LoadPathCosts {
  // The stack family whose connector implements it (an `ideal` stack supports every path);
  // false `has_family`: none.
  bool has_family = false;
  StackFamily family{};
  // How its copies move host-DRAM KV (a copy kernel holds SMs; DMA copy engines do not).
  CopyPath copy = CopyPath::Dma;
  // One copy per layer per chunk, pipelined with the layers' compute (the load overlaps it).
  bool per_layer = false;
  // The stack's lookup resolves a key per layer for every hit chunk (LMCache's layer-wise keys).
  bool lookup_per_layer_keys = false;
  // The tier holds and loads vLLM blocks (serving.block_tokens), not chunks (chunk_tokens).
  bool block_granular = false;
  // Its retrieve on stack `p`: `requests` requests loading `chunks` tier entries (`blocks`
  // 16-token blocks) of a `layers`-layer model (serving/stack_profile.hpp stack_retrieve). Null:
  // the stack's fixed per-request CPU alone, no copies counted.
  RetrieveCost (*retrieve)(const StackProfile& p, std::int64_t requests, std::int64_t chunks,
                           std::int64_t blocks, int layers) = nullptr;
};

using LoadPathRegistry = TraitRegistry<LoadPathStrategy, LoadPathCosts>;
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

// The costs load path `p` declares (its registry entry's traits); an unknown name is the
// registry's InputError naming serving.load_path, with the nearest name.
const LoadPathCosts& load_path_costs(LoadPath p);

// Every registered load path as (name, LoadPath), ordered by name: the choices of
// serving.load_path.
const std::vector<std::pair<const char*, LoadPath>>& load_path_names();

}  // namespace kappasim
