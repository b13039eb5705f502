// `kappasim --version` prints the version declared once, in project(VERSION) of the top-level
// CMakeLists.txt (issue 13 item 6): the test reads that line itself, not the generated header.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/cli/cli_util.hpp"

namespace {

TEST(Version, CliPrintsTheProjectVersionFromCMakeLists) {
  const std::string cmake =
      kappasim::test::slurp(std::string(KAPPASIM_SOURCE_DIR) + "/CMakeLists.txt");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      cmake, m, std::regex(R"(project\(kappasim VERSION ([0-9]+\.[0-9]+\.[0-9]+))")))
      << "no project(kappasim VERSION x.y.z) in CMakeLists.txt";
  const auto dir = kappasim::test::fresh_dir("version");
  kappasim::test::Result r =
      kappasim::test::run_shell(KAPPASIM_BIN, "--version", dir / "stderr.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "kappasim " + m[1].str() + "\n");
}

}  // namespace
