#include "serving/router_policy.hpp"

namespace kappasim {

RouterRegistry& routers() {
  static RouterRegistry registry("router", "router", "cluster.router");  // built on first use
  return registry;
}

const std::vector<std::pair<const char*, RouterKind>>& router_names() {
  static std::vector<std::pair<const char*, RouterKind>> names;
  const auto entries = routers().entries();
  if (names.size() != entries.size()) {
    names.clear();
    for (const auto* e : entries) names.emplace_back(e->name.c_str(), RouterKind{e->name.c_str()});
  }
  return names;
}

const char* router_name(RouterKind r) { return r.name; }

std::unique_ptr<RouterPolicy> make_router(RouterKind r) { return routers().make(r.name); }

}  // namespace kappasim
