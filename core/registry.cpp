#include "core/registry.hpp"

#include "core/preset_listing.hpp"

#include <algorithm>
#include <cstring>

namespace kappasim {

namespace {
// Every registry alive. Built on first use: registries are constructed at static
// initialisation, in any order.
std::vector<const RegistryBase*>& catalog() {
  static std::vector<const RegistryBase*> c;
  return c;
}
std::string joined(const std::vector<std::string>& names) {
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return all;
}
}  // namespace

RegistryBase::RegistryBase(const char* id, const char* what, const char* key)
    : m_id(id ? id : ""), m_what(what ? what : ""), m_key(key ? key : "") {
  catalog().push_back(this);
}

RegistryBase::~RegistryBase() {
  auto& c = catalog();
  c.erase(std::remove(c.begin(), c.end(), this), c.end());
}

std::vector<std::string> RegistryBase::listed_names() const {
  std::vector<std::string> out;
  for (const Item& i : listing()) out.push_back(i.name);
  return out;
}

std::string RegistryBase::unknown_message(std::string_view name) const {
  const std::vector<std::string> valid = listed_names();
  const std::string near = nearest(name, valid);
  return "unknown " + std::string(m_what) + " '" + excerpt(std::string(name)) + "'" +
         (near.empty() ? "" : "; did you mean '" + near + "'?") + " (expected one of " +
         joined(valid) + ")";
}

void RegistryBase::throw_unknown(std::string_view name, const std::string& key) const {
  const std::string k = key.empty() ? std::string(m_key) : key;
  throw InputError((k.empty() ? "" : k + ": ") + unknown_message(name));
}

std::vector<const RegistryBase*> all_registries() {
  std::vector<const RegistryBase*> out = catalog();
  std::stable_sort(out.begin(), out.end(), [](const RegistryBase* a, const RegistryBase* b) {
    return std::strcmp(a->id(), b->id()) < 0;
  });
  return out;
}

const RegistryBase& registry_by_id(std::string_view id) {
  std::vector<std::string> ids;
  for (const RegistryBase* r : all_registries()) {
    if (id == r->id()) return *r;
    ids.emplace_back(r->id());
  }
  const std::string near = nearest(id, ids);
  throw InputError("kappasim list: unknown kind '" + excerpt(std::string(id)) + "'" +
                   (near.empty() ? "" : "; did you mean '" + near + "'?") + " (expected one of " +
                   joined(ids) + ")");
}

std::vector<RegistryBase::Item> PresetListing::listing() const {
  const PresetRegistry& reg = PresetRegistry::instance();
  std::vector<Item> out;
  for (const std::string& name : reg.names(m_kind)) {
    const ConfigNode* n = reg.find(m_kind, name);
    const ConfigNode* dn = n ? n->find("display_name") : nullptr;
    out.push_back({name, dn ? dn->scalar : std::string()});
  }
  return out;
}

}  // namespace kappasim
