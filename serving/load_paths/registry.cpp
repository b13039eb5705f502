#include "serving/load_paths/registry.hpp"

#include <map>
#include <mutex>

#include "core/error.hpp"

namespace kappasim {

namespace {
std::map<std::string, LoadPathFactory>& table() {
  // The built-ins, registered on first use (no static-initialisation order to rely on).
  static std::map<std::string, LoadPathFactory> t = {
      {"kernel", make_kernel_load_path},
      {"block_dma", make_block_dma_load_path},
      {"layerwise", make_layerwise_load_path},
  };
  return t;
}
std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void register_load_path(const std::string& name, LoadPathFactory factory) {
  std::lock_guard<std::mutex> lock(table_mutex());
  table()[name] = std::move(factory);
}

std::unique_ptr<LoadPathStrategy> make_load_path(const std::string& name) {
  LoadPathFactory f;
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    const auto it = table().find(name);
    if (it != table().end()) f = it->second;
  }
  if (!f) {
    std::string valid;
    for (const std::string& n : load_path_strategy_names())
      valid += (valid.empty() ? "" : ", ") + n;
    throw InputError("serving.load_path: unknown load path '" + name + "' (valid: " + valid + ")");
  }
  return f();
}

std::vector<std::string> load_path_strategy_names() {
  std::lock_guard<std::mutex> lock(table_mutex());
  std::vector<std::string> n;
  for (const auto& [name, f] : table()) n.push_back(name);
  return n;
}

}  // namespace kappasim
