#include "serving/load_path_kind.hpp"

namespace kappasim {

LoadPathRegistry& load_paths() {
  static LoadPathRegistry registry("load-path", "load path", "serving.load_path");
  return registry;
}

namespace {
// The built-ins' names, for every program that reads a config (their factories:
// serving/load_paths/registry.cpp).
const Declaration<LoadPathRegistry> kKernel(
    load_paths(), "kernel",
    "LMCache default: a zero-copy SM copy kernel reads pinned host memory per chunk, then compute");
const Declaration<LoadPathRegistry> kLayerwise(
    load_paths(), "layerwise",
    "LMCache use_layerwise: one DMA per layer per chunk, overlapped with the layers' compute");
const Declaration<LoadPathRegistry> kBlockDma(
    load_paths(), "block_dma",
    "vLLM native OffloadingConnector: cudaMemcpyAsync per 16-token block, then compute");
}  // namespace

const std::vector<std::pair<const char*, LoadPath>>& load_path_names() {
  // Rebuilt if a registration came after the last call (all come before main in practice).
  static std::vector<std::pair<const char*, LoadPath>> names;
  const auto entries = load_paths().entries();
  if (names.size() != entries.size()) {
    names.clear();
    for (const auto* e : entries) names.emplace_back(e->name.c_str(), LoadPath{e->name.c_str()});
  }
  return names;
}

}  // namespace kappasim
