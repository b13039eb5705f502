// The load paths' factories (serving.load_path's names; the registry itself and the names'
// declarations: serving/load_path_kind.hpp, core/registry.hpp). Adding a path is one file in
// serving/load_paths/ with a LoadPathRegistrar (or its Registrar line in registry.cpp beside the
// built-ins), plus its line in serving/CMakeLists.txt.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "serving/load_path_kind.hpp"
#include "serving/load_paths/load_path.hpp"

namespace kappasim {

using LoadPathFactory = LoadPathRegistry::Factory;
// Adds a load path at run time (tests) with the costs it declares (serving/load_path_kind.hpp);
// std::logic_error for a name already implemented.
void register_load_path(const std::string& name, LoadPathFactory factory, LoadPathCosts costs = {});
// The strategy called `name`; an unknown name is the registry's InputError naming
// serving.load_path, suggesting the nearest name and listing the valid ones.
std::unique_ptr<LoadPathStrategy> make_load_path(const std::string& name);
std::vector<std::string> load_path_strategy_names();  // sorted

// The built-in paths' factories (one file each).
std::unique_ptr<LoadPathStrategy> make_kernel_load_path();
std::unique_ptr<LoadPathStrategy> make_block_dma_load_path();
// `copy`: how it copies (the built-in's declared LoadPathCosts::copy: DMA).
std::unique_ptr<LoadPathStrategy> make_layerwise_load_path(CopyPath copy);

}  // namespace kappasim
