#include "sweeps/point_kind.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace kappasim::sweep {

void KindRegistry::add(PointKind k) {
  if (k.name.empty() || !k.run) throw std::logic_error("sweep kind without a name or function");
  if (find(k.name)) throw std::logic_error("sweep kind '" + k.name + "' registered twice");
  // Sorted by name: the listing does not depend on the order of static initialisation.
  const auto at = std::find_if(m_kinds.begin(), m_kinds.end(),
                               [&k](const PointKind& e) { return k.name < e.name; });
  m_kinds.insert(at, std::move(k));
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
