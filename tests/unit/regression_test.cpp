// Regression tests for the fuzzers' findings (tests/fuzz) and the bugs found while writing them.
// Each input is a file of the fuzz corpus (tests/fuzz/corpus/<target>/regression-*), fed to the
// same code the fuzz target runs; each must now end in a clean InputError (or UnitError for the
// bare unit parser, which the config reader turns into an InputError with a position).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <typeinfo>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "workloads/trace_reader.hpp"
#include "workloads/workload_spec.hpp"

namespace kappasim {
namespace regression_test {
namespace {

namespace fs = std::filesystem;

std::string corpus_file(const std::string& target, const std::string& name) {
  const fs::path p = fs::path(KAPPASIM_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target / name;
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

template <class E, class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no " << typeid(E).name() << " thrown";
  return {};
}

// A unit field, read through the config loader as every config value is.
struct OneBandwidth {
  double bw = 0;
  template <class V>
  void visit(V& v) {
    v.quantity("bw", bw, dim::bytes, req("a size"));
  }
  void validate(const std::string&) const {}
};

// ---- fuzz_units ------------------------------------------------------------------------------

// fuzz_units found: a subnormal energy per byte formatted in the canonical J/bit (value / 8)
// lost its low bits, so --dump-config's text read back as a different value. The formatter now
// falls back to J/B, which holds it exactly.
TEST(Regression, SubnormalEnergyPerByteRoundTripsExactly) {
  const std::string input = corpus_file("fuzz_units", "regression-subnormal-j-per-bit");
  ASSERT_GE(input.size(), 9u);
  double v = 0;
  std::memcpy(&v, input.data() + 1, sizeof v);
  ASSERT_EQ(v, 1.2598673968951787e-321);
  const std::string s = format_quantity(v, dim::energy_per_byte);
  EXPECT_EQ(parse_quantity(s).value, v) << s;
  EXPECT_TRUE(parse_quantity(s).dim == dim::energy_per_byte) << s;
  // The canonical unit stays for every value it can hold.
  EXPECT_EQ(format_quantity(1.3e-12 * 8, dim::energy_per_byte), "1.3 pJ/bit");
  // Areas too large for mm^2 fall back to m^2.
  const std::string a = format_quantity(1e303, dim::area);
  EXPECT_EQ(parse_quantity(a).value, 1e303) << a;
}

// Found writing fuzz_units: a unit exponent of 10^8 made the parser push 10^8 scale factors
// (out of memory), -2^31 negated an int (undefined behaviour), and B^200 wrapped the int8
// exponents of Dimension (a dimensionless number). Exponents are now limited to ±9.
TEST(Regression, HugeUnitExponentsAreCleanErrors) {
  for (const char* name : {"regression-exponent-huge", "regression-exponent-int-min"}) {
    const std::string input = corpus_file("fuzz_units", name);
    EXPECT_TRUE(has(error_of<UnitError>([&] { parse_quantity(input); }), "exponent")) << name;
    const std::string m = error_of<InputError>(
        [&] { read_config<OneBandwidth>(parse_yaml("bw: " + input + "\n", "u.yaml"), ""); });
    EXPECT_TRUE(has(m, "u.yaml:1:5: bw: ")) << m;
  }
  EXPECT_TRUE(has(error_of<UnitError>([] { parse_quantity("1 B^9*B^9"); }), "beyond the power 9"));
  EXPECT_TRUE(has(error_of<UnitError>([] { parse_quantity("1 B^10"); }), "exponent out of range"));
  EXPECT_EQ(parse_quantity("1 B^9").value, 1);
}

// Found writing fuzz_units: a dimension with only negative exponents was printed as "1/B", which
// does not parse back (the "1" is read as the number). It is now "B^-1".
TEST(Regression, NegativeOnlyDimensionsFormatParseably) {
  const Quantity q = parse_quantity(corpus_file("fuzz_units", "regression-only-denominator"));
  EXPECT_TRUE(q.dim == (dim::none / dim::bytes));
  const std::string s = format_quantity(q);
  EXPECT_EQ(s, "1 B^-1");
  EXPECT_EQ(parse_quantity(s).value, q.value);
  EXPECT_EQ(dimension_name(dim::none / dim::bytes / dim::time.pow(2)), "quantity in B^-1*s^-2");
}

// ---- fuzz_config -----------------------------------------------------------------------------

// Found writing fuzz_config: a YAML alias inside its own anchor ("&a {b: *a}") is a cycle in
// yaml-cpp's node graph, and the converter recursed until the stack overflowed.
TEST(Regression, YamlAliasCycleIsAnInputError) {
  const std::string text = corpus_file("fuzz_config", "regression-alias-cycle.yaml");
  const std::string m = error_of<InputError>([&] { parse_yaml(text, "cycle.yaml"); });
  EXPECT_TRUE(has(m, "cycle.yaml:1:")) << m;
  EXPECT_TRUE(has(m, "nests deeper than 200 levels")) << m;
}

// Found writing fuzz_config: aliases of aliases ("billion laughs") expand exponentially when the
// node graph is copied into a ConfigNode tree: 10^9 values, out of memory.
TEST(Regression, YamlAliasBombIsAnInputError) {
  const std::string text = corpus_file("fuzz_config", "regression-alias-bomb.yaml");
  const std::string m = error_of<InputError>([&] { parse_yaml(text, "bomb.yaml"); });
  EXPECT_TRUE(has(m, "bomb.yaml:")) << m;
  EXPECT_TRUE(has(m, "more than 100000 values")) << m;
  // Ordinary aliases and merge keys still work.
  ConfigNode n = parse_yaml("a: &a {x: 1}\nb: *a\nc: {<<: *a, y: 2}\n", "ok.yaml");
  ASSERT_NE(n.find("c"), nullptr);
  EXPECT_EQ(n.find("c")->find("x")->scalar, "1");
}

// Found writing fuzz_config (its inputs stay under 4 KB, too short to show it): a --set whose key
// path has 60,000 components built a map 60,000 levels deep, and merge_into recursed once per
// level until the stack overflowed (exit by SIGSEGV). Key paths are now limited to 200
// components. The corpus file has the shape; the length is made here.
TEST(Regression, SetWithAVeryDeepKeyPathIsAnInputError) {
  const std::string text = corpus_file("fuzz_config", "regression-set-deep-key.yaml");
  ASSERT_EQ(text.substr(0, 5), "#set ");
  const std::string set = text.substr(5, text.find('\n') - 5);
  ConfigNode root = parse_yaml(text, "set.yaml");
  EXPECT_TRUE(has(error_of<InputError>([&] { apply_set(root, set); }), "more than 200 components"));
  std::string deep;
  for (int i = 0; i < 60000; ++i) deep += "a.";
  const std::string m = error_of<InputError>([&] { apply_set(root, deep + "a=1"); });
  EXPECT_TRUE(has(m, "--set: the key path has more than 200 components")) << m;
  apply_set(root, "a.b.c=1");  // ordinary paths still work
  EXPECT_EQ(root.find("a")->find("b")->find("c")->scalar, "1");
}

// ---- fuzz_trace ------------------------------------------------------------------------------

class RegressionTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("kappasim_regression_" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = m_dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path m_dir;
};

// fuzz_trace found: a JSON number too large for a double ("1e400") makes nlohmann::json throw
// out_of_range, not parse_error; only parse_error was caught, so it escaped as an internal
// error (exit code 1). It is now "FILE:LINE: not valid JSON (number overflow ...)".
TEST_F(RegressionTrace, JsonNumberOverflowIsAnInputError) {
  for (const char* name : {"regression-number-overflow", "regression-number-overflow-min.jsonl"}) {
    const std::string f = write(name, corpus_file("fuzz_trace", name));
    for (TraceFormat format : {TraceFormat::Jsonl, TraceFormat::Mooncake}) {
      TraceSpec spec;
      spec.path = f;
      spec.format = format;
      const std::string m = error_of<InputError>([&] { validate_trace(spec); });
      EXPECT_TRUE(has(m, f + ":1: not valid JSON")) << m;
      EXPECT_TRUE(has(m, "number overflow")) << m;
      TraceSource src(spec);
      Request r;
      EXPECT_THROW(src.next(r), InputError);
    }
  }
}

// Found writing fuzz_trace (its inputs stay under 4 KB, too shallow to show it): a field holding
// a value nested 10^5 levels deep was dumped into the error message, and nlohmann::json's dump()
// recursed once per level until the stack overflowed. Lists and objects are now shown as
// "[...]" and "{...}". The corpus file has the shape; the depth is made here.
TEST_F(RegressionTrace, DeeplyNestedValueIsAnInputError) {
  std::string row = corpus_file("fuzz_trace", "regression-nested-value.jsonl");
  const auto open = row.find('['), close = row.rfind(']');
  ASSERT_NE(open, std::string::npos);
  row = row.substr(0, open) + std::string(100000, '[') + std::string(100000, ']') +
        row.substr(close + 1);
  const std::string f = write("nested.jsonl", row);
  TraceSpec spec;
  spec.path = f;
  const std::string m = error_of<InputError>([&] { validate_trace(spec); });
  EXPECT_TRUE(has(m, f + ":1: \"arrival_s\" is a list ([...]); expected a number >= 0")) << m;
}

}  // namespace
// ---- fuzz_sweep: a malformed YAML text that yaml-cpp 0.7's LoadAll never finishes -----------

// fuzz_sweep found (a 10 s timeout): parse_yaml read every document with YAML::LoadAll to refuse a
// second one, and on this text (comment lines, then a line yaml-cpp reads as a new document)
// LoadAll kept building documents without end. The documents are now counted by the event
// parser, two at most: the text ends in a clean InputError naming its place.
TEST(Regression, MalformedFlowMapEndsInASyntaxError) {
  const std::string input = corpus_file("fuzz_sweep", "regression-loadall-endless");
  const std::string m = error_of<InputError>([&] { parse_yaml(input, "sweep.yaml"); });
  EXPECT_TRUE(has(m, "sweep.yaml:")) << m;
}

}  // namespace regression_test
}  // namespace kappasim
