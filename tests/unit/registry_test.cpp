// core/registry.hpp: the one name registry every pluggable kind uses (issue 21). What a kind
// shares: a listing with one-line summaries, the catalogue of every registry (kappasim list),
// the did-you-mean InputError naming the config key, and the declared/implemented split for
// kinds whose names a pure layer reads while SystemC implements them (load paths, link back
// ends). This binary links the pure layers only, as any config reader may.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"
#include "serving/load_path_kind.hpp"
#include "serving/router_policy.hpp"
#include "serving/scheduler_policy.hpp"
#include "serving/serving_spec.hpp"
#include "serving/stack_profile.hpp"
#include "sweeps/point_kind.hpp"
#include "systems/link_backends.hpp"

namespace kappasim {
namespace registry_test {
namespace {

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

struct Widget {
  virtual ~Widget() = default;
};
std::unique_ptr<Widget> make_widget() { return std::make_unique<Widget>(); }

// The six kinds issue 21 names and the P/D transfer-engine profiles, each with the config key
// that selects one.
TEST(Registry, CatalogueHoldsEveryPluggableKindWithItsConfigKey) {
  std::vector<std::pair<std::string, std::string>> kinds;
  for (const RegistryBase* r : all_registries()) kinds.emplace_back(r->id(), r->key());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"link-backend", "serving.link_fidelity"},
      {"load-path", "serving.load_path"},
      {"policy", "serving.policy"},
      {"router", "cluster.router"},
      {"stack", "serving.stack"},
      {"sweep-kind", "kind"},
      {"transfer-engine", "cluster.handoff"}};
  EXPECT_EQ(kinds, want);
  for (const RegistryBase* r : all_registries()) {
    EXPECT_FALSE(r->listing().empty()) << r->id();
    for (const auto& item : r->listing())
      EXPECT_NE(item.summary, "") << r->id() << " " << item.name;
  }
  // The built-in names, by name whatever the order of registration.
  EXPECT_EQ(registry_by_id("load-path").listed_names(),
            (std::vector<std::string>{"block_dma", "kernel", "layerwise"}));
  EXPECT_EQ(registry_by_id("link-backend").listed_names(),
            (std::vector<std::string>{"flow", "packet"}));
  // Stack profiles are preset files, listed through the adapter: presets/stacks/*.yaml.
  const std::vector<std::string> stacks = registry_by_id("stack").listed_names();
  for (const char* s : {"ideal", "lmcache-0.3.5", "vllm-native-0.12"})
    EXPECT_NE(std::find(stacks.begin(), stacks.end(), s), stacks.end()) << s;
  // Transfer-engine profiles likewise: presets/transfer-engines/*.yaml.
  EXPECT_EQ(registry_by_id("transfer-engine").listed_names(),
            (std::vector<std::string>{"lmcache-pd", "mooncake-te", "nixl-vllm", "p2p-nccl"}));
  EXPECT_TRUE(has(input_error_of([] { registry_by_id("stak"); }),
                  "kappasim list: unknown kind 'stak'; did you mean 'stack'?"));
}

// An unknown name: the key, the nearest name, every valid one (the registry's text), and through
// the config reader the file position too.
TEST(Registry, UnknownNameNamesTheKeyAndSuggestsTheNearest) {
  EXPECT_EQ(input_error_of([] { load_paths().at("kernal"); }),
            "serving.load_path: unknown load path 'kernal'; did you mean 'kernel'? (expected one "
            "of block_dma, kernel, layerwise)");
  EXPECT_EQ(input_error_of([] { link_backends().at("flwo"); }),
            "serving.link_fidelity: unknown link back end 'flwo'; did you mean 'flow'? (expected "
            "one of flow, packet)");
  EXPECT_EQ(input_error_of([] {
              sweep::kinds().at("kapa", "--kind");
            }).rfind("--kind: unknown point kind 'kapa'; did you mean 'kappa'?", 0),
            0u);
  const std::string lp = input_error_of(
      [] { read_config<ServingSpec>(parse_yaml("load_path: kernal\n", "s.yaml"), "serving"); });
  EXPECT_TRUE(has(lp, "s.yaml:1:12")) << lp;
  EXPECT_TRUE(has(lp, "load_path")) << lp;
  EXPECT_TRUE(has(lp, "did you mean \"kernel\"")) << lp;
  const std::string lf = input_error_of(
      [] { read_config<ServingSpec>(parse_yaml("link_fidelity: packt\n", "s.yaml"), "serving"); });
  EXPECT_TRUE(has(lf, "s.yaml:1:16")) << lf;
  EXPECT_TRUE(has(lf, "link_fidelity")) << lf;
  EXPECT_TRUE(has(lf, "did you mean \"packet\"")) << lf;
  // A registered name reads as itself and is written back unchanged (--dump-config).
  const ServingSpec s = read_config<ServingSpec>(
      parse_yaml("load_path: block_dma\nlink_fidelity: packet\nstack: vllm-native-0.12\n",
                 "s.yaml"),
      "serving");
  EXPECT_EQ(s.load_path, LoadPath::BlockDma);
  EXPECT_EQ(s.link_fidelity, LinkFidelity::Packet);
  const ConfigNode back = write_config(s);
  EXPECT_EQ(back.find("load_path")->scalar, "block_dma");
  EXPECT_EQ(back.find("link_fidelity")->scalar, "packet");
}

// Load paths and link back ends are SystemC: this pure binary has their names (declared by
// serving/load_path_kind.cpp, systems/link_backends.cpp) but not their factories.
TEST(Registry, APureProgramReadsDeclaredNamesButCannotMakeThem) {
  ASSERT_NE(load_paths().find("kernel"), nullptr);
  EXPECT_FALSE(load_paths().find("kernel")->value);
  EXPECT_THROW(load_paths().value("kernel"), std::logic_error);  // make() would call it
  EXPECT_FALSE(link_backends().find("flow")->value);
  EXPECT_THROW(link_backends().value("packet"), std::logic_error);
}

TEST(Registry, DeclaredThenImplementedIsOneEntryAndTwiceIsAProgrammingError) {
  Registry<Widget> reg("widget-test", "widget", "test.widget");
  reg.declare("a", "the first widget");
  EXPECT_THROW(reg.make("a"), std::logic_error);  // declared only
  reg.add("a", "", make_widget);                  // the implementation keeps the summary
  EXPECT_NE(reg.make("a"), nullptr);
  EXPECT_EQ(reg.find("a")->summary, "the first widget");
  EXPECT_THROW(reg.add("a", "again", make_widget), std::logic_error);
  reg.add("b", "registered and declared at once", make_widget);
  EXPECT_EQ(reg.listed_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_THROW(reg.add("", "empty", make_widget), std::logic_error);
  EXPECT_THROW(reg.add("c", "no factory", nullptr), std::logic_error);
  EXPECT_EQ(input_error_of([&] { reg.make("aa"); }),
            "test.widget: unknown widget 'aa'; did you mean 'a'? (expected one of a, b)");
  // In the catalogue while it lives.
  EXPECT_EQ(&registry_by_id("widget-test"), &reg);
}

// An entry's traits (what it declares beside its name): the declaration's, whichever of
// declaration and registration comes first; a name only registered carries its registration's.
TEST(Registry, TraitsComeFromTheDeclarationElseTheRegistration) {
  struct Size {
    int bytes = 0;
  };
  TraitRegistry<Widget, Size> reg("widget-traits", "widget", "test.widget");
  reg.add("a", "", make_widget, Size{1});
  reg.declare("a", "declared after its registration", Size{2});
  EXPECT_EQ(reg.traits("a").bytes, 2);
  reg.declare("b", "declared before its registration", Size{3});
  reg.add("b", "", make_widget, Size{4});
  EXPECT_EQ(reg.traits("b").bytes, 3);
  reg.add("c", "registered only", make_widget, Size{5});
  EXPECT_EQ(reg.traits("c").bytes, 5);
  EXPECT_TRUE(has(input_error_of([&] { reg.traits("cc"); }), "did you mean 'c'?"));
}

// Every load path declares its costs with its name (serving/load_path_kind.cpp); the cost model
// reads them by name. LMCache's connector implements the kernel and layer-wise paths, vLLM's
// native one the block copies (docs/serving-stacks.md).
TEST(Registry, LoadPathsDeclareTheirCostsWithTheirNames) {
  const LoadPathCosts& k = load_path_costs(LoadPath::Kernel);
  const LoadPathCosts& l = load_path_costs(LoadPath::Layerwise);
  const LoadPathCosts& b = load_path_costs(LoadPath::BlockDma);
  EXPECT_TRUE(k.has_family && k.family == StackFamily::Lmcache);
  EXPECT_TRUE(l.has_family && l.family == StackFamily::Lmcache);
  EXPECT_TRUE(b.has_family && b.family == StackFamily::VllmNative);
  EXPECT_EQ(k.copy, CopyPath::Kernel);
  EXPECT_EQ(l.copy, CopyPath::Dma);
  EXPECT_EQ(b.copy, CopyPath::Dma);
  EXPECT_TRUE(l.per_layer && l.lookup_per_layer_keys);
  EXPECT_FALSE(k.per_layer || b.per_layer);
  EXPECT_TRUE(b.block_granular);
  EXPECT_FALSE(k.block_granular || l.block_granular);
  for (const LoadPathCosts* c : {&k, &l, &b}) EXPECT_NE(c->retrieve, nullptr);
  EXPECT_EQ(input_error_of([] { load_path_costs(LoadPath{"kernal"}); }),
            "serving.load_path: unknown load path 'kernal'; did you mean 'kernel'? (expected one "
            "of block_dma, kernel, layerwise)");
}

TEST(Registry, ARegistryLeavesTheCatalogueWithItsLife) {
  const std::size_t before = all_registries().size();
  {
    Registry<Widget> reg("widget-scoped", "widget", "");
    EXPECT_EQ(all_registries().size(), before + 1);
  }
  EXPECT_EQ(all_registries().size(), before);
  EXPECT_THROW(registry_by_id("widget-scoped"), InputError);
}

}  // namespace
}  // namespace registry_test
}  // namespace kappasim
