#include "serving/load_path_kind.hpp"

#include <cstring>

#include "serving/stack_profile.hpp"

namespace kappasim {

LoadPathRegistry& load_paths() {
  static LoadPathRegistry registry("load-path", "load path", "serving.load_path");
  return registry;
}

namespace {
// The stack's fixed CPU per retrieved request (every path's).
RetrieveCost retrieve_fixed(const StackProfile& p, std::int64_t requests) {
  RetrieveCost c;
  c.cpu_before_s = static_cast<double>(requests) * p.retrieve_fixed_s;
  return c;
}

// LMCache's retrieve (kernel and layer-wise paths): one copy (per layer) per chunk, after the
// per-chunk re-hash.
RetrieveCost lmcache_retrieve(const StackProfile& p, std::int64_t requests, std::int64_t chunks) {
  if (requests == 0) return RetrieveCost{0, 0, 0, 0, chunks};
  RetrieveCost c = retrieve_fixed(p, requests);
  c.copies = chunks;
  c.cpu_before_s += static_cast<double>(chunks) * p.retrieve_hash_per_chunk_s;
  return c;
}

// The copy kernel: besides, a GPU gap between chunks and the Python per chunk overlapped with
// the copies.
RetrieveCost kernel_retrieve(const StackProfile& p, std::int64_t requests, std::int64_t chunks,
                             std::int64_t, int) {
  RetrieveCost c = lmcache_retrieve(p, requests, chunks);
  if (requests == 0) return c;
  const double n = static_cast<double>(chunks);
  c.gpu_gap_s = n * p.retrieve_gap_per_chunk_s;
  c.cpu_overlap_s = n * p.retrieve_python_per_chunk_s;
  return c;
}

// The layer-wise path: besides, per layer the CPU that issues (and logs) the layer's objects.
RetrieveCost layerwise_retrieve(const StackProfile& p, std::int64_t requests, std::int64_t chunks,
                                std::int64_t, int) {
  RetrieveCost c = lmcache_retrieve(p, requests, chunks);
  if (requests == 0) return c;
  c.per_layer_cpu_s =
      static_cast<double>(chunks) * (p.layerwise_per_object_s + p.layerwise_log_per_object_s);
  return c;
}

// vLLM's native connector: one cudaMemcpyAsync per block (or per block, layer and K/V), each
// issued by the CPU alongside the copies.
RetrieveCost block_dma_retrieve(const StackProfile& p, std::int64_t requests, std::int64_t,
                                std::int64_t blocks, int layers) {
  const std::int64_t copies = p.copy_unit == NativeCopyUnit::BlockLayerKv
                                  ? blocks * static_cast<std::int64_t>(layers) * 2
                                  : blocks;
  if (requests == 0) return RetrieveCost{0, 0, 0, 0, copies};
  RetrieveCost c = retrieve_fixed(p, requests);
  c.copies = copies;
  c.cpu_overlap_s = static_cast<double>(copies) * p.native_issue_per_copy_s;
  return c;
}

// A built-in's costs: the family whose connector implements it, its copy path, whether it copies
// per layer (LMCache's layer-wise path: its lookup also resolves per-layer keys), whether the
// tier holds blocks, its retrieve.
using RetrieveFn = decltype(LoadPathCosts::retrieve);
LoadPathCosts builtin(StackFamily family, CopyPath copy, bool per_layer, bool blocks,
                      RetrieveFn retrieve) {
  LoadPathCosts c;
  c.has_family = true;
  c.family = family;
  c.copy = copy;
  c.per_layer = c.lookup_per_layer_keys = per_layer;
  c.block_granular = blocks;
  c.retrieve = retrieve;
  return c;
}

// The built-ins' names and costs, for every program that reads a config (their factories:
// serving/load_paths/registry.cpp).
const Declaration<LoadPathRegistry> kKernel(
    load_paths(), "kernel",
    "LMCache default: a zero-copy SM copy kernel reads pinned host memory per chunk, then compute",
    builtin(StackFamily::Lmcache, CopyPath::Kernel, false, false, kernel_retrieve));
const Declaration<LoadPathRegistry> kLayerwise(
    load_paths(), "layerwise",
    "LMCache use_layerwise: one DMA per layer per chunk, overlapped with the layers' compute",
    builtin(StackFamily::Lmcache, CopyPath::Dma, true, false, layerwise_retrieve));
const Declaration<LoadPathRegistry> kBlockDma(
    load_paths(), "block_dma",
    "vLLM native OffloadingConnector: cudaMemcpyAsync per 16-token block, then compute",
    builtin(StackFamily::VllmNative, CopyPath::Dma, false, true, block_dma_retrieve));
}  // namespace

const LoadPathCosts& load_path_costs(LoadPath p) {
  // A run asks for its one path at every arrival and step: the entry found last, compared by
  // name, saves the registry's map lookup (entries are map nodes, stable while it lives).
  thread_local const LoadPathRegistry::Entry* last = nullptr;
  if (!last || std::strcmp(last->name.c_str(), p.name) != 0) last = &load_paths().at(p.name);
  return last->traits;
}

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
