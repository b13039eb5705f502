// `kappasim design emit` end to end: an emitted split is accepted by `run` and `measure` through
// --preset-dir; bad budgets, fractions, infeasible splits and unknown names exit 2 with a message
// naming the option, and write nothing.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace design_cli_test {
namespace {

namespace fs = std::filesystem;
using kappasim::test::Result;
using kappasim::test::slurp;

fs::path scratch() {
  static const fs::path d = kappasim::test::fresh_dir("design-cli");
  return d;
}

Result run(const std::string& args) {
  return kappasim::test::run_shell(KAPPASIM_BIN, args, scratch() / "stderr.txt");
}

TEST(DesignCli, EmittedPresetsRunAndMeasure) {
  const fs::path dir = scratch() / "presets";
  const Result e =
      run("design emit --budget power --link-fraction 0.1 --host gb200 --name dz --out " +
          dir.string());
  ASSERT_EQ(e.code, 0) << e.err;
  ASSERT_TRUE(fs::exists(dir / "gpus" / "dz.yaml"));
  ASSERT_TRUE(fs::exists(dir / "systems" / "dz-gb200.yaml"));
  ASSERT_TRUE(fs::exists(dir / "serving" / "dz.kv_buffer.yaml"));
  // The GPU preset alone on stdout without --out.
  const Result s = run("design emit --budget power --link-fraction 0.1");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("peak_flops"), std::string::npos);
  EXPECT_NE(s.out.find("derived:"), std::string::npos);
  // `presets show` reads it like a built-in; `measure kappa-crit` simulates on it.
  const Result show = run("presets show system/dz-gb200 --preset-dir " + dir.string());
  EXPECT_EQ(show.code, 0) << show.err;
  const Result m = run(
      "measure kappa-crit --model llama-3.1-70b --system dz-gb200 --tp 8 --points 5 --preset-dir " +
      dir.string());
  EXPECT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("kappa_crit"), std::string::npos);
}

TEST(DesignCli, BadBudgetsAndFractionsExit2AndWriteNothing) {
  const fs::path out = scratch() / "bad";
  const char* cases[][2] = {
      {"--budget volume --link-fraction 0.1", "--budget: expected area or power"},
      {"--budget area", "--link-fraction: required"},
      {"--budget area --link-fraction=-0.1", "--link-fraction: expected a fraction"},
      {"--budget area --link-fraction 1.5", "--link-fraction: expected a fraction"},
      {"--budget area --link-fraction 0.6 --sram-fraction 0.5", "add up to 1.1"},
      {"--budget area --link-fraction 0 --sram-fraction 0.1",
       "--link-fraction: must be greater than 0"},
      {"--budget area --link-fraction 0.4 --sram-fraction 0.6", "compute gets nothing"},
      // 0.5 of the movable area of PHY draws ~520 W on top of the compute: over 700 W
      {"--budget area --link-fraction 0.5", "more than the power budget of 700 W"},
      {"--budget area --link-fraction 0.01 --coefficients h200-4n",
       "--coefficients: unknown design preset"},
      {"--budget area --link-fraction 0.01 --base h100-sxm",
       "--base: unknown gpu preset 'h100-sxm' (did you mean 'h100-sxm5'?)"},
      {"--budget area --link-fraction 0.01 --host dgx-h10", "--host: unknown system preset"},
      {"--budget area --link-fraction 0.01 --host gb200 --gpus 0", "--gpus: must be at least 1"},
      {"--budget area --link-fraction 0.01 --host gh200",
       "--host: system 'gh200' has no PCIe host link to replace"},
  };
  for (const auto& c : cases) {
    const Result r = run(std::string("design emit ") + c[0] + " --out " + out.string());
    EXPECT_EQ(r.code, 2) << c[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c[1]), std::string::npos) << c[0] << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << c[0] << " wrote " << out;
  }
  EXPECT_EQ(run("design frobnicate").code, 2);
}

}  // namespace
}  // namespace design_cli_test
