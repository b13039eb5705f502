// End-to-end tests of `kappasim validate`: a synthetic rows folder over a cheap command (probe
// gemm), --check's exit code, and bad rows (exit 2, file:line, nothing written).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace validate_test {
namespace {

namespace fs = std::filesystem;
using kappasim::test::Result;
using kappasim::test::slurp;

fs::path scratch() {
  static const fs::path d = kappasim::test::fresh_dir("validate-cli");
  return d;
}

Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A rows folder with one row: an 8192^3 BF16 GEMM on the h100 preset. By hand: 1.1e12 FLOP at
// 0.78 × 989 TFLOP/s × wave efficiency 4096 tiles / (32 waves × 132 SMs) = 0.9697 → 747.9
// TFLOP/s less the 2 µs launch ≈ 747 TFLOP/s. Measured is set to 747 so the ratio is ≈ 1.
fs::path rows_dir(const std::string& name, const std::string& band, const std::string& extra = "") {
  const fs::path d = scratch() / name;
  fs::create_directories(d);
  std::ofstream(d / "rows.yaml")
      << "- id: gemm-8192\n"
         "  area: compute\n"
         "  source: \"hand value\"\n"
         "  setup: \"H100 BF16 8192^3\"\n"
         "  measured: 747\n"
         "  unit: TFLOP/s\n"
         "  command: [probe, gemm, --system, h100, --m, \"8192\", --format, json]\n"
         "  value: /0/achieved_flops\n"
         "  band: "
      << band
      << "\n"
         "  band_why: \"hand\"\n"
         "  gap: \"none\"\n"
      << extra;
  return d;
}

TEST(Validate, WritesTheTableAndCheckHoldsTheBand) {
  const fs::path d = rows_dir("ok", "[0.99, 1.01]");
  const fs::path out = scratch() / "ok.md";
  Result r = run("validate --dir " + d.string() + " --out " + out.string() + " --check");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = slurp(out);
  EXPECT_TRUE(has(md, "| gemm-8192 | hand value | H100 BF16 8192^3 | 747 TFLOP/s |")) << md;
  EXPECT_TRUE(has(md, "| in |")) << md;
  // The same band made impossible: --check exits 1, the table is still written.
  const fs::path d2 = rows_dir("out", "[1.5, 2.0]");
  const fs::path out2 = scratch() / "out.md";
  r = run("validate --dir " + d2.string() + " --out " + out2.string() + " --check");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "row 'gemm-8192': ratio")) << r.err;
  EXPECT_TRUE(has(slurp(out2), "**out**"));
  // Without --check the same run succeeds.
  EXPECT_EQ(run("validate --dir " + d2.string() + " --out " + out2.string()).code, 0);
}

// --area keeps the rows of the areas named: the compute row above with its band made impossible
// is not run (nor failed) under --area link, and is under --area compute,link; an unknown area
// exits 2 naming it, writing nothing.
TEST(Validate, AreaKeepsOnlyTheNamedAreasRows) {
  const fs::path d = rows_dir("area", "[1.5, 2.0]");
  const fs::path out = scratch() / "area.md";
  Result r =
      run("validate --dir " + d.string() + " --area link --out " + out.string() + " --check");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(has(slurp(out), "gemm-8192"));
  r = run("validate --dir " + d.string() + " --area compute,link --out " + out.string() +
          " --check");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(slurp(out), "gemm-8192"));
  const fs::path none = scratch() / "area-bad.md";
  r = run("validate --dir " + d.string() + " --area links --out " + none.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "--area: 'links' is not one of link, compute, serving")) << r.err;
  EXPECT_FALSE(fs::exists(none));
}

// known_gap: true is strict both ways: a row outside its band passes --check (the mechanism in
// its gap is known to be missing), the same row back inside its band fails it (stale flag).
TEST(Validate, KnownGapRowsAreHeldTheOtherWayRound) {
  const fs::path out = scratch() / "known.md";
  fs::path d = rows_dir("known-out", "[1.5, 2.0]\n  known_gap: true");
  Result r = run("validate --dir " + d.string() + " --out " + out.string() + " --check");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(slurp(out), "**out** (known gap)")) << slurp(out);
  d = rows_dir("known-in", "[0.99, 1.01]\n  known_gap: true");
  r = run("validate --dir " + d.string() + " --out " + out.string() + " --check");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.err, "drop the flag")) << r.err;
  d = rows_dir("known-bad", "[0.99, 1.01]\n  known_gap: maybe");
  r = run("validate --dir " + d.string() + " --out " + out.string() + " --check");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "known_gap: expected true or false")) << r.err;
}

// baseline: a ratio row (command's value / baseline's value at the same pointer, unit 1): the
// GEMM over itself is exactly 1; a baseline with a unit other than 1 is bad input.
TEST(Validate, ABaselineRowIsTheRatioOfTwoCommands) {
  const fs::path d = scratch() / "ratio";
  fs::create_directories(d);
  const std::string gemm = "[probe, gemm, --system, h100, --m, \"8192\", --format, json]";
  const std::string row =
      "- id: gemm-ratio\n  area: compute\n  source: \"hand value\"\n"
      "  setup: \"the same GEMM twice\"\n  measured: 1\n  unit: UNIT\n"
      "  command: " +
      gemm + "\n  baseline: " + gemm +
      "\n  value: /0/achieved_flops\n  band: [0.999, 1.001]\n"
      "  band_why: \"hand\"\n  gap: \"none\"\n";
  std::string ok = row;
  ok.replace(ok.find("UNIT"), 4, "1");
  std::ofstream(d / "rows.yaml") << ok;
  const fs::path out = scratch() / "ratio.md";
  Result r = run("validate --dir " + d.string() + " --out " + out.string() + " --check");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(slurp(out), "| 1 1 | 1 1 | 1.000 |")) << slurp(out);
  EXPECT_TRUE(has(slurp(out), "- divided by the baseline: `kappasim probe gemm")) << slurp(out);
  std::string bad = row;
  bad.replace(bad.find("UNIT"), 4, "TFLOP/s");
  std::ofstream(d / "rows.yaml") << bad;
  r = run("validate --dir " + d.string() + " --out " + (scratch() / "ratio-bad.md").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(has(r.err, "a row with a baseline is a ratio")) << r.err;
}

TEST(Validate, BadRowsExitTwoNamingFileAndLineAndWriteNothing) {
  const fs::path out = scratch() / "bad.md";
  // Unknown field on line 12 (the second row's first line is 12).
  fs::path d = rows_dir("unknown", "[0.5, 2]", "- id: other\n  colour: red\n");
  Result r = run("validate --dir " + d.string() + " --out " + out.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, (d / "rows.yaml").string() + ":13")) << r.err;
  EXPECT_TRUE(has(r.err, "unknown field 'colour'")) << r.err;
  EXPECT_FALSE(fs::exists(out));
  // A pointer that leads nowhere.
  d = rows_dir("pointer", "[0.5, 2]");
  {
    std::string t = slurp(d / "rows.yaml");
    t.replace(t.find("/0/achieved_flops"), 17, "/0/no_such_field");
    std::ofstream(d / "rows.yaml") << t;
  }
  r = run("validate --dir " + d.string() + " --out " + out.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, (d / "rows.yaml").string() + ":1")) << r.err;
  EXPECT_TRUE(has(r.err, "'/0/no_such_field' does not exist")) << r.err;
  EXPECT_FALSE(fs::exists(out));
  // A command that fails (unknown system).
  d = rows_dir("failing", "[0.5, 2]");
  {
    std::string t = slurp(d / "rows.yaml");
    t.replace(t.find("--system, h100"), 14, "--system, h999");
    std::ofstream(d / "rows.yaml") << t;
  }
  r = run("validate --dir " + d.string() + " --out " + out.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "failed with exit code 2")) << r.err;
  EXPECT_FALSE(fs::exists(out));
  // No folder.
  r = run("validate --dir " + (scratch() / "nowhere").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--dir")) << r.err;
}

}  // namespace
}  // namespace validate_test
