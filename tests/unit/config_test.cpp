// The config loader: positions in errors, unknown keys with suggestions, missing keys, ranges,
// presets with overrides, `<<` merge keys, --set, provenance, and the effective-config dump.
#include <gtest/gtest.h>

#include "core/config.hpp"
#include "models/gpu/gpu_spec.hpp"
#include "systems/system_spec.hpp"

namespace kappasim {
namespace config_test {
namespace {

struct Inner {
  double bandwidth = 0;
  int count = 4;
  std::optional<double> latency;
  template <class V>
  void visit(V& v) {
    v.quantity("bandwidth", bandwidth, dim::bandwidth, req("link bandwidth"));
    v.integer("count", count, opt("how many"));
    v.quantity("latency", latency, dim::time, opt("latency", Range::NonNegative));
  }
  void validate(const std::string&) const {}
};
struct Outer {
  std::string label;
  Inner link;
  template <class V>
  void visit(V& v) {
    v.text("label", label, opt("a label"));
    v.object("link", link, req("the link"));
  }
  void validate(const std::string&) const {}
};

// Runs f and returns the InputError message (fails the test if none is thrown).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError thrown";
  return {};
}
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Config, ReadsTypedValues) {
  ConfigNode n =
      parse_yaml("label: x\nlink:\n  bandwidth: 64 GB/s\n  count: 8\n  latency: 3 us\n", "t.yaml");
  Outer o = read_config<Outer>(n, "");
  EXPECT_EQ(o.label, "x");
  EXPECT_DOUBLE_EQ(o.link.bandwidth, 64e9);
  EXPECT_EQ(o.link.count, 8);
  ASSERT_TRUE(o.link.latency.has_value());
  EXPECT_DOUBLE_EQ(*o.link.latency, 3e-6);
}

TEST(Config, DefaultsStayWhenKeysAreAbsent) {
  Outer o = read_config<Outer>(parse_yaml("link: {bandwidth: 1 GB/s}", "t.yaml"), "");
  EXPECT_EQ(o.link.count, 4);
  EXPECT_FALSE(o.link.latency.has_value());
}

TEST(Config, UnknownKeyNamesFileLineColumnAndSuggests) {
  std::string m = error_of([] {
    read_config<Outer>(parse_yaml("link:\n  bandwidth: 1 GB/s\n  bandwith: 2 GB/s\n", "cfg.yaml"),
                       "");
  });
  EXPECT_TRUE(has(m, "cfg.yaml:3:3")) << m;
  EXPECT_TRUE(has(m, "unknown key 'bandwith'")) << m;
  EXPECT_TRUE(has(m, "did you mean 'bandwidth'")) << m;
  EXPECT_TRUE(has(m, "link")) << m;
}

TEST(Config, UnknownKeyFarFromAnyGetsNoSuggestionButTheList) {
  std::string m = error_of([] {
    read_config<Outer>(parse_yaml("link: {bandwidth: 1 GB/s}\nzzzzzz: 1\n", "c.yaml"), "");
  });
  EXPECT_TRUE(has(m, "c.yaml:2:1")) << m;
  EXPECT_FALSE(has(m, "did you mean")) << m;
  EXPECT_TRUE(has(m, "valid keys: label, link")) << m;
}

TEST(Config, MissingRequiredKey) {
  std::string m =
      error_of([] { read_config<Outer>(parse_yaml("link: {count: 2}\n", "m.yaml"), ""); });
  EXPECT_TRUE(has(m, "m.yaml:1:7")) << m;
  EXPECT_TRUE(has(m, "missing required key 'bandwidth'")) << m;
  EXPECT_TRUE(has(m, "64 GB/s")) << m;  // an example of what is expected
  m = error_of([] { read_config<Outer>(parse_yaml("label: x\n", "m.yaml"), ""); });
  EXPECT_TRUE(has(m, "missing required key 'link'")) << m;
}

TEST(Config, RangeAndUnitErrors) {
  auto bw = [](const std::string& v) {
    return error_of(
        [&] { read_config<Outer>(parse_yaml("link: {bandwidth: " + v + "}", "r.yaml"), ""); });
  };
  EXPECT_TRUE(has(bw("-64 GB/s"), "must be greater than zero")) << bw("-64 GB/s");
  EXPECT_TRUE(has(bw("0 GB/s"), "must be greater than zero"));
  EXPECT_TRUE(has(bw("nan GB/s"), "not a finite number"));
  EXPECT_TRUE(has(bw("64 GB"), "expected a bandwidth"));
  EXPECT_TRUE(has(bw("64 GB/s/x"), "unknown unit"));
  EXPECT_TRUE(has(bw("64 GB"), "r.yaml:1:19")) << bw("64 GB");
  EXPECT_TRUE(has(bw("[1, 2]"), "expected a bandwidth"));
  std::string m = error_of([] {
    read_config<Outer>(parse_yaml("link: {bandwidth: 1 GB/s, count: 2.5}", "r.yaml"), "");
  });
  EXPECT_TRUE(has(m, "whole number")) << m;
  m = error_of([] {
    read_config<Outer>(parse_yaml("link: {bandwidth: 1 GB/s, latency: -1 us}", "r.yaml"), "");
  });
  EXPECT_TRUE(has(m, "must not be negative")) << m;
}

TEST(Config, YamlSyntaxErrorHasPosition) {
  std::string m = error_of([] { parse_yaml("a: 1\nb: [1, 2\n", "bad.yaml"); });
  EXPECT_TRUE(has(m, "bad.yaml:")) << m;
  EXPECT_TRUE(has(m, "YAML syntax error")) << m;
}

TEST(Config, DuplicateKeysAreErrors) {
  std::string m = error_of([] { parse_yaml("a: 1\nb: 2\na: 3\n", "d.yaml"); });
  EXPECT_TRUE(has(m, "d.yaml:3:1")) << m;
  EXPECT_TRUE(has(m, "duplicate key 'a'")) << m;
}

TEST(Config, MergeKeysAreApplied) {
  ConfigNode n = parse_yaml(
      "base: &b {bandwidth: 1 GB/s, count: 7}\n"
      "link:\n  <<: *b\n  bandwidth: 2 GB/s\n",
      "m.yaml");
  const ConfigNode* link = n.find("link");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->find("bandwidth")->scalar, "2 GB/s");  // own key wins over the merged one
  EXPECT_EQ(link->find("count")->scalar, "7");
  EXPECT_EQ(link->find("<<"), nullptr);
}

TEST(Config, ProvenanceCollapsesIntoTheValue) {
  ConfigNode n =
      parse_yaml("link: {bandwidth: {value: 64 GB/s, measured: \"vLLM blog\"}}", "p.yaml");
  const ConfigNode* bw = n.find("link")->find("bandwidth");
  ASSERT_TRUE(bw->is_scalar());
  ASSERT_TRUE(bw->provenance.has_value());
  EXPECT_EQ(bw->provenance->kind, "measured");
  EXPECT_EQ(bw->provenance->source, "vLLM blog");
  ProvenanceTable prov;
  Outer o = read_config<Outer>(n, "", &prov);
  EXPECT_DOUBLE_EQ(o.link.bandwidth, 64e9);
  ASSERT_EQ(prov.count("link.bandwidth"), 1u);
  EXPECT_EQ(prov["link.bandwidth"].first.source, "vLLM blog");
}

TEST(Config, SetOverridesAndCreatesKeys) {
  ConfigNode n = parse_yaml("link: {bandwidth: 1 GB/s}", "s.yaml");
  apply_set(n, "link.bandwidth=5 GB/s");
  apply_set(n, "link.count=9");
  Outer o = read_config<Outer>(n, "");
  EXPECT_DOUBLE_EQ(o.link.bandwidth, 5e9);
  EXPECT_EQ(o.link.count, 9);
  EXPECT_TRUE(has(error_of([&] { apply_set(n, "link.bandwidth"); }), "KEY.PATH=VALUE"));
  EXPECT_TRUE(has(error_of([&] { apply_set(n, "link..x=1"); }), "empty key"));
  apply_set(n, "link.bandwdth=1 GB/s");
  std::string m = error_of([&] { read_config<Outer>(n, ""); });
  EXPECT_TRUE(has(m, "--set link.bandwdth=1 GB/s")) << m;  // the error names the --set
  EXPECT_TRUE(has(m, "did you mean 'bandwidth'")) << m;
}

// Presets: registered under a test-only name so the built-ins are untouched.
class ConfigPresets : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& reg = PresetRegistry::instance();
    reg.add_text("gpu", "test-gpu", "presets/gpus/test-gpu.yaml",
                 "name: test-gpu\n"
                 "provenance: {spec: \"a test datasheet\"}\n"
                 "hbm_capacity: 80 GB\nhbm_bandwidth: 3 TB/s\n"
                 "peak_flops: {bf16: 1 PFLOP/s}\nsm_count: 100\nl2_cache: 50 MB\ntdp: 700 W\n");
    reg.add_text("gpu", "test-gpu-derived", "presets/gpus/test-gpu-derived.yaml",
                 "preset: test-gpu\nname: test-gpu-derived\nhbm_bandwidth: 4 TB/s\n");
    reg.add_text("gpu", "test-loop-a", "a.yaml", "preset: test-loop-b\n");
    reg.add_text("gpu", "test-loop-b", "b.yaml", "preset: test-loop-a\n");
  }
};

TEST_F(ConfigPresets, PresetByNameAndWithOverrides) {
  GpuSpec g = read_preset_config<GpuSpec>(ConfigNode::make_scalar("test-gpu"), "gpu", "gpu");
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth_Bps, 3e12);
  ConfigNode over = parse_yaml("preset: test-gpu\nhbm_bandwidth: 5 TB/s\n", "o.yaml");
  g = read_preset_config<GpuSpec>(over, "gpu", "gpu");
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth_Bps, 5e12);
  EXPECT_DOUBLE_EQ(g.hbm_capacity_bytes, 80e9);  // the rest from the preset
  g = read_preset_config<GpuSpec>(ConfigNode::make_scalar("test-gpu-derived"), "gpu", "gpu");
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth_Bps, 4e12);  // a preset built on a preset
  EXPECT_EQ(g.sm_count, 100);
}

TEST_F(ConfigPresets, FileLevelProvenanceReachesEveryNumber) {
  ProvenanceTable prov;
  read_preset_config<GpuSpec>(ConfigNode::make_scalar("test-gpu"), "gpu", "gpu", &prov);
  ASSERT_EQ(prov.count("gpu.peak_flops.bf16"), 1u);
  EXPECT_EQ(prov["gpu.peak_flops.bf16"].first.kind, "spec");
  EXPECT_EQ(prov["gpu.sm_count"].first.source, "a test datasheet");
}

TEST_F(ConfigPresets, UnknownPresetSuggestsNearest) {
  std::string m = error_of([] {
    read_preset_config<GpuSpec>(parse_yaml("preset: test-gpux", "u.yaml"), "gpu", "system.gpu");
  });
  EXPECT_TRUE(has(m, "u.yaml:1:9")) << m;
  EXPECT_TRUE(has(m, "unknown gpu preset 'test-gpux'")) << m;
  EXPECT_TRUE(has(m, "did you mean 'test-gpu'")) << m;
}

TEST_F(ConfigPresets, PresetCyclesAreErrors) {
  std::string m = error_of(
      [] { read_preset_config<GpuSpec>(ConfigNode::make_scalar("test-loop-a"), "gpu", "gpu"); });
  EXPECT_TRUE(has(m, "refers to itself")) << m;
}

TEST_F(ConfigPresets, SetRefinesAPresetNamedOnTheWay) {
  // system: h100 is a preset name; --set system.gpu.hbm_bandwidth refines it.
  ConfigNode root = ConfigNode::make_map();
  root.set("gpu", ConfigNode::make_scalar("test-gpu"));
  apply_set(root, "gpu.hbm_bandwidth=6 TB/s");
  GpuSpec g = read_preset_config<GpuSpec>(*root.find("gpu"), "gpu", "gpu");
  EXPECT_DOUBLE_EQ(g.hbm_bandwidth_Bps, 6e12);
  EXPECT_DOUBLE_EQ(g.hbm_capacity_bytes, 80e9);
}

TEST_F(ConfigPresets, DumpIsTheEffectiveConfigAndReadsBackIdentically) {
  ProvenanceTable prov;
  ConfigNode over = parse_yaml("preset: test-gpu\nhbm_capacity: 80 GiB\n", "o.yaml");
  GpuSpec g = read_preset_config<GpuSpec>(over, "gpu", "gpu", &prov);
  std::string dumped = emit_yaml(write_config(g, "gpu", &prov));
  EXPECT_TRUE(has(dumped, "hbm_capacity: 85.89934592 GB")) << dumped;  // normalised units
  EXPECT_TRUE(has(dumped, "spec: \"a test datasheet\"")) << dumped;    // provenance kept
  GpuSpec back = read_config<GpuSpec>(parse_yaml(dumped, "dump.yaml"), "gpu");
  EXPECT_EQ(back.hbm_capacity_bytes, g.hbm_capacity_bytes);
  EXPECT_EQ(back.hbm_bandwidth_Bps, g.hbm_bandwidth_Bps);
  EXPECT_EQ(back.peak_flops, g.peak_flops);
  EXPECT_EQ(back.sm_count, g.sm_count);
  EXPECT_EQ(back.tdp_w, g.tdp_w);
}

// A list item that is an empty map or list is written inline ("- {}", "- []"): written as a bare
// "-" it read back as null, so a sweep folder whose axis had `{}` values (pd-disagg-handoff's
// `parallelism`) failed its own spec-hash check at `sweep collect`.
TEST(Config, EmptyMapsAndListsInAListReadBackAsThemselves) {
  const ConfigNode n = parse_yaml("a: [{}, [], {x: 1}, [2], 3]\nb: {}\nc: []\n", "t.yaml");
  const std::string text = emit_yaml(n, false);
  EXPECT_TRUE(has(text, "  - {}\n  - []\n")) << text;
  const ConfigNode back = parse_yaml(text, "back.yaml");
  const ConfigNode* a = back.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u) << text;
  EXPECT_TRUE(a->items[0].is_map() && a->items[0].entries.empty()) << text;
  EXPECT_TRUE(a->items[1].kind == ConfigNode::Kind::Seq && a->items[1].items.empty()) << text;
  EXPECT_TRUE(back.find("b")->is_map());
  EXPECT_EQ(back.find("c")->kind, ConfigNode::Kind::Seq);
  EXPECT_EQ(emit_yaml(back, false), text);
}

TEST(Config, EveryBuiltInSystemDumpsAndReadsBack) {
  for (const auto& name : PresetRegistry::instance().names("system")) {
    ProvenanceTable prov;
    SystemSpec s =
        read_preset_config<SystemSpec>(ConfigNode::make_scalar(name), "system", "system", &prov);
    std::string dumped = emit_yaml(write_config(s, "", &prov));
    SystemSpec back = read_config<SystemSpec>(parse_yaml(dumped, name + ".dump"), "system");
    EXPECT_EQ(back.host_link_bandwidth_per_gpu(), s.host_link_bandwidth_per_gpu()) << name;
    EXPECT_EQ(back.gpu.peak_flops, s.gpu.peak_flops) << name;
    EXPECT_EQ(back.host_memory.socket_bandwidth(), s.host_memory.socket_bandwidth()) << name;
    EXPECT_EQ(emit_yaml(write_config(back, "", &prov)), dumped) << name;
  }
}

// PresetRegistry::find parses a built-in preset without counting its documents (the second
// pass over the text): that holds only while every built-in preset is one document, which the
// full check says here, and the two parses give the same tree.
TEST(Config, BuiltInPresetsAreOneDocumentEach) {
  const PresetRegistry& reg = PresetRegistry::instance();
  std::size_t n = 0;
  for (const std::string& kind : reg.kinds())
    for (const std::string& name : reg.names(kind)) {
      const std::string text = reg.text_of(kind, name), file = reg.file_of(kind, name);
      ConfigNode full;
      EXPECT_NO_THROW(full = parse_yaml(text, file)) << file;
      const ConfigNode single = parse_yaml(text, file, DocumentCheck::KnownSingle);
      EXPECT_EQ(emit_yaml(single, false), emit_yaml(full, false)) << file;
      ++n;
    }
  EXPECT_GT(n, 50u);
  // The skipped check is the only difference: the second document is dropped, not reported.
  const std::string two = "a: 1\n---\nb: 2\n";
  EXPECT_THROW(parse_yaml(two, "two.yaml"), InputError);
  EXPECT_EQ(emit_yaml(parse_yaml(two, "two.yaml", DocumentCheck::KnownSingle), false), "a: 1\n");
}

TEST(Config, Suggestions) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(nearest("hbm_bandwith", {"hbm_bandwidth", "hbm_capacity"}), "hbm_bandwidth");
  EXPECT_EQ(nearest("qqqqqqqq", {"hbm_bandwidth", "tdp"}), "");
}

}  // namespace
}  // namespace config_test
}  // namespace kappasim
