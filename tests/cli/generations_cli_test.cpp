// Issue 25 on the command line: a PCIe-only system named with --system and a TP query exits 2
// naming system.gpu.nvlink_bandwidth; with every built-in system (no --system) the PCIe-only
// ones are skipped with a note on stderr; a model name between two presets names both.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_util.hpp"

namespace kappasim {
namespace {

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(GenerationsCli, KappaNoLinkNamedRefusedImplicitSkipped) {
  const auto dir = test::fresh_dir("generations");
  auto kappasim = [&](const std::string& args) {
    return test::run_shell(KAPPASIM_BIN, args, dir / "stderr.txt");
  };
  // Named with -s: exit 2 naming the key, nothing on stdout.
  const test::Result named = kappasim("kappa -m llama-3.1-70b -s l40s --tp 2");
  EXPECT_EQ(named.code, 2);
  EXPECT_TRUE(has(named.err, "system.gpu.nvlink_bandwidth: tp 2 needs a GPU-GPU link"))
      << named.err;
  EXPECT_EQ(named.out, "");
  // Every built-in system (no -s): the PCIe-only ones are left out with a note, the rest run.
  const test::Result all = kappasim("kappa -m llama-3.1-70b --tp 8 --format csv");
  EXPECT_EQ(all.code, 0) << all.err;
  EXPECT_TRUE(has(all.err, "'l40s', 'rtx-pro-6000', 'rubin-cpx'")) << all.err;
  EXPECT_FALSE(has(all.out, ",l40s,")) << "a skipped system has no row";
  EXPECT_TRUE(has(all.out, ",h20,")) << "a system with NVLink keeps its row";
  // At TP 1 nothing is skipped and no note is written.
  const test::Result tp1 = kappasim("kappa -m llama-3.1-70b --format csv");
  EXPECT_EQ(tp1.code, 0);
  EXPECT_TRUE(has(tp1.out, ",l40s,"));
  EXPECT_FALSE(has(tp1.err, "skipped"));
  // A model name between two presets names both.
  const test::Result typo = kappasim("kappa -m llama-3.1-7b -s h100");
  EXPECT_EQ(typo.code, 2);
  EXPECT_TRUE(has(typo.err, "did you mean 'llama-3.1-70b' or 'llama-3.1-8b'?")) << typo.err;
}

}  // namespace
}  // namespace kappasim
