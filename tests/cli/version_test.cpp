// `kappasim --version` prints the version declared once, in project(VERSION) of the top-level
// CMakeLists.txt (issue 13 item 6): the test reads that line itself, not the generated header.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_util.hpp"

namespace version_test {
namespace {

TEST(Version, CliPrintsTheProjectVersionFromCMakeLists) {
  const std::string cmake =
      kappasim::test::slurp(std::string(KAPPASIM_SOURCE_DIR) + "/CMakeLists.txt");
  // No std::regex: GCC 12 warns (maybe-uninitialized) inside <regex> in the Asan build.
  const std::string key = "project(kappasim VERSION ";
  const auto at = cmake.find(key);
  ASSERT_NE(at, std::string::npos) << "no project(kappasim VERSION x.y.z) in CMakeLists.txt";
  const auto begin = at + key.size();
  const std::string version =
      cmake.substr(begin, cmake.find_first_not_of("0123456789.", begin) - begin);
  ASSERT_FALSE(version.empty());
  const auto dir = kappasim::test::fresh_dir("version");
  kappasim::test::Result r =
      kappasim::test::run_shell(KAPPASIM_BIN, "--version", dir / "stderr.txt");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "kappasim " + version + "\n");
}

}  // namespace
}  // namespace version_test
