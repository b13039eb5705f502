// The one name registry for every pluggable kind (issue 21 "One registry mechanism"): scheduler
// policies (serving.policy), routers (cluster.router), load paths (serving.load_path), link back
// ends (serving.link_fidelity), sweep point kinds (a sweep spec's kind:) and, through an adapter
// over their preset files, serving stack profiles (serving.stack). Every kind shares:
//  - registration from the implementation's own .cpp with a static `Registrar` (or a
//    `Declaration`, below), so adding one is one file plus its line in the CMake source list and
//    no switch or enum elsewhere changes;
//  - name → value (a factory for an interface: `Registry<Interface, Args...>`; any other value:
//    `NamedRegistry<V>`, e.g. the sweep kinds' point functions), with a one-line summary;
//  - an unknown name is an InputError naming the config key, suggesting the nearest name and
//    listing the valid ones ("<key>: unknown <what> 'x'; did you mean 'y'? (expected one of
//    a, b, c)"); through ConfigReader::choice a config file's value gets its file:line as well;
//  - a listing: every registry alive is in `all_registries()`, which `kappasim list [KIND]`
//    prints (apps/kappasim/cmd_list.cpp).
// Compare Ramulator 2: each IScheduler implementation registers itself with
// RAMULATOR_REGISTER_IMPLEMENTATION(interface, class, name, description) in its own file, and the
// project builds as a shared library, so no registering object is dropped. DRAMSys has one
// SchedulerIF too, but its controller picks the class with an if-chain on a config enum, so a new
// scheduler edits the controller; that is what this registry avoids.
//
// Declared and implemented (a kind whose implementation is SystemC but whose names a pure layer
// reads from config: load paths, link back ends): the pure layer *declares* the built-in names
// with their summaries (`Declaration`), so a config naming one reads in every binary, and the
// SystemC layer gives each its factory with an ordinary `Registrar`; a name registered there
// only (a new back end in one file) is declared by that registration too. `make` on a name whose
// implementation is not linked is a std::logic_error (a build error, never bad input).
//
// Listing order is by name (std::map), never by static-initialisation order, which differs
// between link orders.
//
// Linking: a registering file is referenced by nothing, so the linker drops it from a static
// archive. Such files are built as an OBJECT library whose objects every executable links
// directly (serving/CMakeLists.txt shows how), or sit in a file the product references anyway.
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

// What every registry shows the listing and its error messages, whatever its value type.
class RegistryBase {
 public:
  struct Item {
    std::string name;
    std::string summary;  // one line
  };
  // `id`: the kind's short name for `kappasim list ID` ("policy", "load-path"); `what`: the kind
  // in messages ("scheduler policy"); `key`: the config key that selects one ("serving.policy";
  // may be empty). The registry is in all_registries() while it lives.
  RegistryBase(const char* id, const char* what, const char* key);
  virtual ~RegistryBase();
  RegistryBase(const RegistryBase&) = delete;
  RegistryBase& operator=(const RegistryBase&) = delete;

  const char* id() const { return m_id; }
  const char* what() const { return m_what; }
  const char* key() const { return m_key; }
  // Every name with its summary, ordered by name.
  virtual std::vector<Item> listing() const = 0;
  std::vector<std::string> listed_names() const;
  // "unknown <what> 'x'; did you mean 'y'? (expected one of a, b, c)".
  std::string unknown_message(std::string_view name) const;
  // InputError "<key>: " + unknown_message(name); `key` empty: the registry's own key.
  [[noreturn]] void throw_unknown(std::string_view name, const std::string& key = "") const;

 private:
  const char* m_id;
  const char* m_what;
  const char* m_key;
};

// Every registry alive (the kinds' registries are built at static initialisation by their first
// registration), ordered by id.
std::vector<const RegistryBase*> all_registries();
// The registry with this id; InputError "kappasim list: unknown kind 'x'; did you mean 'y'?
// (expected one of ...)" when there is none.
const RegistryBase& registry_by_id(std::string_view id);

// What an entry declares beside its name and summary: nothing by default. A kind whose entries
// carry plain data that a pure layer reads by name (a load path's software costs:
// serving/load_path_kind.hpp) names its own traits type; the declaration (or the registration,
// for a name registered without one) gives each entry its traits.
struct NoTraits {};

template <class V, class T = NoTraits>
class NamedRegistry : public RegistryBase {
 public:
  struct Entry {
    std::string name;     // stable for the registry's life (map node)
    std::string summary;  // one line for listings
    V value{};            // V{} while only declared
    T traits{};           // what the entry declares (its declaration's, else its registration's)
  };
  using value_type = V;
  using traits_type = T;

  NamedRegistry(const char* id, const char* what, const char* key) : RegistryBase(id, what, key) {}
  // A registry for tests and other local uses: id and what the same, no config key.
  explicit NamedRegistry(const char* what) : RegistryBase(what, what, "") {}

  // std::logic_error on an empty or duplicate name or an empty value (a programming error,
  // found by the first run of any test). A name only declared so far gets its value (and the
  // summary, when the declaration had none); it keeps its declared traits.
  void add(const std::string& name, const std::string& summary, V value, T traits = {}) {
    if (name.empty() || !value)
      throw std::logic_error(std::string(what()) + " registry: empty name or value");
    auto [it, fresh] =
        m_entries.try_emplace(name, Entry{name, summary, std::move(value), std::move(traits)});
    if (fresh) return;
    if (it->second.value)
      throw std::logic_error(std::string(what()) + " registry: '" + name + "' is registered twice");
    it->second.value = std::move(value);
    if (it->second.summary.empty()) it->second.summary = summary;
  }
  // The name, summary and traits without a value (see "Declared and implemented" above). The
  // declaration's traits are the entry's, whichever of declaration and registration came first.
  void declare(const std::string& name, const std::string& summary, T traits = {}) {
    if (name.empty()) throw std::logic_error(std::string(what()) + " registry: empty name");
    auto [it, fresh] = m_entries.try_emplace(name, Entry{name, summary, V{}, traits});
    if (fresh) return;
    if (it->second.summary.empty()) it->second.summary = summary;
    it->second.traits = std::move(traits);
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
  std::vector<Item> listing() const override {
    std::vector<Item> out;
    for (const auto& kv : m_entries) out.push_back({kv.first, kv.second.summary});
    return out;
  }
  // The entry for `name`; the InputError of throw_unknown when there is none (`key`: the
  // config key to name, default the registry's).
  const Entry& at(std::string_view name, const std::string& key = "") const {
    if (const Entry* e = find(name)) return *e;
    throw_unknown(name, key);
  }
  // The value of `name` (unknown: InputError; declared but not implemented: std::logic_error).
  const V& value(std::string_view name, const std::string& key = "") const {
    const Entry& e = at(name, key);
    if (!e.value)
      throw std::logic_error(std::string(what()) + " '" + e.name +
                             "' is declared but its implementation is not linked into this "
                             "program");
    return e.value;
  }
  // The traits of `name` (unknown: InputError), whether or not its implementation is linked.
  const T& traits(std::string_view name, const std::string& key = "") const {
    return at(name, key).traits;
  }

 private:
  std::map<std::string, Entry> m_entries;
};

// A registry of factories for implementations of one small interface, each entry with traits T.
template <class Interface, class T, class... Args>
class TraitRegistry : public NamedRegistry<std::unique_ptr<Interface> (*)(Args...), T> {
 public:
  using Factory = std::unique_ptr<Interface> (*)(Args...);
  using NamedRegistry<Factory, T>::NamedRegistry;

  std::unique_ptr<Interface> make(std::string_view name, Args... args) const {
    return this->value(name)(std::forward<Args>(args)...);
  }
};

// A registry of factories for implementations of one small interface.
template <class Interface, class... Args>
class Registry : public TraitRegistry<Interface, NoTraits, Args...> {
 public:
  using TraitRegistry<Interface, NoTraits, Args...>::TraitRegistry;
};

// Registers at static initialisation: `const Registrar<R> reg(registry(), "name", "summary",
// value);` in an anonymous namespace of the implementation's own file (with the entry's traits
// as a fifth argument when the kind has them and no declaration gives them).
template <class R>
struct Registrar {
  Registrar(R& registry, const char* name, const char* summary, typename R::value_type value,
            typename R::traits_type traits = {}) {
    registry.add(name, summary, std::move(value), std::move(traits));
  }
};

// Declares a name (its summary and traits) at static initialisation, for a pure layer that reads
// the name from config while the implementation is registered by a SystemC layer.
template <class R>
struct Declaration {
  Declaration(R& registry, const char* name, const char* summary,
              typename R::traits_type traits = {}) {
    registry.declare(name, summary, std::move(traits));
  }
};

}  // namespace kappasim
