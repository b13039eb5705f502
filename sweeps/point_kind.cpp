#include "sweeps/point_kind.hpp"

#include "core/error.hpp"

namespace kappasim::sweep {

void KindRegistry::add(PointKind k) {
  if (k.name.empty() || !k.run) throw std::logic_error("sweep kind without a name or function");
  if (find(k.name)) throw std::logic_error("sweep kind '" + k.name + "' registered twice");
  m_kinds.push_back(std::move(k));
}

const PointKind* KindRegistry::find(const std::string& name) const {
  for (const auto& k : m_kinds)
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> KindRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& k : m_kinds) out.push_back(k.name);
  return out;
}

KindRegistry& kinds() {
  static KindRegistry registry;
  return registry;
}

}  // namespace kappasim::sweep
