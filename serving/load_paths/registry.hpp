// The load paths by name (ServingSpec::load_path's names): name → factory. Adding a path is one
// file in serving/load_paths/ plus one line in registry.cpp (or register_load_path at run time).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serving/load_paths/load_path.hpp"

namespace kappasim {

using LoadPathFactory = std::function<std::unique_ptr<LoadPathStrategy>()>;
// Adds (or replaces) a load path.
void register_load_path(const std::string& name, LoadPathFactory factory);
// The strategy called `name`; an unknown name is an InputError listing the valid ones.
std::unique_ptr<LoadPathStrategy> make_load_path(const std::string& name);
std::vector<std::string> load_path_strategy_names();  // sorted

// The built-in paths' factories (one file each).
std::unique_ptr<LoadPathStrategy> make_kernel_load_path();
std::unique_ptr<LoadPathStrategy> make_block_dma_load_path();
std::unique_ptr<LoadPathStrategy> make_layerwise_load_path();

}  // namespace kappasim
