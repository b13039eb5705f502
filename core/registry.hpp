// A name registry for pluggable implementations of one small interface (scheduler policies,
// routers, ...): name → factory. Each implementation registers itself from its own .cpp with a
// static `Registrar`, so adding one is one file plus its line in the CMake source list; no switch
// elsewhere changes. Compare Ramulator 2: each IScheduler implementation registers itself with
// RAMULATOR_REGISTER_IMPLEMENTATION(interface, class, name, description) in its own file, and the
// project builds as a shared library, so no registering object is dropped. DRAMSys has one
// SchedulerIF too, but its controller picks the class with an if-chain on a config enum, so a new
// scheduler edits the controller; that is what this registry avoids.
//
// Listing order is by name (std::map), never by static-initialisation order, which differs
// between link orders. An unknown name is an InputError that lists the valid names and suggests
// the nearest one, as every other config choice does.
//
// Linking: a registering file is referenced by nothing, so the linker drops it from a static
// archive. Such files are built as an OBJECT library whose objects every executable links
// directly (serving/CMakeLists.txt shows how).
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"

namespace kappasim {

template <class Interface, class... Args>
class Registry {
 public:
  using Factory = std::unique_ptr<Interface> (*)(Args...);
  struct Entry {
    const char* name = "";     // a string literal: stable for the program's life
    const char* summary = "";  // one line for listings
    Factory make = nullptr;
  };

  // `what`: the kind, for messages ("scheduler policy").
  explicit Registry(const char* what) : m_what(what) {}

  // std::logic_error on an empty or duplicate name or a null factory (a programming error,
  // found by the first run of any test).
  void add(const char* name, const char* summary, Factory make) {
    if (!name || !*name || !make)
      throw std::logic_error(std::string(m_what) + " registry: empty name or null factory");
    if (!m_entries.emplace(name, Entry{name, summary ? summary : "", make}).second)
      throw std::logic_error(std::string(m_what) + " registry: '" + name + "' is registered twice");
  }

  const Entry* find(std::string_view name) const {
    const auto it = m_entries.find(std::string(name));
    return it == m_entries.end() ? nullptr : &it->second;
  }
  // Every entry, ordered by name.
  std::vector<const Entry*> entries() const {
    std::vector<const Entry*> out;
    for (const auto& kv : m_entries) out.push_back(&kv.second);
    return out;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& kv : m_entries) out.push_back(kv.first);
    return out;
  }
  // The entry for `name`; InputError "<key>: unknown <what> 'x'; did you mean 'y'? (expected
  // one of a, b, c)" when there is none (`key` names the config key, may be empty).
  const Entry& at(std::string_view name, const std::string& key = "") const {
    if (const Entry* e = find(name)) return *e;
    const std::vector<std::string> valid = names();
    std::string all;
    for (const auto& v : valid) all += (all.empty() ? "" : ", ") + v;
    const std::string near = nearest(name, valid);
    throw InputError(
        (key.empty() ? "" : key + ": ") + "unknown " + m_what + " '" + std::string(name) + "'" +
        (near.empty() ? "" : "; did you mean '" + near + "'?") + " (expected one of " + all + ")");
  }
  std::unique_ptr<Interface> make(std::string_view name, Args... args) const {
    return at(name).make(std::forward<Args>(args)...);
  }

 private:
  const char* m_what;
  std::map<std::string, Entry> m_entries;
};

// Registers at static initialisation: `const Registrar<R> reg(registry(), "name", "summary",
// factory);` in an anonymous namespace of the implementation's own file.
template <class R>
struct Registrar {
  Registrar(R& registry, const char* name, const char* summary, typename R::Factory make) {
    registry.add(name, summary, make);
  }
};

}  // namespace kappasim
