// The config loader: positions in errors, unknown keys with suggestions, missing keys, ranges,
// presets with overrides, `<<` merge keys, --set, provenance, and the effective-config dump.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/random.hpp"
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

// ---- parse_emitted_yaml: emit_yaml's subset without yaml-cpp (issue 24) ----------------------

// Node for node, marks and provenance included; `where` names the first difference.
void expect_same_tree(const ConfigNode& a, const ConfigNode& b, const std::string& where) {
  ASSERT_EQ(static_cast<int>(a.kind), static_cast<int>(b.kind)) << where;
  EXPECT_EQ(a.scalar, b.scalar) << where;
  EXPECT_EQ(a.quoted, b.quoted) << where;
  EXPECT_EQ(a.loc.str(), b.loc.str()) << where;
  EXPECT_EQ(a.key_loc.str(), b.key_loc.str()) << where;
  ASSERT_EQ(a.provenance.has_value(), b.provenance.has_value()) << where;
  if (a.provenance) {
    EXPECT_EQ(a.provenance->kind, b.provenance->kind) << where;
    EXPECT_EQ(a.provenance->source, b.provenance->source) << where;
    EXPECT_EQ(a.provenance->low, b.provenance->low) << where;
    EXPECT_EQ(a.provenance->high, b.provenance->high) << where;
  }
  ASSERT_EQ(a.entries.size(), b.entries.size()) << where;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    ASSERT_EQ(a.entries[i].first, b.entries[i].first) << where;
    expect_same_tree(a.entries[i].second, b.entries[i].second, where + "." + a.entries[i].first);
  }
  ASSERT_EQ(a.items.size(), b.items.size()) << where;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    expect_same_tree(a.items[i], b.items[i], where + "[" + std::to_string(i) + "]");
}

// Whether the subset reader answers `text`, and then with yaml-cpp's tree.
bool emitted_matches_yaml_cpp(const std::string& text) {
  const std::optional<ConfigNode> fast = parse_emitted_yaml(text, "t.yaml");
  if (!fast) return false;
  const ConfigNode slow = parse_yaml_cpp(text, "t.yaml", DocumentCheck::Full);
  expect_same_tree(*fast, slow, "text:\n" + text + "\nat root");
  return true;
}

TEST(Config, TheEmittedSubsetReadsAsYamlCppReadsIt) {
  // Hand-written texts in the subset, each shape emit_yaml writes; marks checked by hand too.
  const std::string text =
      "model: qwen3-235b-a22b\n"
      "serving:\n"
      "  tp: 8\n"
      "  tier_capacity: 1.5 TB\n"
      "  kv_buffer: {}\n"
      "  slots: []\n"
      "  gone: null\n"
      "  tilde: ~\n"
      "  \"quoted key: yes\": \"a \\\"b\\\" \\\\ c\\nd\"\n"
      "  hbm: {value: 80 GB, spec: \"NVIDIA H100 datasheet: 80GB\"}\n"
      "  knob: {value: 0.5, assumption: \"a guess\", low: 0.25, high: 1}\n"
      "axes:\n"
      "  -\n"
      "    key: workload.rate\n"
      "    values:\n"
      "      - 1\n"
      "      - \"2\"\n"
      "      - {}\n"
      "      - []\n"
      "      -\n"
      "        - x y\n"
      "  - plain text, no\n";
  // A header of comment lines: skipped, and counted in the marks.
  ASSERT_TRUE(emitted_matches_yaml_cpp("# generated\n#\nname: x\nserving:\n  tp: 8\n"));
  EXPECT_EQ(parse_emitted_yaml("# generated\nname: x\n", "t.yaml")->find("name")->loc.str(),
            "t.yaml:2:7");
  EXPECT_FALSE(parse_emitted_yaml("# only a comment\n", "t.yaml").has_value());
  // "plain text, no" holds a comma: emit_yaml would quote it; a hand-written preset need not,
  // and it reads as yaml-cpp reads it.
  EXPECT_TRUE(emitted_matches_yaml_cpp(text));
  const std::string in_subset = text.substr(0, text.rfind("  - plain")) + "  - plain text\n";
  ASSERT_TRUE(emitted_matches_yaml_cpp(in_subset));
  const ConfigNode n = *parse_emitted_yaml(in_subset, "t.yaml");
  EXPECT_EQ(n.find("serving")->loc.str(), "t.yaml:3:3");  // a block map: its first key
  EXPECT_EQ(n.find("serving")->key_loc.str(), "t.yaml:2:1");
  const ConfigNode& hbm = *n.find("serving")->find("hbm");
  EXPECT_EQ(hbm.scalar, "80 GB");
  EXPECT_EQ(hbm.loc.str(), "t.yaml:10:16");  // the value inside the braces
  ASSERT_TRUE(hbm.provenance.has_value());
  EXPECT_EQ(hbm.provenance->kind, "spec");
  EXPECT_EQ(n.find("serving")->find("quoted key: yes")->scalar, "a \"b\" \\ c\nd");
  EXPECT_TRUE(n.find("serving")->find("gone")->is_null());
  EXPECT_TRUE(n.find("serving")->find("tilde")->is_null());
  EXPECT_EQ(n.find("axes")->items[0].loc.str(), "t.yaml:14:5");
}

// Hand-written YAML as presets have it (issue 24: the presets a run reads were a third of a
// 10,000-request run's start): comments anywhere, blank lines, plain values with commas and
// brackets, folded text. Each reads as yaml-cpp reads it; what the reader cannot be sure of goes
// to yaml-cpp.
TEST(Config, PresetStyleYamlReadsAsYamlCppReadsIt) {
  for (const char* t : {
           "a: 1\n# a comment\n",
           "a: 1 # note\n",
           "a: 1   # note\n",
           "a: {value: 1, spec: \"s\"} \n",  // a trailing space
           "a: {value: 1, spec: \"s # not a comment\"}  # a comment\n",
           "# top\n\na:\n  # inside\n  b: 1\n\n  c: 2\n# out\n  d: 3\ne: 4\n\n",
           "a:\n# at column 1, inside a's map\n  b: 1\n",
           "name: x\ndisplay: kappa testbed (8x H100 SXM5, PCIe 5.0 x16, 2x AMD EPYC)\n",
           "a: it's [not] {a} flow, 100%!\nb: -1\nc: x:y\nd: 'q'\n",
           "a: C#\nb: x #y\n",
           "d: >-\n  The machine of a paper: 8x H100,\n  each on PCIe 5.0 x16.\nnext: 1\n",
           "d: >\n  kept final\n  line break\n\nnext: 1\n",
           "m:\n  d: >-\n    one\n    # not a comment here\n  e: 2\n",
           "d: >-\n  text\n# a comment after it\ne: 1\n",
       }) {
    const std::string text = t;
    const std::optional<ConfigNode> fast = parse_emitted_yaml(text, "t.yaml");
    if (!fast) {  // declined: fine, yaml-cpp reads it
      continue;
    }
    expect_same_tree(*fast, parse_yaml_cpp(text, "t.yaml", DocumentCheck::Full),
                     "text:\n" + text + "\nat root");
  }
  // These are read here, not declined (they are the shapes presets use).
  for (const char* t :
       {"a: 1\n# a comment\n", "a: 1 # note\n", "name: x\ndisplay: kappa (8x H100, PCIe 5.0 x16)\n",
        "d: >-\n  one\n  two\nnext: 1\n", "a:\n\n  b: 1\n"})
    EXPECT_TRUE(emitted_matches_yaml_cpp(t)) << t;
  EXPECT_EQ(parse_emitted_yaml("d: >-\n  one\n  two\n", "t.yaml")->find("d")->scalar, "one two");
  // Declined: more indented folded lines, a blank line inside, a literal block, a '"' in a plain
  // scalar, a single-quoted value.
  for (const char* t : {"d: >-\n  one\n    two\n", "d: >-\n  one\n\n  two\n", "d: |\n  one\n",
                        "a: 5\" x # y\n", "a: 'q # r'\n"})
    EXPECT_FALSE(parse_emitted_yaml(t, "t.yaml").has_value()) << t;
}

// UTF-8 in whole comment lines (issue 24: experiment configs name κ, ≈ or × in their comments):
// read here, node for node and mark for mark as yaml-cpp reads the text; whatever YAML might
// read otherwise (a NEL, LS or PS line break, a byte-order mark, a C1 control, text that is not
// UTF-8) and UTF-8 anywhere else go to yaml-cpp.
TEST(Config, Utf8InCommentLinesReadsAsYamlCppReadsIt) {
  for (const char* t : {
           "# The κ paper's testbed: ≈ 2× faster \xe2\x80\x94 see docs\nmodel: x\n",
           "a:\n  # café \xf0\x9f\x98\x80 (four bytes)\n  b: 1\n    # deeper: \xc2\xa0nbsp\n  c: "
           "2\n",
           "# \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbd \xf4\x8f\xbf\xbf: the ranges' edges\nz: 1\n",
       }) {
    EXPECT_TRUE(emitted_matches_yaml_cpp(t)) << t;
  }
  EXPECT_EQ(parse_emitted_yaml("# κ\n# ≈\nname: x\n", "t.yaml")->find("name")->loc.str(),
            "t.yaml:3:7");
  for (const char* t : {
           "# a NEL \xc2\x85 line break\na: 1\n",
           "# an LS \xe2\x80\xa8 line break\na: 1\n",
           "# a PS \xe2\x80\xa9 line break\na: 1\n",
           "# a BOM \xef\xbb\xbf inside\na: 1\n",
           "# a C1 control \xc2\x80\na: 1\n",
           "# not UTF-8 \xff\na: 1\n",
           "# cut short \xce\na: 1\n",
           "# overlong \xc0\xaf and \xe0\x80\xaf\na: 1\n",
           "# a surrogate \xed\xa0\x80\na: 1\n",
           "# past U+10FFFF \xf4\x90\x80\x80\na: 1\n",
           "# U+FFFE \xef\xbf\xbe\na: 1\n",
           "a: 1 # κ after a value\n",
           "a: κ\n",
       }) {
    EXPECT_FALSE(parse_emitted_yaml(t, "t.yaml").has_value()) << t;
  }
}

// Every built-in preset is read without yaml-cpp, node for node as yaml-cpp reads it.
TEST(Config, BuiltInPresetsReadAsYamlCppReadsThem) {
  const PresetRegistry& reg = PresetRegistry::instance();
  std::size_t n = 0, fast = 0;
  for (const std::string& kind : reg.kinds())
    for (const std::string& name : reg.names(kind)) {
      const std::string text = reg.text_of(kind, name), file = reg.file_of(kind, name);
      ++n;
      if (emitted_matches_yaml_cpp(text))
        ++fast;
      else
        ADD_FAILURE() << file << " goes to yaml-cpp";
    }
  EXPECT_GT(n, 50u);
  EXPECT_EQ(fast, n);
}

TEST(Config, TextsOutsideTheEmittedSubsetGoToYamlCpp) {
  for (const char* t : {
           "a: 1",                           // no final newline
           "a: 1\r\n",                       // CRLF
           "a:\t1\n",                        // a tab
           "a: [1, 2]\n",                    // a flow list
           "a: &x 1\nb: *x\n",               // anchors
           "<<: {a: 1}\n",                   // a merge key
           "a: 1\na: 2\n",                   // a duplicate key
           "~: 1\n",                         // a null key
           "a: 'single'\n",                  // single quotes
           "a: \"\\t\"\n",                   // an escape emit_yaml never writes
           "a: |\n  text\n",                 // a block scalar
           "a:\n- 1\n",                      // a list at its key's indent
           "a:\n   b: 1\n",                  // an indent of 3
           "---\na: 1\n",                    // a document marker
           "a: 1\n---\nb: 2\n",              //
           "- 1\n",                          // a root list
           "a: caf\xc3\xa9\n",               // UTF-8
           "a: {value: 1, bogus: \"s\"}\n",  // not a provenance: a map, but ...
       }) {
    const std::string text = t;
    if (text == "a: {value: 1, bogus: \"s\"}\n") {
      // ... in the subset: a plain two-key flow map.
      EXPECT_TRUE(emitted_matches_yaml_cpp(text)) << text;
      continue;
    }
    EXPECT_FALSE(parse_emitted_yaml(text, "t.yaml").has_value()) << text;
  }
  // yaml-cpp refuses an implicit key whose ':' is more than 1,024 characters after its start;
  // the reader declines long keys (a flow map's too), so the error is yaml-cpp's.
  const std::string long_key(1030, 'k');
  for (const std::string& text :
       {long_key + ": 1\n", "\"" + long_key + "\": 1\n", "a: {" + long_key + ": 1}\n"}) {
    EXPECT_FALSE(parse_emitted_yaml(text, "t.yaml").has_value());
    EXPECT_THROW(parse_yaml(text, "t.yaml"), InputError);
  }
  EXPECT_TRUE(emitted_matches_yaml_cpp(std::string(900, 'k') + ": 1\n"));
  // A long map (its duplicate check by hash past 16 keys) reads as yaml-cpp reads it, and a
  // duplicate at its end is declined (then yaml-cpp names both lines).
  std::string many;
  for (int i = 0; i < 40; ++i) many += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  EXPECT_TRUE(emitted_matches_yaml_cpp(many));
  EXPECT_FALSE(parse_emitted_yaml(many + "k3: again\n", "t.yaml").has_value());
  EXPECT_FALSE(parse_emitted_yaml("a: {" + std::string("k1: 1, k2: 2, ") + "k1: 3}\n", "t.yaml"));
  // A provenance map that convert() refuses goes to yaml-cpp, which says why.
  EXPECT_FALSE(parse_emitted_yaml("a: {value: 1, spec: \"\"}\n", "t.yaml").has_value());
  EXPECT_THROW(parse_yaml("a: {value: 1, spec: \"\"}\n", "t.yaml"), InputError);
}

// Random trees, emitted with and without provenance, and each text edited at one random place:
// wherever the subset reader answers, yaml-cpp reads the same tree, and where yaml-cpp refuses a
// text the reader declines it. (Run once with 60,000 trees and three seeds while writing it.)
// Scalars are drawn from pieces that touch every rule (indicators, spaces, quotes, escapes, null
// words, numbers, "<<", document markers).
TEST(Config, RandomEmittedTreesReadAsYamlCppReadsThem) {
  const std::vector<std::string> pieces = {
      "a",  "tp", "1.5 TB", "8",   "-3",   "0.25", "x y", "null", "~",     "Null", "true",
      "no", "<<", "---",    "...", ".5",   "?q",   "a:b", "a #b", "{",     "}",    "[",
      "]",  ",",  "&",      "*",   "!",    "|",    ">",   "'",    "\"",    "%",    "@",
      "`",  "\\", "\n",     " ",   "a  b", "",     "=",   "<",    "value", "spec"};
  Rng rng(20261205);
  auto word = [&] {
    std::string w;
    const auto n = 1 + rng.below(3);
    for (std::uint64_t i = 0; i < n; ++i) w += pieces[rng.below(pieces.size())];
    return w;
  };
  std::function<ConfigNode(int)> tree = [&](int depth) {
    const auto pick = depth >= 4 ? 0 : rng.below(4);
    if (pick == 0) {
      if (rng.below(10) == 0) return ConfigNode{};  // null
      ConfigNode s = ConfigNode::make_scalar(word());
      s.quoted = rng.below(3) == 0;
      if (rng.below(4) == 0)
        s.provenance = Provenance{kProvenanceKinds[rng.below(4)], word(),
                                  rng.below(2) ? "" : word(), rng.below(2) ? "" : word()};
      return s;
    }
    ConfigNode n;
    n.kind = pick == 1 ? ConfigNode::Kind::Seq : ConfigNode::Kind::Map;
    const auto size = rng.below(5);
    for (std::uint64_t i = 0; i < size; ++i) {
      if (n.kind == ConfigNode::Kind::Seq)
        n.items.push_back(tree(depth + 1));
      else
        n.set(word(), tree(depth + 1));
    }
    return n;
  };
  int answered = 0, trees = 0, edited = 0;
  for (int i = 0; i < 2000; ++i) {
    ConfigNode root = tree(0);
    if (!root.is_map()) continue;
    ++trees;
    for (bool prov : {true, false}) {
      // Some with a header of comment lines, as a sweep.yaml or a generated spec has.
      const std::string header = rng.below(4) == 0 ? "# a header: x\n#\n" : "";
      const std::string text = header + emit_yaml(root, prov);
      std::string refused;
      try {
        (void)parse_yaml_cpp(text, "t.yaml", DocumentCheck::Full);
      } catch (const InputError& e) {
        refused = e.what();
      }
      if (!refused.empty()) {  // then the subset reader must decline it too
        EXPECT_FALSE(parse_emitted_yaml(text, "t.yaml").has_value()) << refused << "\n" << text;
        continue;
      }
      if (emitted_matches_yaml_cpp(text)) ++answered;
      if (HasFailure()) return;
      // The text with one character changed, inserted or deleted: the subset's edges.
      for (int m = 0; m < 2; ++m) {
        std::string t = text;
        const auto at = static_cast<std::size_t>(rng.below(t.size() + 1));
        static const std::string alphabet = " \n-:{}[],\"'#?ab0~&*!|>%@`\\\t";
        const char c = alphabet[rng.below(alphabet.size())];
        const auto op = rng.below(3);
        if (op == 0 && at < t.size())
          t[at] = c;
        else if (op == 1)
          t.insert(at, 1, c);
        else if (at < t.size())
          t.erase(at, 1);
        std::string why;
        try {
          (void)parse_yaml_cpp(t, "t.yaml", DocumentCheck::Full);
        } catch (const InputError& e) {
          why = e.what();
        }
        if (!why.empty())
          EXPECT_FALSE(parse_emitted_yaml(t, "t.yaml").has_value()) << why << "\n" << t;
        else if (emitted_matches_yaml_cpp(t))
          ++edited;
        if (HasFailure()) return;
      }
    }
  }
  // Not a vacuous comparison: the subset reader answers most of what emit_yaml writes.
  EXPECT_GT(answered, trees / 2) << answered << " of " << 2 * trees;
  EXPECT_GT(edited, trees / 4) << edited << " of " << 4 * trees;
}

}  // namespace
}  // namespace config_test
}  // namespace kappasim
