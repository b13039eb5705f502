#include "serving/load_paths/registry.hpp"

namespace kappasim {

namespace {
// The built-ins' implementations (their names, summaries and costs are declared in the pure
// serving/load_path_kind.cpp, which every config reader links). This file is linked wherever
// make_load_path is, so these registrations are never dropped.
const LoadPathRegistrar kKernel(load_paths(), "kernel", "", make_kernel_load_path);
const LoadPathRegistrar kLayerwise(load_paths(), "layerwise", "", [] {
  return make_layerwise_load_path(load_path_costs(LoadPath::Layerwise).copy);
});
const LoadPathRegistrar kBlockDma(load_paths(), "block_dma", "", make_block_dma_load_path);
}  // namespace

void register_load_path(const std::string& name, LoadPathFactory factory, LoadPathCosts costs) {
  load_paths().add(name, "", factory, costs);
}

std::unique_ptr<LoadPathStrategy> make_load_path(const std::string& name) {
  return load_paths().make(name);
}

std::vector<std::string> load_path_strategy_names() { return load_paths().names(); }

}  // namespace kappasim
